import { strict as assert } from 'node:assert';
import { loadContract } from '../../src/composition';
import { cacheRouteRegexps, routeRegexpCacheHits, validatorPathToRegexpModule } from '../../src/http/route-regexp-cache';
import { createHarness } from '../helpers/harness';

describe('route regexp cache (express-openapi-validator route lookup)', () => {
  const original = (validatorPathToRegexpModule() as any)[Symbol.for('vidmill.routeRegexpCache')] ?? validatorPathToRegexpModule().pathToRegexp;
  // The validator's express form of every path of the contract: /api prefix, {x} -> :x.
  const routes = Object.keys(loadContract().paths).map((p) => '/api' + p.replace(/\{([^}]+)\}/g, ':$1'));

  before(() => cacheRouteRegexps());

  it('gives, for every route of the contract, the regexp and keys a fresh compilation gives', () => {
    const cached = validatorPathToRegexpModule().pathToRegexp;
    assert.notEqual(cached, original, 'installed');
    for (const route of routes) {
      for (const options of [{ sensitive: false, strict: false }, { sensitive: true, strict: false }, { sensitive: false, strict: true }]) {
        const a = cached(route, options);
        const b = original(route, options);
        assert.equal(a.regexp.source, b.regexp.source, route);
        assert.equal(a.regexp.flags, b.regexp.flags, route);
        assert.deepEqual(a.keys, b.keys, route);
        assert.ok(!a.regexp.global && !a.regexp.sticky, 'no state in a shared regexp');
        assert.equal(cached(route, options), a, 'compiled once');
        assert.ok(Object.isFrozen(a) && Object.isFrozen(a.keys));
      }
    }
  });

  it('case sensitivity is part of the key; other options go to path-to-regexp itself', () => {
    const cached = validatorPathToRegexpModule().pathToRegexp;
    assert.notEqual(cached('/api/v1/projects', { sensitive: true }), cached('/api/v1/projects', { sensitive: false }));
    assert.ok(cached('/api/v1/projects', { sensitive: true }).regexp.test('/api/v1/projects'));
    assert.ok(!cached('/api/v1/projects', { sensitive: true }).regexp.test('/API/v1/projects'));
    assert.ok(cached('/api/v1/projects', { sensitive: false }).regexp.test('/API/v1/projects'));
    const loose = cached('/api/v1/projects', { end: false });
    assert.ok(loose.regexp.test('/api/v1/projects/more'));
    assert.notEqual(cached('/api/v1/projects', { end: false }), loose, 'not cached');
  });

  it('the validator of the app compiles its routes through the cache', async () => {
    const h = await createHarness();
    try {
      const u = await h.user();
      // two lookups of the same route: at least the second one is answered from the cache
      for (let i = 0; i < 2; i++) assert.equal((await h.request.get('/api/v1/webhooks/public-keys/jwks').set('X-API-Key', u.apiKey)).status, 200);
      const before = routeRegexpCacheHits();
      assert.equal((await h.request.get('/api/v1/webhooks/public-keys/jwks').set('X-API-Key', u.apiKey)).status, 200);
      // every route walked before the match, and the match, came from the cache
      assert.ok(routeRegexpCacheHits() - before > 10, `${routeRegexpCacheHits() - before} hits`);
    } finally {
      await h.close();
    }
  });

  it('installing twice keeps one cache', () => {
    const first = validatorPathToRegexpModule().pathToRegexp;
    cacheRouteRegexps();
    assert.equal(validatorPathToRegexpModule().pathToRegexp, first);
  });
});
