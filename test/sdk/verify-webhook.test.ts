// test-databases: one
// (SQLite only: its subject is the SDK's webhook verifier.)
/**
 * `verifyWebhook` (sdk/src/verify-webhook.ts, webhook-key-cache.ts) on real deliveries: the
 * app's delivery worker signs and POSTs events to a local receiver; the SDK verifies what it
 * received, fetching keys from the app through its client.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { createVidmillClient, unwrap, verifyWebhook, WebhookKeyCache, WebhookVerificationError, type VidmillClient, type WebhookVerificationFailure } from '../../sdk/src';
import { DeliveryWorker, recordEvent } from '../../src/features/webhooks';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { Received, Receiver, startReceiver } from '../helpers/webhook-receiver';
import { appBaseUrl } from './sdk-harness';

const MINUTE = 60_000;

describe(`SDK verifyWebhook (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  let receiver: Receiver;
  let worker: DeliveryWorker;
  let baseUrl: string;
  /** Key lookups that reached the app, by key id. */
  let lookups: string[];
  /** A client counting its key lookups (each test gets a new one, so a new key cache). */
  let client: VidmillClient;

  const deliverOne = async (): Promise<Received> => {
    const before = receiver.received.length;
    await h.services.db.transaction((trx) => recordEvent(trx, { teamId: u.teamId, eventType: 'video_out.done', videoId: randomUUID(), occurredAt: h.clock.now() }));
    await worker.drain();
    assert.equal(receiver.received.length, before + 1);
    return receiver.received[before]!;
  };
  const now = () => h.clock.now();
  const rejects = (headers: Record<string, unknown>, body: string, reason: WebhookVerificationFailure, opts: { keys?: WebhookKeyCache } = {}) =>
    assert.rejects(verifyWebhook(headers as Record<string, string>, body, { client, now, ...opts }), (e: unknown) => {
      assert.ok(e instanceof WebhookVerificationError, String(e));
      assert.equal(e.reason, reason, e.message);
      return true;
    });

  before(async () => {
    h = await createHarness({ allowPrivateUrls: true });
    u = await h.user();
    baseUrl = await appBaseUrl(h);
    receiver = await startReceiver({ now, client: createVidmillClient({ baseUrl, apiKey: u.apiKey }) });
    worker = new DeliveryWorker({ db: h.services.db, clock: h.clock, signingKeys: h.services.signingKeys, policy: { allowPrivateUrls: true }, log: pino({ level: 'silent' }) });
    const res = await h.request
      .post('/api/v1/webhooks')
      .set('X-API-Key', u.apiKey)
      .send({ name: 'SDK', url: receiver.url, eventTypes: ['video_out.done'], active: true });
    assert.equal(res.status, 201);
  });
  beforeEach(() => {
    lookups = [];
    client = createVidmillClient({
      baseUrl,
      apiKey: u.apiKey,
      fetch: (input, init) => {
        const request = new Request(input, init);
        const m = /\/public-keys\/([^/?]+)$/.exec(new URL(request.url).pathname);
        if (m) lookups.push(m[1]!);
        return fetch(request);
      },
    });
  });
  after(async () => {
    await worker.stop();
    await receiver.close();
    await h.close();
  });

  it('accepts a real delivery and answers its parsed payload; the key is fetched once by id and cached', async () => {
    const first = await deliverOne();
    const payload = await verifyWebhook(first.headers, first.body, { client, now });
    assert.deepEqual(payload, JSON.parse(first.body));
    assert.equal(payload.eventType, 'video_out.done');
    const second = await deliverOne();
    assert.deepEqual(await verifyWebhook(second.headers, Buffer.from(second.body), { client, now }), JSON.parse(second.body));
    assert.deepEqual(lookups, [first.headers['x-vidmill-public-key-id']], 'one lookup, of the id the header names');
    // fetch Headers work as well as Node's header object
    const headers = new Headers(Object.entries(first.headers).map(([k, v]) => [k, String(v)]));
    await verifyWebhook(headers, first.body, { client, now });
  });

  it('rejects a tampered body, an old or future timestamp, another algorithm, a missing header', async () => {
    const r = await deliverOne();
    const h0 = r.headers as Record<string, string>;
    await rejects(h0, r.body.replace('video_out.done', 'video_out.fail'), 'bad-signature');
    await rejects(h0, `${r.body} `, 'bad-signature');
    await rejects({ ...h0, 'x-vidmill-signature': Buffer.from('not a signature').toString('base64') }, r.body, 'bad-signature');
    // the signed timestamp is part of the signature: changing it breaks it
    await rejects({ ...h0, 'x-vidmill-timestamp': String(Number(h0['x-vidmill-timestamp']) + 1) }, r.body, 'bad-signature');
    h.clock.advance(301_000);
    await rejects(h0, r.body, 'stale-timestamp');
    h.clock.advance(-602_000);
    await rejects(h0, r.body, 'stale-timestamp');
    h.clock.advance(301_000);
    await rejects({ ...h0, 'x-vidmill-timestamp': 'yesterday' }, r.body, 'stale-timestamp');
    for (const algorithm of ['SHA256withRSA', 'sha256withecdsa', 'SHA256withECDSA ', 'none']) await rejects({ ...h0, 'x-vidmill-algorithm': algorithm }, r.body, 'unsupported-algorithm');
    for (const name of ['x-vidmill-signature', 'x-vidmill-public-key-id', 'x-vidmill-timestamp', 'x-vidmill-algorithm']) await rejects({ ...h0, [name]: undefined }, r.body, 'missing-header');
    await verifyWebhook(h0, r.body, { client, now });
    assert.ok(lookups.length <= 1);
  });

  it('an unknown key id is rejected and looked up at most once a minute; concurrent lookups share one request', async () => {
    const r = await deliverOne();
    const forged = randomUUID();
    const withForged = { ...r.headers, 'x-vidmill-public-key-id': forged };
    for (let i = 0; i < 5; i++) await rejects(withForged, r.body, 'unknown-key');
    assert.deepEqual(lookups, [forged], 'one lookup for five requests');
    h.clock.advance(59_000);
    await rejects(withForged, r.body, 'unknown-key');
    assert.equal(lookups.length, 1, 'not again within the minute');
    h.clock.advance(2_000);
    await rejects(withForged, r.body, 'unknown-key');
    assert.deepEqual(lookups, [forged, forged], 'looked up again after a minute');
    // an id that is not a UUID is never looked up
    await rejects({ ...r.headers, 'x-vidmill-public-key-id': '../../account' }, r.body, 'unknown-key');
    assert.equal(lookups.length, 2);

    // concurrent verifications of a not yet cached real key: one request
    lookups = [];
    const keys = new WebhookKeyCache({ client, now });
    const all = await Promise.all(Array.from({ length: 5 }, () => verifyWebhook(r.headers, r.body, { keys, now })));
    assert.equal(all.length, 5);
    assert.deepEqual(lookups, [r.headers['x-vidmill-public-key-id']]);
    assert.equal(keys.lookups, 1);
  });

  it('a flood of distinct forged key ids costs the server at most maxLookupsPerMinute lookups', async () => {
    const r = await deliverOne();
    const keys = new WebhookKeyCache({ client, now, maxLookupsPerMinute: 10 });
    for (let i = 0; i < 50; i++) await rejects({ ...r.headers, 'x-vidmill-public-key-id': randomUUID() }, r.body, 'unknown-key', { keys });
    assert.equal(lookups.length, 10);
    h.clock.advance(MINUTE);
    // the real key still verifies once the minute has passed
    await verifyWebhook(r.headers, r.body, { keys, now: () => new Date(Number(r.headers['x-vidmill-timestamp']) * 1000) });
    assert.equal(lookups.length, 11);
  });

  it('a key source that fails is key-lookup-failed (not unknown-key), and is rate-limited the same way', async () => {
    const r = await deliverOne();
    let calls = 0;
    const fetchKey = () => {
      calls++;
      return Promise.reject(new Error('the API is down'));
    };
    await assert.rejects(verifyWebhook(r.headers, r.body, { fetchKey, now }), (e: unknown) => e instanceof WebhookVerificationError && e.reason === 'key-lookup-failed' && e.cause instanceof Error);
    await rejects(r.headers, r.body, 'unknown-key', { keys: new WebhookKeyCache({ fetchKey: () => Promise.resolve(undefined), now }) });
    await assert.rejects(verifyWebhook(r.headers, r.body, { fetchKey, now }), (e: unknown) => e instanceof WebhookVerificationError && e.reason === 'unknown-key');
    assert.equal(calls, 1, 'the same fetchKey shares one cache across calls');
  });

  it('a cached key past its expiresAt is looked up again: expired-key while the server still says so, valid once it does not', async () => {
    const r = await deliverOne();
    const keyId = String(r.headers['x-vidmill-public-key-id']);
    const real = unwrap(await client.api.GET('/v1/webhooks/public-keys/{id}', { params: { path: { id: keyId } } }));
    let expiresAt: string | null = new Date(h.clock.now().getTime() - 1000).toISOString();
    let calls = 0;
    const keys = new WebhookKeyCache({
      now,
      fetchKey: () => {
        calls++;
        return Promise.resolve({ publicKey: real.publicKey, expiresAt });
      },
    });
    await rejects(r.headers, r.body, 'expired-key', { keys });
    await rejects(r.headers, r.body, 'expired-key', { keys });
    assert.equal(calls, 1, 'not looked up again within the minute');
    expiresAt = null;
    h.clock.advance(MINUTE);
    await verifyWebhook(r.headers, r.body, { keys, now: () => new Date(Number(r.headers['x-vidmill-timestamp']) * 1000) });
    assert.equal(calls, 2);
  });
});
