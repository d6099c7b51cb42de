/**
 * The SDK's retries (sdk/src/retry.ts) against a scripted local server: which answers and
 * methods are retried, how long it waits (Retry-After, back-off), the Idempotency-Key of POSTs,
 * and the errors when retrying ends.
 */
import { strict as assert } from 'node:assert';
import { createVidmillClient, unwrap, VidmillApiError, VidmillNetworkError, type RetryEvent, type VidmillClientOptions } from '../../sdk/src';
import { backoffMs, retryAfterMs } from '../../sdk/src/retry';
import { LocalServer, startLocalServer } from './local-server';

const ERROR_503 = { status: 503, body: { errorCode: 'SERVICE_UNAVAILABLE', message: 'down' } };

describe('SDK retries', () => {
  let server: LocalServer;
  let waits: number[];
  let retries: RetryEvent[];
  const client = (opts: Partial<VidmillClientOptions> = {}) =>
    createVidmillClient({
      baseUrl: server.baseUrl,
      apiKey: 'key',
      ...opts,
      retry: {
        // the waits are recorded, not slept: the rules are about how long, not about sleeping
        sleep: async (ms) => void waits.push(ms),
        onRetry: (e) => void retries.push(e),
        random: () => 0.5,
        ...opts.retry,
      },
    });

  beforeEach(async () => {
    server = await startLocalServer();
    waits = [];
    retries = [];
  });
  afterEach(() => server.close());

  it('429 with Retry-After in seconds: waits at least that long, then the retry succeeds', async () => {
    server.script({ status: 429, headers: { 'Retry-After': '7' }, body: { errorCode: 'TOO_MANY_REQUESTS', message: 'slow down' } }, { status: 200, body: { id: 'a' } });
    const account = unwrap(await client().api.GET('/v1/account'));
    assert.deepEqual(account, { id: 'a' });
    assert.equal(server.seen.length, 2);
    assert.deepEqual(waits, [7000]);
    assert.deepEqual(
      retries.map((r) => [r.attempt, r.status]),
      [[1, 429]],
    );
  });

  it('Retry-After as an HTTP date is honoured too', async () => {
    const at = new Date(Date.now() + 12_000).toUTCString();
    server.script({ status: 503, headers: { 'Retry-After': at }, body: {} }, { status: 200 });
    await client().api.GET('/v1/account');
    assert.equal(waits.length, 1);
    assert.ok(waits[0]! > 9_000 && waits[0]! <= 12_000, `waited ${waits[0]}`);
    assert.ok(Math.abs(retryAfterMs(new Date(Date.now() + 5000).toUTCString())! - 5000) <= 1000);
    assert.equal(retryAfterMs('soon'), undefined);
  });

  it('a Retry-After longer than maxDelayMs is not waited for: the 429 is the answer', async () => {
    server.script({ status: 429, headers: { 'Retry-After': '3600' }, body: { errorCode: 'TOO_MANY_REQUESTS', message: 'later' } });
    const res = await client({ retry: { maxDelayMs: 60_000 } }).api.GET('/v1/account');
    assert.equal(res.response.status, 429);
    assert.equal(server.seen.length, 1);
    assert.deepEqual(waits, []);
  });

  it('502, 503 and 504 are retried with exponential back-off, up to `retries` (default 3) retries', async () => {
    server.script({ status: 502 }, ERROR_503, { status: 504 }, ERROR_503, { status: 200 });
    const res = await client({ retry: { baseDelayMs: 100 } }).api.GET('/v1/account');
    assert.equal(res.response.status, 503, 'the fourth answer, after 3 retries');
    assert.equal(server.seen.length, 4);
    // equal jitter with random 0.5: 3/4 of 100, 200, 400
    assert.deepEqual(waits, [75, 150, 300]);
    assert.throws(
      () => unwrap(res),
      (e: unknown) => e instanceof VidmillApiError && e.status === 503 && e.errorCode === 'SERVICE_UNAVAILABLE',
    );
  });

  it('the back-off never exceeds maxDelayMs and is jittered', () => {
    assert.equal(
      backoffMs(20, 500, 30_000, () => 0.999999),
      30_000,
    );
    assert.equal(
      backoffMs(1, 1000, 30_000, () => 0),
      500,
    );
    assert.equal(
      backoffMs(1, 1000, 30_000, () => 0.999999),
      1000,
    );
  });

  it('retries: 0 disables retrying', async () => {
    server.script(ERROR_503, { status: 200 });
    const res = await client({ retries: 0 }).api.GET('/v1/account');
    assert.equal(res.response.status, 503);
    assert.equal(server.seen.length, 1);
  });

  it('other errors (400, 404, 409 of a domain rule, 500) are not retried', async () => {
    for (const status of [400, 404, 409, 500]) {
      server.seen.length = 0;
      server.script({ status, body: { errorCode: `E${status}`, message: 'no' } });
      const res = await client().api.POST('/v1/projects', { body: { name: 'p' } });
      assert.equal(res.response.status, status);
      assert.equal(server.seen.length, 1, `${status} sent once`);
    }
  });

  it('PATCH is not retried (no Idempotency-Key for it)', async () => {
    server.script(ERROR_503, { status: 200 });
    const res = await client().api.PATCH('/v1/projects/{id}', { params: { path: { id: '3fa85f64-5717-4562-b3fc-2c963f66afa6' } }, body: { name: 'n' } });
    assert.equal(res.response.status, 503);
    assert.equal(server.seen.length, 1);
    assert.equal(server.seen[0]!.headers['idempotency-key'], undefined);
  });

  it('every POST carries a generated Idempotency-Key, the same on each attempt, with the body sent again', async () => {
    server.script(ERROR_503, { status: 429, headers: { 'Retry-After': '1' } }, { status: 201, body: { id: 'p' } });
    unwrap(await client().api.POST('/v1/projects', { body: { name: 'Resent' } }));
    assert.equal(server.seen.length, 3);
    const keys = server.seen.map((s) => s.headers['idempotency-key']);
    assert.match(String(keys[0]), /^[0-9a-f-]{36}$/);
    assert.deepEqual(new Set(keys).size, 1, 'one key for every attempt');
    assert.deepEqual(
      server.seen.map((s) => JSON.parse(s.body)),
      [{ name: 'Resent' }, { name: 'Resent' }, { name: 'Resent' }],
    );
    // a second POST is a new action: a new key
    unwrap(await client().api.POST('/v1/projects', { body: { name: 'Other' } }));
    assert.notEqual(server.seen[3]!.headers['idempotency-key'], keys[0]);
  });

  it("the caller's own Idempotency-Key is kept", async () => {
    server.script(ERROR_503, { status: 201 });
    await client().api.POST('/v1/projects', { body: { name: 'Mine' }, params: { header: { 'Idempotency-Key': 'my-key-1' } } });
    assert.deepEqual(
      server.seen.map((s) => s.headers['idempotency-key']),
      ['my-key-1', 'my-key-1'],
    );
  });

  it('409 IDEMPOTENCY_KEY_IN_USE (the first attempt still running) is retried', async () => {
    server.script({ status: 409, body: { errorCode: 'IDEMPOTENCY_KEY_IN_USE', message: 'running' } }, { status: 201, body: { id: 'p' } });
    assert.deepEqual(unwrap(await client().api.POST('/v1/projects', { body: { name: 'x' } })), { id: 'p' });
    assert.equal(server.seen.length, 2);
  });

  it('a network error is retried; after the last attempt it is a VidmillNetworkError with the cause', async () => {
    server.script({ drop: true }, { status: 200, body: { ok: 1 } });
    assert.deepEqual(unwrap(await client().api.GET('/v1/account')), { ok: 1 });
    assert.equal(retries[0]?.status, undefined);
    assert.ok(retries[0]?.error);

    server.seen.length = 0;
    server.script({ drop: true }, { drop: true }, { drop: true });
    await assert.rejects(
      client({ retries: 2 }).api.GET('/v1/account'),
      (e: unknown) => e instanceof VidmillNetworkError && e.attempts === 3 && e.method === 'GET' && e.cause instanceof Error && /\/api\/v1\/account/.test(e.message),
    );
    assert.equal(server.seen.length, 3);
    const closed = await startLocalServer();
    await closed.close();
    const refused = createVidmillClient({ baseUrl: closed.baseUrl, retries: 1, retry: { sleep: async () => undefined } });
    await assert.rejects(refused.api.GET('/v1/account'), (e: unknown) => e instanceof VidmillNetworkError && e.attempts === 2 && /ECONNREFUSED/.test(e.message));
  });

  it('an aborted request is not retried', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await assert.rejects(client().api.GET('/v1/account', { signal: controller.signal }), (e: unknown) => !(e instanceof VidmillNetworkError));
    assert.deepEqual(waits, []);
  });

  it('really sleeps for Retry-After without an injected sleep', async () => {
    server.script({ status: 429, headers: { 'Retry-After': '1' } }, { status: 200 });
    const started = Date.now();
    const res = await createVidmillClient({ baseUrl: server.baseUrl }).api.GET('/v1/account');
    assert.equal(res.response.status, 200);
    const gap = server.seen[1]!.at - server.seen[0]!.at;
    assert.ok(gap >= 990, `second attempt ${gap} ms after the first`);
    assert.ok(Date.now() - started < 5000);
  });
});
