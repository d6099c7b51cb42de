import { strict as assert } from 'node:assert';
import { TEST_DIALECT } from '../helpers/database';
import { basic, createHarness, expectError, Harness, TestUser } from '../helpers/harness';

describe(`Rate limits (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  beforeEach(async () => {
    h = await createHarness({ rateLimitPerMinute: 5 });
    u = await h.user();
  });
  afterEach(() => h.close());

  it('every rate-limited operation carries X-RateLimit-Limit/Remaining/Reset', async () => {
    const res = await h.request.get('/api/v1/projects').set('X-API-Key', u.apiKey);
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-ratelimit-limit'], '5');
    assert.equal(res.headers['x-ratelimit-remaining'], '4');
    const reset = Number(res.headers['x-ratelimit-reset']);
    assert.ok(reset > 0 && reset <= 60, `reset ${reset}`);
    // error answers of rate-limited operations carry them too
    const bad = await h.request.get('/api/v1/projects?pageSize=0').set('X-API-Key', u.apiKey);
    expectError(bad, 400, 'VALIDATION_ERROR');
    assert.equal(bad.headers['x-ratelimit-remaining'], '3');
  });

  it('a bad body is counted and answered with the headers; without credentials it is 401, uncounted', async () => {
    const h2 = await createHarness({ rateLimitPerMinute: 5, bodyLimitBytes: 1024 });
    try {
      const user = await h2.user();
      const post = () => h2.request.post('/api/v1/projects').set('X-API-Key', user.apiKey);
      const answers = [
        [await post().set('Content-Type', 'application/json').send('{"name": '), 400, 'INVALID_REQUEST_BODY'],
        [await post().send({ name: 'x'.repeat(2000) }), 413, 'PAYLOAD_TOO_LARGE'],
        [await post().set('Content-Type', 'application/json').set('Content-Encoding', 'x-unknown').send('{}'), 415, 'UNSUPPORTED_CONTENT_ENCODING'],
        [await post().set('Content-Type', 'text/plain').send('name'), 415, 'UNSUPPORTED_CONTENT_TYPE'],
      ] as const;
      answers.forEach(([res, status, code], i) => {
        expectError(res, status, code);
        assert.equal(res.headers['x-ratelimit-remaining'], String(4 - i), `${code}: counted`);
      });
      const anonymous = await h2.request.post('/api/v1/projects').set('Content-Type', 'application/json').send('{"name": ');
      expectError(anonymous, 401, 'MISSING_API_KEY');
      assert.equal(anonymous.headers['x-ratelimit-limit'], undefined);
    } finally {
      await h2.close();
    }
  });

  it('over the limit: 429 TOO_MANY_REQUESTS with Retry-After', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey)).status, 200);
    const res = await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey);
    expectError(res, 429, 'TOO_MANY_REQUESTS');
    assert.equal(res.headers['x-ratelimit-remaining'], '0');
    const retryAfter = Number(res.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  });

  it('the budget is per API key', async () => {
    for (let i = 0; i < 6; i++) await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey);
    const other = await h.user();
    assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', other.apiKey)).status, 200);
  });

  it('API key management has no per-key budget and no X-RateLimit headers (it has the sign-in limits instead)', async () => {
    for (let i = 0; i < 7; i++) {
      const res = await h.request.get('/api/v1/api-keys').set('Authorization', basic(u.email, u.password));
      assert.equal(res.status, 200);
      assert.equal(res.headers['x-ratelimit-limit'], undefined);
    }
  });

  (TEST_DIALECT === 'postgres' ? it : it.skip)('two API processes on one PostgreSQL database share one budget', async () => {
    const second = h.anotherProcess().request;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const app = i % 2 === 0 ? h.request : second;
      statuses.push((await app.get('/api/v1/account').set('X-API-Key', u.apiKey)).status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
  });

  it('PostgreSQL: the shared budgets are an unlogged table (no WAL flush per counted request; a crash or failover starts the minute afresh)', async function () {
    if (TEST_DIALECT !== 'postgres') return this.skip();
    const row = await h.database.db.raw("select relpersistence from pg_class where relname = 'rate_limits'");
    assert.equal(row.rows[0].relpersistence, 'u');
  });
});
