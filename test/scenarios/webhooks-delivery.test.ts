import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { deliveryNotices, DeliveryOptions, DeliveryWorker, jobNotices, recordEvent } from '../../src/features/webhooks';
import { webhookRows } from '../../src/features/webhooks/testing';
import { STAGE_ERRORS } from '../../src/features/videos/testing';
import { openDatabase } from '../../src/db/database';
import { listenForJobs } from '../../src/jobs/job-notifications';
import { loadContract } from '../../src/composition';
import { TEST_DIALECT } from '../helpers/database';
import { assertStageError, createHarness, expectError, Harness, TestUser } from '../helpers/harness';
import { Receiver, startReceiver } from '../helpers/webhook-receiver';
import { scaled } from '../helpers/timeouts';

const BASE = '/api/v1/webhooks';
const MIN = 60_000;

describe(`Webhook delivery (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  let receiver: Receiver;
  let worker: DeliveryWorker;
  const workers: DeliveryWorker[] = [];

  const newWorker = (options: Partial<DeliveryOptions> = {}) => {
    const w = new DeliveryWorker(
      { db: h.services.db, clock: h.clock, signingKeys: h.services.signingKeys, policy: { allowPrivateUrls: true }, log: pino({ level: 'silent' }) },
      { random: () => 0.5, ...options },
    );
    workers.push(w);
    return w;
  };
  const api = {
    post: (path: string, b?: object) => (b ? h.request.post(path).set('X-API-Key', u.apiKey).send(b) : h.request.post(path).set('X-API-Key', u.apiKey)),
    get: (path: string) => h.request.get(path).set('X-API-Key', u.apiKey),
  };
  const webhook = async (overrides: Record<string, unknown> = {}) => {
    const res = await api.post(BASE, { name: 'Receiver', url: receiver.url, eventTypes: ['video_processing.done', 'video_in.done'], active: true, ...overrides });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };
  const emit = (eventType = 'video_processing.done', videoId = randomUUID()) =>
    h.services.db.transaction((trx) => recordEvent(trx, { teamId: u.teamId, eventType, videoId, occurredAt: h.clock.now() }));
  const event = async (id: string) => {
    const res = await api.get(`${BASE}/events/${id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };

  before(async () => {
    h = await createHarness({ allowPrivateUrls: true });
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await h.close();
  });
  beforeEach(async () => {
    u = await h.user();
    const verifier = {
      now: () => h.clock.now(),
      fetchKey: async (id: string) => (await h.request.get(`/api/v1/webhooks/public-keys/${id}`).set('X-API-Key', u.apiKey)).body.publicKey,
    };
    receiver = await startReceiver(verifier);
    worker = newWorker();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('fan-out: one delivery per active webhook whose eventTypes match; payload frozen; signed request verifies', async () => {
    const a = await webhook();
    const b = await webhook({ eventTypes: ['video.deleted'] });
    await webhook({ active: false });
    const videoId = randomUUID();
    const deliveries = await emit('video_processing.done', videoId);
    assert.equal(deliveries.length, 1);
    assert.equal(deliveries[0]!.webhookId, a.id);
    assert.equal(await worker.drain(), 1);
    assert.equal(receiver.received.length, 1);
    const r = receiver.received[0]!;
    assert.ok(r.verified, r.verifyError);
    assert.equal(r.headers['x-vidmill-algorithm'], 'SHA256withECDSA');
    assert.equal(r.headers['content-type'], 'application/json');
    assert.match(String(r.headers['user-agent']), /^Vidmill-Webhooks\/2\.0\.0$/);
    assert.match(String(r.headers['x-vidmill-timestamp']), /^\d{10}$/);
    assert.deepEqual(Object.keys(r.json), ['id', 'webhookId', 'eventType', 'occurredAt', 'test', 'attemptCount', 'data']);
    assert.equal(r.json.id, deliveries[0]!.id);
    assert.equal(r.json.webhookId, a.id);
    assert.equal(r.json.test, false);
    assert.equal(r.json.attemptCount, 1);
    assert.deepEqual(r.json.data, { type: 'VIDEO', videoId });
    const e = await event(deliveries[0]!.id);
    assert.equal(e.successful, true);
    assert.equal(e.nextAttemptEarliestAt, null);
    assert.equal(e.payload.attemptCount, 1);
    assert.equal(e.responses.length, 1);
    assert.equal(e.responses[0].statusCode, 200);
    assert.equal(e.responses[0].responseBody, 'ok');
    assert.equal(e.responses[0].responseHeaders, undefined, 'headers are kept for failed attempts only');
    assert.equal(b.active, true);
  });

  it('deliveries recorded in a transaction are announced to the other processes at its commit (PostgreSQL NOTIFY), never after a rollback; only delivery loops wake for it', async function () {
    if (TEST_DIALECT !== 'postgres') return this.skip(); // one process on SQLite
    await webhook();
    // Another process: a pool of its own, listening as src/main.ts does for its worker and delivery loop.
    const pool = openDatabase(h.database.config);
    const notifications = listenForJobs(pool, pino({ level: 'silent' }));
    const heard: string[] = [];
    const woken = { deliveries: 0, jobs: 0 };
    const unsubscribe: (() => void)[] = [];
    try {
      await notifications.ready();
      unsubscribe.push(notifications.subscribe((notice) => heard.push(notice)));
      unsubscribe.push(deliveryNotices(notifications.subscribe)(() => woken.deliveries++));
      unsubscribe.push(jobNotices(notifications.subscribe)(() => woken.jobs++));
      await h.services.db
        .transaction(async (trx) => {
          await recordEvent(trx, { teamId: u.teamId, eventType: 'video_in.done', videoId: randomUUID(), occurredAt: h.clock.now() });
          throw new Error('rollback');
        })
        .catch(() => undefined);
      await h.services.db.transaction(async (trx) => {
        await recordEvent(trx, { teamId: u.teamId, eventType: 'video_in.done', videoId: randomUUID(), occurredAt: h.clock.now() });
        await new Promise((r) => setTimeout(r, 100));
        assert.deepEqual(heard, [], 'not before the commit');
      });
      const started = Date.now();
      while (!heard.length && Date.now() - started < 5_000) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(heard, ['webhook.deliveries'], 'one notice, for the committed event only');
      assert.deepEqual(woken, { deliveries: 1, jobs: 0 });
    } finally {
      unsubscribe.forEach((u) => u());
      await notifications.close();
      await pool.destroy();
    }
  });

  it('test event through the API is delivered with payload.test = true', async () => {
    const w = await webhook();
    const res = await api.post(`${BASE}/${w.id}/test?eventType=video_in.done`);
    assert.equal(res.status, 200);
    await worker.drain();
    assert.equal(receiver.received.length, 1);
    assert.ok(receiver.received[0]!.verified, receiver.received[0]!.verifyError);
    assert.equal(receiver.received[0]!.json.test, true);
    assert.equal(receiver.received[0]!.json.eventType, 'video_in.done');
    assert.equal((await event(res.body.id)).successful, true);
  });

  it('test events have the shape of real events: every *.failed type carries data.error (every event type of the contract)', async () => {
    const types: string[] = loadContract().components.schemas.WebhookEventType.enum;
    assert.equal(types.length, 22);
    // The codes a real `*.failed` event of each stage may carry (docs/webhooks.md: the stage's `error`).
    const stageOf = (type: string): keyof typeof STAGE_ERRORS | undefined =>
      type === 'video_in.failed'
        ? 'videoIn'
        : type.endsWith('_ingestion.failed')
          ? 'ingestion'
          : type === 'clip_processing.failed'
            ? 'clip'
            : type === 'video_processing.failed'
              ? 'processing'
              : type === 'video_out.failed'
                ? 'videoOut'
                : undefined;
    const shape = (x: unknown): unknown => (x !== null && typeof x === 'object' ? Object.fromEntries(Object.entries(x).map(([k, v]) => [k, shape(v)])) : typeof x);
    const w = await webhook({ eventTypes: types });
    for (const type of types) {
      const videoId = randomUUID();
      const res = await api.post(`${BASE}/${w.id}/test?eventType=${type}&videoId=${videoId}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const stage = stageOf(type);
      assert.equal(type.endsWith('.failed'), stage !== undefined, `${type}: a stage for every *.failed type`);
      // A real event of the type, as the stage writes it (VideoStage.failed passes the stage's error).
      const realError = stage ? { code: Object.keys(STAGE_ERRORS[stage])[0]!, message: Object.values(STAGE_ERRORS[stage])[0] as string } : undefined;
      const real = (
        await h.services.db.transaction((trx) => recordEvent(trx, { teamId: u.teamId, eventType: type, videoId, occurredAt: h.clock.now(), ...(realError ? { error: realError } : {}) }))
      )[0]!;
      const test = res.body.payload;
      const realPayload = JSON.parse(real.payload);
      assert.deepEqual(shape(test.data), shape(realPayload.data), `${type}: ${JSON.stringify(test.data)} vs ${JSON.stringify(realPayload.data)}`);
      assert.equal(test.data.videoId, videoId);
      if (stage) {
        assert.ok(Object.hasOwn(STAGE_ERRORS[stage], test.data.error?.errorCode), `${type}: ${JSON.stringify(test.data.error)} is a code of the ${stage} stage`);
        assertStageError(test.data.error, test.data.error.errorCode);
        assert.equal(test.data.error.message, (STAGE_ERRORS[stage] as Record<string, string>)[test.data.error.errorCode]);
      } else assert.equal(test.data.error, undefined, type);
    }
    await worker.drain();
    const delivered = receiver.received.filter((r) => r.json.test);
    assert.equal(delivered.length, types.length);
    for (const r of delivered) {
      assert.ok(r.verified, r.verifyError);
      assert.equal(r.json.eventType.endsWith('.failed'), r.json.data.error !== undefined, JSON.stringify(r.json));
    }
  });

  it('failures are retried with exponential back-off and jitter; body cut to 100, headers to 50 characters', async () => {
    await webhook();
    const long = 'x'.repeat(300);
    receiver.answer((_, i) => (i < 2 ? { status: 500, body: long, headers: { 'X-Long': 'y'.repeat(80) } } : { status: 204, body: '' }));
    const d = (await emit())[0]!;
    await worker.drain();
    let e = await event(d.id);
    assert.equal(e.successful, null);
    assert.equal(e.responses.length, 1);
    assert.equal(e.responses[0].statusCode, 500);
    assert.equal(e.responses[0].responseBody, 'x'.repeat(100));
    assert.equal(e.responses[0].responseHeaders['x-long'], 'y'.repeat(50));
    const first = Date.parse(e.nextAttemptEarliestAt) - h.clock.now().getTime();
    assert.ok(first >= 5_000 && first <= 10_000, `first retry after ${first} ms`);
    assert.equal(await worker.drain(), 0, 'nothing is due before the retry time');
    h.clock.advance(first);
    await worker.drain();
    e = await event(d.id);
    const second = Date.parse(e.nextAttemptEarliestAt) - h.clock.now().getTime();
    assert.ok(second >= 10_000 && second <= 20_000, `second retry after ${second} ms`);
    h.clock.advance(second);
    await worker.drain();
    e = await event(d.id);
    assert.equal(e.successful, true);
    assert.equal(e.payload.attemptCount, 3);
    assert.deepEqual(
      e.responses.map((r: any) => r.statusCode),
      [500, 500, 204],
    );
    assert.deepEqual(
      receiver.received.map((r) => r.json.attemptCount),
      [1, 2, 3],
    );
    assert.ok(receiver.received.every((r) => r.verified));
  });

  it('maxTotalRetryDelayMinutes 0: no retry; failed for good', async () => {
    await webhook({ maxTotalRetryDelayMinutes: 0 });
    receiver.answer(() => ({ status: 502 }));
    const d = (await emit())[0]!;
    await worker.drain();
    const e = await event(d.id);
    assert.equal(e.successful, false);
    assert.equal(e.nextAttemptEarliestAt, null);
    assert.equal(e.responses.length, 1);
  });

  it('retries stop when the window is used up (last try at the window end)', async () => {
    await webhook({ maxTotalRetryDelayMinutes: 1 });
    receiver.answer(() => ({ status: 500 }));
    const d = (await emit())[0]!;
    const start = h.clock.now().getTime();
    for (let i = 0; i < 20; i++) {
      await worker.drain();
      const e = await event(d.id);
      if (e.successful === false) break;
      assert.ok(Date.parse(e.nextAttemptEarliestAt) <= start + MIN, 'never scheduled past the window');
      h.clock.set(new Date(e.nextAttemptEarliestAt));
    }
    const e = await event(d.id);
    assert.equal(e.successful, false);
    assert.equal(Date.parse(e.responses.at(-1).requestedAt), start + MIN);
  });

  it('Retry-After on 429 and 503 schedules the next try, clamped to the window', async () => {
    await webhook({ maxTotalRetryDelayMinutes: 10 });
    receiver.answer((_, i) => (i === 0 ? { status: 429, headers: { 'Retry-After': '120' } } : i === 1 ? { status: 503, headers: { 'Retry-After': '3600' } } : { status: 200 }));
    const d = (await emit())[0]!;
    const start = h.clock.now().getTime();
    await worker.drain();
    let e = await event(d.id);
    assert.equal(Date.parse(e.responses[0].responseRetryAt), start + 120_000);
    assert.equal(Date.parse(e.nextAttemptEarliestAt), start + 120_000);
    assert.equal(e.responses[0].responseHeaders['retry-after'], '120');
    h.clock.advance(120_000);
    await worker.drain();
    e = await event(d.id);
    assert.equal(Date.parse(e.nextAttemptEarliestAt), start + 10 * MIN, 'an hour asked, clamped to the 10-minute window');
    h.clock.set(new Date(start + 10 * MIN));
    await worker.drain();
    assert.equal((await event(d.id)).successful, true);
  });

  it('responseRetryAt is when the next attempt really is: clamped to the retry window, absent when none follows', async () => {
    await webhook({ maxTotalRetryDelayMinutes: 10 });
    receiver.answer(() => ({ status: 503, headers: { 'Retry-After': '3600' } }));
    const d = (await emit())[0]!;
    const start = h.clock.now().getTime();
    await worker.drain();
    let e = await event(d.id);
    assert.equal(Date.parse(e.responses[0].responseRetryAt), start + 10 * MIN, 'an hour asked; the next try is at the window end');
    assert.equal(e.responses[0].responseRetryAt, e.nextAttemptEarliestAt);
    assert.equal(e.responses[0].responseHeaders['retry-after'], '3600', 'the raw header is kept');
    h.clock.set(new Date(start + 10 * MIN));
    await worker.drain();
    e = await event(d.id);
    assert.equal(e.successful, false);
    assert.equal(e.responses[1].responseRetryAt, undefined, 'the window is used up: no retry');
    assert.equal(e.responses[1].responseHeaders['retry-after'], '3600');
  });

  it('timeouts and dropped connections are failed attempts with statusCode 0', async () => {
    const fast = newWorker({ timeoutMs: 300 });
    await webhook();
    receiver.answer((_, i) => (i === 0 ? { delayMs: 1000 } : { drop: true }));
    const d = (await emit())[0]!;
    await fast.drain();
    let e = await event(d.id);
    assert.equal(e.responses[0].statusCode, 0);
    assert.equal(e.responses[0].errorCode, 'WEBHOOK_TIMEOUT');
    h.clock.set(new Date(e.nextAttemptEarliestAt));
    await fast.drain();
    e = await event(d.id);
    assert.equal(e.responses[1].statusCode, 0);
    assert.equal(e.responses[1].errorCode, 'WEBHOOK_NETWORK_ERROR');
    assert.equal(e.successful, null);
  });

  it('rateLimitPerSecond holds across two workers; no permit within the wait is WEBHOOK_RATE_LIMIT_EXCEEDED', async () => {
    await webhook({ rateLimitPerSecond: 2 });
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push((await emit())[0]!.id);
    const w1 = newWorker({ permitWaitMs: 1200 });
    const w2 = newWorker({ permitWaitMs: 1200 });
    await Promise.all([w1.runOnce(3), w2.runOnce(3)]);
    const times = receiver.received.map((r) => r.receivedAt).sort((a, b) => a - b);
    for (let i = 2; i < times.length; i++) assert.ok(times[i]! - times[i - 2]! >= 900, `3 requests within a second: ${times.join(',')}`);
    const events = await Promise.all(ids.map(event));
    const limited = events.filter((e: any) => e.responses[0]?.errorCode === 'WEBHOOK_RATE_LIMIT_EXCEEDED');
    assert.ok(limited.length >= 1, 'some attempts found no permit in time');
    assert.equal(limited.length + receiver.received.length, 6);
    for (const e of limited) {
      assert.equal(e.responses[0].statusCode, 0);
      assert.ok(e.nextAttemptEarliestAt, 'a rate-limited attempt is retried');
    }
  });

  it('requestedAt and responseTimeMillis measure the request only, not the wait for a rate-limit permit', async () => {
    await webhook({ rateLimitPerSecond: 1 });
    // The permits are one-second windows of wall time: the worker's clock follows wall time from
    // the test clock's instant, so the wait shows in the times it records.
    const offset = h.clock.now().getTime() - Date.now();
    const w = new DeliveryWorker(
      { db: h.services.db, clock: { now: () => new Date(Date.now() + offset) }, signingKeys: h.services.signingKeys, policy: { allowPrivateUrls: true }, log: pino({ level: 'silent' }) },
      { random: () => 0.5, permitWaitMs: 3000 },
    );
    workers.push(w);
    const handlingMs = 300;
    receiver.answer(() => ({ status: 200, body: 'ok', delayMs: handlingMs }));
    const ids = [(await emit())[0]!.id, (await emit())[0]!.id];
    const claimedAt = Date.now() + offset;
    assert.equal(await w.runOnce(), 2, 'both claimed at once: one of them waits for the next window');
    assert.equal(receiver.received.length, 2);
    const arrivals = receiver.received.map((r) => ({ id: r.json.id as string, at: r.receivedAt + offset })).sort((a, b) => a.at - b.at);
    assert.deepEqual(arrivals.map((a) => a.id).sort(), [...ids].sort());
    const [first, waited] = await Promise.all(arrivals.map(async (a) => (await event(a.id)).responses[0]));
    // The first permit's window opens at its consume, after the claim; the second request goes out
    // once that window has closed (the first request's own sending time does not count).
    assert.ok(arrivals[1]!.at - claimedAt >= 1000, `the second request waited for a permit (arrived ${arrivals[1]!.at - claimedAt} ms after the claim)`);
    // Margins of 500 ms (a loaded machine's sending time) stay well below the second's wait of a window.
    for (const [response, arrival] of [
      [first, arrivals[0]!],
      [waited, arrivals[1]!],
    ] as const) {
      const requestedAt = Date.parse(response.requestedAt);
      assert.ok(requestedAt <= arrival.at && arrival.at - requestedAt < 500, `requestedAt ${response.requestedAt} is when the request went out (arrived ${new Date(arrival.at).toISOString()})`);
      assert.ok(
        response.responseTimeMillis >= handlingMs && response.responseTimeMillis < handlingMs + 500,
        `responseTimeMillis ${response.responseTimeMillis} is about the receiver's ${handlingMs} ms`,
      );
    }
  });

  it('one slow endpoint does not delay deliveries to another, even with a backlog', async () => {
    const slow = await startReceiver({ fetchKey: async () => undefined });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    try {
      // The slow endpoint answers nothing until the end of the test (and the attempts do not time
      // out before): every slot it takes stays taken while the other endpoint is delivered to.
      slow.answer(() => ({ until: held }));
      await webhook({ url: slow.url, eventTypes: ['video_in.done'] });
      await webhook({ eventTypes: ['video_processing.done'] });
      for (let i = 0; i < 20; i++) await emit('video_in.done');
      const loop = newWorker({ pollMs: 20, concurrency: 10, perWebhookConcurrency: 8, timeoutMs: scaled(60_000) });
      loop.start();
      try {
        await slow.waitFor(8, 2000);
        await emit('video_processing.done');
        await receiver.waitFor(1, 10_000);
        assert.ok(slow.received.length <= 8, `the slow endpoint holds at most its share of slots (${slow.received.length})`);
      } finally {
        release();
        await loop.stop();
      }
    } finally {
      await slow.close();
    }
  });

  it('an idle loop is woken by the commit of an event (no polling delay)', async () => {
    await webhook();
    // No poll comes due during the test: each delivery was woken by its event's commit.
    const loop = newWorker({ pollMs: 3_600_000 });
    loop.start();
    try {
      await new Promise((r) => setTimeout(r, 50));
      for (let i = 0; i < 5; i++) {
        await emit();
        await receiver.waitFor(i + 1, 2000);
      }
    } finally {
      await loop.stop();
    }
    assert.equal(receiver.received.length, 5);
  });

  it("a crashed worker's lease expires and another worker delivers (at least once)", async () => {
    await webhook();
    const d = (await emit())[0]!;
    const now = h.clock.now();
    await h.services
      .db('webhook_deliveries')
      .where({ id: d.id })
      .update({ lease_owner: 'dead-worker', lease_expires_at: new Date(now.getTime() + 60_000) });
    await worker.drain();
    assert.equal(receiver.received.length, 0, 'leased to another worker');
    assert.equal((await event(d.id)).successful, null);
    h.clock.advance(60_000);
    await worker.drain();
    assert.equal(receiver.received.length, 1);
    assert.equal((await event(d.id)).successful, true);
  });

  it('the URL guard is checked again at delivery', async () => {
    await webhook();
    const d = (await emit())[0]!;
    const strict = new DeliveryWorker({ db: h.services.db, clock: h.clock, signingKeys: h.services.signingKeys, policy: { allowPrivateUrls: false }, log: pino({ level: 'silent' }) }, {});
    workers.push(strict);
    await strict.drain();
    const e = await event(d.id);
    assert.equal(e.responses[0].errorCode, 'INVALID_HTTPS_URL');
    assert.equal(e.responses[0].statusCode, 0);
    assert.equal(receiver.received.length, 0);
  });

  it('history filters (successfulMode, testMode, occurredAt range, teamId), replay and bulk replay', async () => {
    const w = await webhook({ maxTotalRetryDelayMinutes: 0 });
    receiver.answer((r) => (r.json.data.videoId === '00000000-0000-4000-8000-000000000001' ? { status: 200 } : { status: 500 }));
    const t0 = h.clock.now();
    const ok = (await emit('video_processing.done', '00000000-0000-4000-8000-000000000001'))[0]!;
    h.clock.advance(MIN);
    const bad = (await emit('video_processing.done', randomUUID()))[0]!;
    const test = await api.post(`${BASE}/${w.id}/test`);
    await worker.drain();
    const q = async (query: string) => {
      const res = await api.get(`${BASE}/events?teamId=${u.teamId}&pageSize=100&${query}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.items.map((e: any) => e.id).sort();
    };
    assert.deepEqual(await q(''), [ok.id, bad.id, test.body.id].sort());
    assert.deepEqual(await q('successfulMode=ONLY'), [ok.id]);
    assert.deepEqual(await q('successfulMode=EXCLUDE'), [bad.id, test.body.id].sort());
    assert.deepEqual(await q('testMode=ONLY'), [test.body.id]);
    assert.deepEqual(await q('testMode=EXCLUDE'), [ok.id, bad.id].sort());
    const iso = (d: Date) => encodeURIComponent(d.toISOString());
    assert.deepEqual(await q(`occurredAtFrom=${iso(t0)}&occurredAtUntil=${iso(new Date(t0.getTime() + MIN))}`), [ok.id], 'until is exclusive');
    assert.deepEqual(await q(`occurredAtFrom=${iso(new Date(t0.getTime() + MIN))}&testMode=EXCLUDE`), [bad.id], 'from is inclusive');

    const other = await h.user();
    assert.equal((await h.request.get(`${BASE}/events`).set('X-API-Key', other.apiKey)).body.totalElements, 0);
    expectError(await h.request.get(`${BASE}/events/${ok.id}`).set('X-API-Key', other.apiKey), 404, 'RESOURCE_NOT_FOUND');

    receiver.answer(() => ({ status: 200 }));
    const replay = await api.post(`${BASE}/events/${bad.id}/replay`);
    assert.equal(replay.status, 202, JSON.stringify(replay.body));
    assert.equal(replay.body.successful, null);
    assert.ok(replay.body.nextAttemptEarliestAt);
    expectError(await api.post(`${BASE}/events/${bad.id}/replay`), 409, 'CONFLICT');
    await worker.drain();
    const replayed = await event(bad.id);
    assert.equal(replayed.successful, true);
    assert.deepEqual(
      replayed.responses.map((r: any) => r.statusCode),
      [500, 200],
    );

    const bulk = await api.post(`${BASE}/events/replay`, { testMode: 'ONLY' });
    assert.equal(bulk.status, 202);
    assert.deepEqual(bulk.body, { queued: 1 });
    await worker.drain();
    assert.equal((await event(test.body.id)).successful, true);
    assert.deepEqual((await api.post(`${BASE}/events/replay`, {})).body, { queued: 0 });
    expectError(await api.post(`${BASE}/events/replay`, { occurredAtFrom: '2026-01-02T00:00:00Z', occurredAtUntil: '2026-01-01T00:00:00Z' }), 400, 'INVALID_DATE_TIME_RANGE');
    expectError(await api.post(`${BASE}/events/${randomUUID()}/replay`), 404, 'RESOURCE_NOT_FOUND');
  });

  it('retention: test events go after 1 day, others after 10 days (sweep on the injected clock)', async () => {
    const w = await webhook();
    const real = (await emit())[0]!;
    const test = await api.post(`${BASE}/${w.id}/test`);
    await worker.drain();
    h.clock.advance(24 * 3600_000 + 1000);
    await h.services.webhooks.sweepHistory();
    expectError(await api.get(`${BASE}/events/${test.body.id}`), 404, 'RESOURCE_NOT_FOUND');
    assert.equal((await event(real.id)).successful, true);
    h.clock.advance(9 * 24 * 3600_000);
    await h.services.webhooks.sweepHistory();
    expectError(await api.get(`${BASE}/events/${real.id}`), 404, 'RESOURCE_NOT_FOUND');
  });

  it("a deleted webhook's events and attempts stay readable (by id and in the event list) for the retention; its pending delivery is not sent; replay is 409", async () => {
    const w = await webhook();
    receiver.answer(() => ({ status: 500 }));
    const d = (await emit())[0]!;
    await worker.drain();
    const pending = await event(d.id);
    assert.equal(pending.responses.length, 1);
    assert.ok(pending.nextAttemptEarliestAt, 'a retry is scheduled');

    assert.equal((await h.request.delete(`${BASE}/${w.id}`).set('X-API-Key', u.apiKey)).status, 204);
    expectError(await api.get(`${BASE}/${w.id}`), 404, 'RESOURCE_NOT_FOUND');
    assert.ok(!(await api.get(`${BASE}?pageSize=100`)).body.items.some((x: any) => x.id === w.id));
    expectError(await h.request.delete(`${BASE}/${w.id}`).set('X-API-Key', u.apiKey), 404, 'RESOURCE_NOT_FOUND');
    assert.equal((await emit()).length, 0, 'no new events for a deleted webhook');
    const kept = await event(d.id);
    assert.deepEqual(kept.responses, pending.responses);
    assert.deepEqual(kept.payload, pending.payload);
    const list = (await api.get(`${BASE}/events?teamId=${u.teamId}&pageSize=100`)).body.items;
    assert.deepEqual(
      list.map((x: any) => x.id),
      [d.id],
    );

    // The retry that was due is not sent, and says why.
    h.clock.set(new Date(pending.nextAttemptEarliestAt));
    await worker.drain();
    assert.equal(receiver.received.length, 1);
    const ended = await event(d.id);
    assert.equal(ended.successful, false);
    assert.equal(ended.responses[1].errorCode, 'WEBHOOK_DELETED');
    expectError(await api.post(`${BASE}/events/${d.id}/replay`), 409, 'WEBHOOK_NOT_ACTIVE');
    assert.deepEqual((await api.post(`${BASE}/events/replay`, {})).body, { queued: 0 });

    // Kept exactly as long as any record: gone after 10 days, with the webhook's row.
    h.clock.advance(9 * 24 * 3600_000);
    await h.services.webhooks.sweepHistory();
    assert.equal((await event(d.id)).id, d.id);
    h.clock.advance(24 * 3600_000);
    await h.services.webhooks.sweepHistory();
    expectError(await api.get(`${BASE}/events/${d.id}`), 404, 'RESOURCE_NOT_FOUND');
    assert.equal(await webhookRows.byId(h.services.db, w.id), undefined);
  });

  it("a deactivated webhook's pending delivery is not sent; replay is 409", async () => {
    const b = await webhook();
    const ds = await emit();
    assert.equal(ds.length, 1);
    assert.equal((await api.post(`${BASE}/${b.id}/deactivate`)).status, 200);
    await worker.drain();
    assert.equal(receiver.received.length, 0);
    const e = await event(ds.find((d) => d.webhookId === b.id)!.id);
    assert.equal(e.successful, false);
    assert.equal(e.responses[0].errorCode, 'WEBHOOK_NOT_ACTIVE');
    expectError(await api.post(`${BASE}/events/${e.id}/replay`), 409, 'WEBHOOK_NOT_ACTIVE');
    assert.deepEqual((await api.post(`${BASE}/events/replay`, {})).body, { queued: 0 }, 'failed events of inactive webhooks are skipped');
  });
});
