import { strict as assert } from 'node:assert';
import { AUTH_CACHE_MS } from '../../src/features/api-keys/testing';
import { ApiKeysService } from '../../src/features/api-keys';
import { DAY_MS } from '../../src/shared/clock';
import { TEST_DIALECT } from '../helpers/database';
import { basic, createHarness, expectError, Harness, TestUser } from '../helpers/harness';

describe(`API keys (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  let auth: string;

  const create = (body: object, who = auth) => h.request.post('/api/v1/api-keys').set('Authorization', who).send(body);
  const action = (id: string, verb: 'activate' | 'deactivate', who = auth) => h.request.post(`/api/v1/api-keys/${id}/${verb}`).set('Authorization', who);

  beforeEach(async () => {
    h = await createHarness();
    u = await h.user(); // holds one active key already
    auth = basic(u.email, u.password);
  });
  afterEach(() => h.close());

  describe('state table', () => {
    it('(none) -> active: POST with fewer than 2 active keys gives 201 and the full key once', async () => {
      const res = await create({ name: 'second', description: 'for CI', active: true });
      assert.equal(res.status, 201);
      assert.equal(res.body.active, true);
      assert.match(res.body.apiKey, /^vmk_[A-Za-z0-9_-]{43}$/);
      assert.equal(res.body.apiKeyHidden.slice(-3), res.body.apiKey.slice(-3));
      assert.match(res.body.apiKeyHidden, /^\*+.{3}$/);
      assert.equal(res.body.apiKeyHidden.length, res.body.apiKey.length);
      const again = await h.request.get(`/api/v1/api-keys/${res.body.id}`).set('Authorization', auth);
      assert.equal(again.status, 200);
      assert.equal(again.body.apiKey, undefined, 'the full key is shown only once');
      // the new key authenticates
      assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', res.body.apiKey)).status, 200);
    });

    it('(none) -> 409 MAXIMUM_AMOUNT_OF_ACTIVE_API_KEYS_REACHED: POST active with 2 active keys', async () => {
      assert.equal((await create({ name: 'second', active: true })).status, 201);
      expectError(await create({ name: 'third', active: true }), 409, 'MAXIMUM_AMOUNT_OF_ACTIVE_API_KEYS_REACHED');
    });

    it('(none) -> inactive: POST inactive with 2 active keys is allowed', async () => {
      await create({ name: 'second', active: true });
      const res = await create({ name: 'spare', active: false });
      assert.equal(res.status, 201);
      assert.equal(res.body.active, false);
    });

    it('active -> inactive: deactivate gives 200 and the key stops authenticating', async () => {
      const res = await action(u.apiKeyId, 'deactivate');
      assert.equal(res.status, 200);
      assert.equal(res.body.active, false);
      expectError(await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey), 401, 'INVALID_API_KEY');
    });

    it('inactive -> inactive: deactivate again has no effect and gives 200', async () => {
      await action(u.apiKeyId, 'deactivate');
      const before = (await h.request.get(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth)).body;
      const res = await action(u.apiKeyId, 'deactivate');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, before);
    });

    it('inactive -> active: activate with fewer than 2 active keys gives 200', async () => {
      await action(u.apiKeyId, 'deactivate');
      const res = await action(u.apiKeyId, 'activate');
      assert.equal(res.status, 200);
      assert.equal(res.body.active, true);
      assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey)).status, 200);
    });

    it('inactive -> 409: activate with 2 active keys gives MAXIMUM_AMOUNT_OF_ACTIVE_API_KEYS_REACHED', async () => {
      const spare = await create({ name: 'spare', active: false });
      await create({ name: 'second', active: true });
      expectError(await action(spare.body.id, 'activate'), 409, 'MAXIMUM_AMOUNT_OF_ACTIVE_API_KEYS_REACHED');
    });

    it('active -> active: activate again has no effect', async () => {
      await create({ name: 'second', active: true });
      const res = await action(u.apiKeyId, 'activate'); // 2 active, but this one is already active
      assert.equal(res.status, 200);
      assert.equal(res.body.active, true);
    });

    it('inactive -> deleted: DELETE gives 204', async () => {
      await action(u.apiKeyId, 'deactivate');
      const res = await h.request.delete(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth);
      assert.equal(res.status, 204);
      expectError(await h.request.get(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth), 404, 'RESOURCE_NOT_FOUND');
    });

    it('active -> 409 ACTIVE_API_KEY_CANNOT_BE_DELETED: DELETE of an active key', async () => {
      expectError(await h.request.delete(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth), 409, 'ACTIVE_API_KEY_CANNOT_BE_DELETED');
      assert.equal((await h.request.get(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth)).body.active, true);
    });

    it('any -> eligible for deletion after 90 days without use; a use resets the window', async () => {
      const created = (await h.request.get(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth)).body;
      const createdDay = new Date(created.createdAt);
      assert.equal(created.deletionEligibleAt, new Date(createdDay.getTime() + 90 * DAY_MS).toISOString().slice(0, 10));

      h.clock.advance(30 * DAY_MS);
      assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey)).status, 200);
      const used = (await h.request.get(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth)).body;
      assert.equal(used.deletionEligibleAt, new Date(h.clock.now().getTime() + 90 * DAY_MS).toISOString().slice(0, 10));

      // 89 days after the use: not yet deleted; 90 days: the sweep deletes it
      h.clock.advance(89 * DAY_MS);
      assert.equal(await h.services.apiKeys.sweepIdleKeys(), 0);
      h.clock.advance(1 * DAY_MS);
      assert.equal(await h.services.apiKeys.sweepIdleKeys(), 1);
      expectError(await h.request.get(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth), 404, 'RESOURCE_NOT_FOUND');
    });

    it('an unused key becomes eligible 90 days after creation and is swept then, active or not', async () => {
      const spare = (await create({ name: 'spare', active: false })).body;
      h.clock.advance(90 * DAY_MS);
      assert.equal(await h.services.apiKeys.sweepIdleKeys(), 2);
      expectError(await h.request.get(`/api/v1/api-keys/${spare.id}`).set('Authorization', auth), 404, 'RESOURCE_NOT_FOUND');
    });
  });

  it('the 2-active-keys rule holds when creates race: only the available slot is taken', async () => {
    const results = await Promise.all([1, 2, 3, 4, 5].map((i) => create({ name: `race ${i}`, active: true })));
    assert.equal(results.filter((r) => r.status === 201).length, 1);
    for (const r of results.filter((r) => r.status !== 201)) expectError(r, 409, 'MAXIMUM_AMOUNT_OF_ACTIVE_API_KEYS_REACHED');
    const list = await h.request.get('/api/v1/api-keys?pageSize=100').set('Authorization', auth);
    assert.equal(list.body.items.filter((k: any) => k.active).length, 2);
  });

  it('the 2-active-keys rule holds when activations race', async () => {
    await action(u.apiKeyId, 'deactivate');
    const spares = await Promise.all([1, 2, 3, 4].map((i) => create({ name: `spare ${i}`, active: false })));
    const results = await Promise.all(spares.map((s) => action(s.body.id, 'activate')));
    assert.equal(results.filter((r) => r.status === 200).length, 2);
    const list = await h.request.get('/api/v1/api-keys?pageSize=100').set('Authorization', auth);
    assert.equal(list.body.items.filter((k: any) => k.active).length, 2);
  });

  it('patch changes name and description only', async () => {
    const res = await h.request.patch(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth).send({ name: 'renamed', description: 'why' });
    assert.equal(res.status, 200);
    assert.equal(res.body.name, 'renamed');
    assert.equal(res.body.description, 'why');
    const bad = await h.request.patch(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth).send({ active: false });
    expectError(bad, 400, 'VALIDATION_ERROR');
    expectError(await h.request.patch(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth).send({}), 400, 'VALIDATION_ERROR');
  });

  it("lists only the caller's keys, paged and sorted", async () => {
    h.clock.advance(1000);
    await create({ name: 'b', active: false });
    h.clock.advance(1000);
    await create({ name: 'c', active: false });
    const other = await h.user();
    const page = await h.request.get('/api/v1/api-keys?pageSize=2&pageNumber=0&sortDirection=DESC').set('Authorization', auth);
    assert.equal(page.status, 200);
    assert.equal(page.body.totalElements, 3);
    assert.equal(page.body.totalPages, 2);
    assert.equal(page.body.numberOfElements, 2);
    assert.equal(page.body.items[0].name, 'c');
    const second = await h.request.get('/api/v1/api-keys?pageSize=2&pageNumber=1&sortDirection=DESC').set('Authorization', auth);
    assert.deepEqual(
      second.body.items.map((k: any) => k.id),
      [u.apiKeyId],
    );
    expectError(await h.request.get(`/api/v1/api-keys/${other.apiKeyId}`).set('Authorization', auth), 404, 'RESOURCE_NOT_FOUND');
    expectError(await h.request.post(`/api/v1/api-keys/${other.apiKeyId}/deactivate`).set('Authorization', auth), 404, 'RESOURCE_NOT_FOUND');
  });

  it('key management has no per-key rate limit and carries no X-RateLimit headers (sign-ins have their own limits)', async () => {
    const res = await h.request.get('/api/v1/api-keys').set('Authorization', auth);
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-ratelimit-limit'], undefined);
  });

  it('a successful use is recorded at most once a day (no write on every request)', async () => {
    const writes: string[] = [];
    h.database.db.on('query', (q: { sql: string }) => {
      if (/^update/i.test(q.sql) && q.sql.includes('api_keys')) writes.push(q.sql);
    });
    for (let i = 0; i < 5; i++) assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey)).status, 200);
    h.clock.advance(DAY_MS);
    for (let i = 0; i < 5; i++) assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey)).status, 200);
    assert.equal(writes.length, 2);
  });

  it('the cached fast path still records the first use of a new UTC day, even within AUTH_CACHE_MS', async () => {
    const writes: string[] = [];
    h.database.db.on('query', (q: { sql: string }) => {
      if (/^update/i.test(q.sql) && q.sql.includes('api_keys')) writes.push(q.sql);
    });
    const midnight = Date.parse(h.clock.now().toISOString().slice(0, 10) + 'T00:00:00.000Z') + DAY_MS;
    h.clock.set(new Date(midnight - 1000));
    assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey)).status, 200);
    assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey)).status, 200);
    const before = writes.length;
    h.clock.set(new Date(midnight)); // 1 s later: the lookup is still cached, the day is new
    assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey)).status, 200);
    assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey)).status, 200);
    assert.equal(writes.length, before + 1);
    const key = await h.request.get(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', auth);
    assert.equal(key.body.deletionEligibleAt, new Date(midnight + 90 * DAY_MS).toISOString().slice(0, 10));
  });

  it('another process sees a deactivation within AUTH_CACHE_MS (the lookup cache of each process)', async () => {
    const otherProcess = new ApiKeysService({ db: h.database.db, clock: h.clock });
    assert.deepEqual(await otherProcess.authenticate(u.apiKey), { userId: u.userId, apiKeyId: u.apiKeyId });
    assert.equal((await action(u.apiKeyId, 'deactivate')).status, 200);
    // this process forgot the key at once
    expectError(await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey), 401, 'INVALID_API_KEY');
    // the other still has it cached, until the cache time has passed
    await otherProcess.authenticate(u.apiKey);
    h.clock.advance(AUTH_CACHE_MS);
    await assert.rejects(otherProcess.authenticate(u.apiKey), /invalid or inactive/);
  });
});
