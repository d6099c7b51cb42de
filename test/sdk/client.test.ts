// test-databases: one
// (SQLite only: its subject is the SDK's client; the API's SQL is tested on PostgreSQL by the scenario files.)
/**
 * The SDK's client against the real app: failed calls are VidmillApiError with the answer's
 * errorCode and requestId, and a POST whose answer was lost is retried with the same
 * Idempotency-Key and creates one resource.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { unwrap, VidmillApiError } from '../../sdk/src';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { sdkClient } from './sdk-harness';

describe(`SDK client on the real app (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  beforeEach(async () => {
    h = await createHarness();
    u = await h.user();
  });
  afterEach(() => h.close());

  it('a failed call throws VidmillApiError with status, errorCode, message and the X-Request-Id', async () => {
    const client = await sdkClient(h, u);
    const res = await client.api.GET('/v1/videos/{videoId}', { params: { path: { videoId: randomUUID() } } });
    assert.throws(
      () => unwrap(res),
      (e: unknown) => {
        assert.ok(e instanceof VidmillApiError);
        assert.equal(e.status, 404);
        assert.equal(e.errorCode, 'RESOURCE_NOT_FOUND');
        assert.ok(e.message.length > 0);
        assert.ok(e.requestId, 'requestId');
        assert.equal(e.requestId, res.response.headers.get('x-request-id'));
        assert.equal((e.body as { requestId: string }).requestId, e.requestId);
        return true;
      },
    );
    const invalid = await client.api.GET('/v1/projects', { params: { query: { pageSize: 0 } } });
    assert.throws(
      () => unwrap(invalid),
      (e: unknown) => e instanceof VidmillApiError && e.status === 400 && e.errorCode === 'VALIDATION_ERROR' && !!e.requestId,
    );
    const stranger = await sdkClient(h, { ...u, apiKey: 'vm_not_a_key' });
    const unauthorized = await stranger.api.GET('/v1/account');
    assert.throws(
      () => unwrap(unauthorized),
      (e: unknown) => e instanceof VidmillApiError && e.status === 401 && !!e.requestId,
    );
  });

  it('a POST whose answer was lost is retried with the same Idempotency-Key: one project, the replayed answer', async () => {
    const sent: Array<{ key: string | null }> = [];
    let loseNext = true;
    const client = await sdkClient(h, u, {
      retry: { sleep: async () => undefined },
      fetch: async (input, init) => {
        const request = new Request(input, init);
        sent.push({ key: request.headers.get('Idempotency-Key') });
        const response = await fetch(request);
        if (request.method === 'POST' && loseNext) {
          loseNext = false;
          await response.arrayBuffer();
          throw new TypeError('fetch failed', { cause: new Error('ECONNRESET') });
        }
        return response;
      },
    });
    const res = await client.api.POST('/v1/projects', { body: { name: 'Exactly once' } });
    const project = unwrap(res);
    assert.equal(res.response.status, 201);
    assert.equal(res.response.headers.get('idempotent-replayed'), 'true', 'the retry got the stored answer');
    assert.equal(sent.length, 2);
    assert.ok(sent[0]!.key && sent[0]!.key === sent[1]!.key, 'the same key on both attempts');
    const all = unwrap(await client.api.GET('/v1/projects', { params: { query: { pageSize: 100 } } }));
    assert.deepEqual(
      all.items.filter((p) => p.name === 'Exactly once').map((p) => p.id),
      [project.id],
    );
  });

  it("a 429 of the real server's rate limiter is retried after its Retry-After", async () => {
    const limited = await createHarness({ rateLimitPerMinute: 2 });
    try {
      const user = await limited.user();
      const waits: number[] = [];
      const retryAfters: string[] = [];
      const client = await sdkClient(limited, user, {
        retries: 1,
        retry: { maxDelayMs: 120_000, sleep: async (ms) => void waits.push(ms) },
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          if (response.status === 429) retryAfters.push(response.headers.get('retry-after') ?? '');
          return response;
        },
      });
      for (let i = 0; i < 2; i++) unwrap(await client.api.GET('/v1/account'));
      const res = await client.api.GET('/v1/account');
      assert.equal(res.response.status, 429, 'the window is still spent: the retry is limited too');
      assert.equal(retryAfters.length, 2, 'first attempt and one retry');
      assert.match(retryAfters[0]!, /^\d+$/);
      assert.deepEqual(waits, [Number(retryAfters[0]) * 1000], "waited the server's Retry-After");
      assert.throws(
        () => unwrap(res),
        (e: unknown) => e instanceof VidmillApiError && e.errorCode === 'TOO_MANY_REQUESTS' && !!e.requestId,
      );
    } finally {
      await limited.close();
    }
  });
});
