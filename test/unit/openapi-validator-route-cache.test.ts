// test-databases: one
// (SQLite only: its subject is the validator's route lookup.)
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadContract } from '../../src/composition';
import { installOpenApiValidatorRouteCache, routeCacheHits, validatorPathToRegexpModule } from '../../src/http/openapi-validator-route-cache';
import { createHarness } from '../helpers/harness';

describe('openapi-validator-route-cache (run-time patch of express-openapi-validator route lookup)', () => {
  const original = (validatorPathToRegexpModule() as any)[Symbol.for('vidmill.routeRegexpCache')] ?? validatorPathToRegexpModule().pathToRegexp;
  // The validator's express form of every path of the contract: /api prefix, {x} -> :x.
  const routes = Object.keys(loadContract().paths).map((p) => '/api' + p.replace(/\{([^}]+)\}/g, ':$1'));

  before(() => installOpenApiValidatorRouteCache());

  it('the internals it relies on are still there (fails when an upgrade of express-openapi-validator or path-to-regexp breaks the patch)', () => {
    // The validator's own path-to-regexp: a module object with a pathToRegexp function returning { regexp, keys }.
    assert.equal(typeof original, 'function', 'path-to-regexp (as express-openapi-validator loads it) has no pathToRegexp function');
    const compiled = original('/api/v1/projects/:projectId', { sensitive: false, strict: false });
    assert.ok(compiled.regexp instanceof RegExp, 'pathToRegexp no longer returns { regexp }');
    assert.deepEqual(
      (compiled.keys as { name: string }[]).map((k) => k.name),
      ['projectId'],
      'pathToRegexp no longer returns { keys: [{ name }] }',
    );
    // lookupRoute calls it through the module object on every request (the hits test below proves it in the app).
    const metadata = readFileSync(path.join(path.dirname(require.resolve('express-openapi-validator')), 'middlewares', 'openapi.metadata.js'), 'utf8');
    assert.match(metadata, /\(0, path_to_regexp_1\.pathToRegexp\)\(expressRoute, pathOpts\)/, "express-openapi-validator's lookupRoute no longer calls pathToRegexp through the module object");
    // The patch took effect.
    assert.notEqual(validatorPathToRegexpModule().pathToRegexp, original, 'not installed');
  });

  it('gives, for every route of the contract, the regexp and keys a fresh compilation gives', () => {
    const cached = validatorPathToRegexpModule().pathToRegexp;
    assert.notEqual(cached, original, 'installed');
    for (const route of routes) {
      for (const options of [
        { sensitive: false, strict: false },
        { sensitive: true, strict: false },
        { sensitive: false, strict: true },
      ]) {
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
      const before = routeCacheHits();
      assert.equal((await h.request.get('/api/v1/webhooks/public-keys/jwks').set('X-API-Key', u.apiKey)).status, 200);
      // every route walked before the match, and the match, came from the cache
      assert.ok(routeCacheHits() - before > 10, `${routeCacheHits() - before} hits`);
    } finally {
      await h.close();
    }
  });

  it('installing twice keeps one cache', () => {
    const first = validatorPathToRegexpModule().pathToRegexp;
    installOpenApiValidatorRouteCache();
    assert.equal(validatorPathToRegexpModule().pathToRegexp, first);
  });
});
