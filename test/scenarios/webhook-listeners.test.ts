/**
 * Webhook listeners (`vidmill webhooks listen`): create and the limit of 5, what a listener
 * receives (subscribed types of its team, no test events), deliveries signed exactly as a push
 * (verified with node:crypto, openssl and the project's verifier behind a real receiver),
 * acknowledgement by `after`, long polling (early answer, timeout, deliveries written by another
 * process, shutdown), expiry on the injected clock, the list (paging, teams, teamId, expired ones
 * left out) and get by id (reads that neither poll nor acknowledge), 404s, validation, and events
 * recorded by a worker job.
 */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { createPublicKey, randomUUID, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { recordEvent } from '../../src/features/webhooks';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { createPeriodicTasks } from '../../src/composition';
import { registry } from '../../src/shared/metrics';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, expectError, Harness, subscribeWebhook, TestUser } from '../helpers/harness';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { apiRequests } from '../helpers/scenario';
import { startReceiver } from '../helpers/webhook-receiver';
import { scaled, scaledBelow } from '../helpers/timeouts';

const LISTENERS = '/v1/webhooks/listeners';
const MINUTE = 60_000;

describe(`Webhook listeners (${TEST_DIALECT})`, function () {
  this.timeout(scaled(60_000));
  let h: Harness;
  let u: TestUser;

  const { get, post, del } = apiRequests(
    () => h,
    () => u,
  );
  const create = async (eventTypes: string[] = ['video_out.done'], as: TestUser = u): Promise<any> => {
    const res = await post(LISTENERS, { eventTypes }, as);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };
  const poll = (id: string, query: { after?: number; waitSeconds?: number } = {}, as: TestUser = u) => {
    const q = new URLSearchParams({ waitSeconds: String(query.waitSeconds ?? 0), ...(query.after !== undefined ? { after: String(query.after) } : {}) });
    return get(`${LISTENERS}/${id}/deliveries?${q.toString()}`, as);
  };
  const polled = async (id: string, query: { after?: number; waitSeconds?: number } = {}, as: TestUser = u): Promise<any> => {
    const res = await poll(id, query, as);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  const record = (eventType: string, opts: { teamId?: string; videoId?: string } = {}) =>
    h.services.db.transaction((trx) => recordEvent(trx, { teamId: opts.teamId ?? u.teamId, eventType, videoId: opts.videoId ?? randomUUID(), occurredAt: h.clock.now() }));
  /** Deliveries handed out so far by this process (`vidmill_webhook_listener_deliveries_total`), by label. */
  const handedOut = async (): Promise<{ first: number; again: number }> => {
    const { values } = await registry.getSingleMetric('vidmill_webhook_listener_deliveries_total')!.get();
    const of = (handout: string) => values.filter((v) => v.labels.handout === handout).reduce((sum, v) => sum + v.value, 0);
    return { first: of('first'), again: of('again') };
  };

  beforeEach(async () => {
    h = await createHarness();
    u = await h.user();
  });
  afterEach(() => h.close());

  it('createWebhookListener: 201 in the default team, expiring 5 minutes after creation', async () => {
    const l = await create(['video_processing.done', 'video_processing.failed']);
    assert.match(l.id, /^[0-9a-f-]{36}$/);
    assert.equal(l.teamId, u.teamId);
    assert.deepEqual(l.eventTypes, ['video_processing.done', 'video_processing.failed']);
    assert.equal(l.createdAt, h.clock.now().toISOString());
    assert.equal(Date.parse(l.expiresAt) - Date.parse(l.createdAt), 5 * MINUTE);
    const first = await polled(l.id);
    assert.deepEqual(first, { listenerId: l.id, expiresAt: l.expiresAt, items: [] });
  });

  it('at most 5 listeners per team: the sixth is 409 MAXIMUM_AMOUNT_OF_WEBHOOK_LISTENERS_REACHED; a deleted or expired one frees a place', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create()).id);
    expectError(await post(LISTENERS, { eventTypes: ['video_out.done'] }), 409, 'MAXIMUM_AMOUNT_OF_WEBHOOK_LISTENERS_REACHED');
    // Another team is not limited by this one's listeners.
    await create(['video_out.done'], await h.user());
    assert.equal((await del(`${LISTENERS}/${ids[0]}`)).status, 204);
    const sixth = await create();
    expectError(await post(LISTENERS, { eventTypes: ['video_out.done'] }), 409, 'MAXIMUM_AMOUNT_OF_WEBHOOK_LISTENERS_REACHED');
    // All but one kept alive by polls; the one not polled expires and frees its place.
    h.clock.advance(4 * MINUTE);
    for (const id of [...ids.slice(2), sixth.id]) await polled(id);
    h.clock.advance(MINUTE);
    expectError(await poll(ids[1]!), 404, 'RESOURCE_NOT_FOUND');
    await create();
    expectError(await post(LISTENERS, { eventTypes: ['video_out.done'] }), 409, 'MAXIMUM_AMOUNT_OF_WEBHOOK_LISTENERS_REACHED');
  });

  it("a listener receives its team's events of the subscribed types, not other types, not other teams', not webhook test events", async () => {
    const other = await h.user();
    const l = await create(['video_out.done', 'video_in.failed']);
    const webhookId = await subscribeWebhook(h, u, ['video_out.done']);
    const videoId = randomUUID();
    await record('video_out.done', { videoId });
    await record('video_out.started');
    await record('video_out.done', { teamId: other.teamId });
    // A webhook test event of the same team and a subscribed type is for that webhook only.
    assert.equal((await post(`/v1/webhooks/${webhookId}/test?eventType=video_out.done`)).status, 200);
    const { items } = await polled(l.id);
    assert.equal(items.length, 1, JSON.stringify(items));
    const [d] = items;
    assert.equal(d.sequence, 1);
    assert.equal(d.eventType, 'video_out.done');
    const payload = JSON.parse(d.body);
    assert.deepEqual(payload, {
      id: d.eventId,
      webhookId: l.id,
      eventType: 'video_out.done',
      occurredAt: h.clock.now().toISOString(),
      test: false,
      attemptCount: 1,
      data: { type: 'VIDEO', videoId },
    });
    // The webhook got its push deliveries as before (the event and the test event).
    assert.equal((await h.database.db('webhook_deliveries').where({ webhook_id: webhookId })).length, 2);
  });

  it('a delivery carries the headers and body of a push delivery; they verify with node:crypto and openssl using the key from getWebhookPublicKeyById', async () => {
    const l = await create();
    await record('video_out.done');
    const [d] = (await polled(l.id)).items;
    assert.deepEqual(Object.keys(d.headers).sort(), ['Content-Type', 'X-Vidmill-Algorithm', 'X-Vidmill-Public-Key-Id', 'X-Vidmill-Signature', 'X-Vidmill-Timestamp']);
    assert.equal(d.headers['Content-Type'], 'application/json');
    assert.equal(d.headers['X-Vidmill-Algorithm'], 'SHA256withECDSA');
    assert.equal(d.headers['X-Vidmill-Timestamp'], String(Math.floor(h.clock.now().getTime() / 1000)));
    const key = await get(`/v1/webhooks/public-keys/${d.headers['X-Vidmill-Public-Key-Id']}`);
    assert.equal(key.status, 200);
    assert.equal(key.body.expiresAt, null, 'signed with the key that signs now');
    const spki = createPublicKey({ key: Buffer.from(key.body.publicKey, 'base64'), format: 'der', type: 'spki' });
    const signed = (body: string) => Buffer.from(`${d.headers['X-Vidmill-Timestamp']}.${body}`, 'utf8');
    const signature = Buffer.from(d.headers['X-Vidmill-Signature'], 'base64');
    assert.ok(verify('sha256', signed(d.body), { key: spki, dsaEncoding: 'der' }, signature));
    assert.ok(!verify('sha256', signed(d.body.replace('"test":false', '"test":true')), { key: spki, dsaEncoding: 'der' }, signature));

    const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-listener-sig-'));
    try {
      writeFileSync(path.join(dir, 'pub.pem'), spki.export({ format: 'pem', type: 'spki' }));
      writeFileSync(path.join(dir, 'sig.der'), signature);
      writeFileSync(path.join(dir, 'data'), signed(d.body));
      const out = execFileSync('openssl', ['dgst', '-sha256', '-verify', 'pub.pem', '-signature', 'sig.der', 'data'], { cwd: dir }).toString();
      assert.match(out, /Verified OK/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('forwarded as the CLI does (headers and body unchanged), a delivery passes the project verifier of a receiver; a redelivery is signed anew', async () => {
    const fetchKey = async (id: string) => {
      const res = await get(`/v1/webhooks/public-keys/${id}`);
      return res.status === 200 ? (res.body.publicKey as string) : undefined;
    };
    const receiver = await startReceiver({ now: () => h.clock.now(), fetchKey });
    try {
      const l = await create();
      await record('video_out.done');
      const forward = async (d: any) => {
        const res = await fetch(receiver.url, { method: 'POST', headers: d.headers, body: d.body });
        assert.equal(res.status, 200);
      };
      const [first] = (await polled(l.id)).items;
      await forward(first);
      // Not acknowledged: handed out again after 10 minutes, with a fresh timestamp and signature.
      h.clock.advance(4 * MINUTE);
      await polled(l.id);
      h.clock.advance(4 * MINUTE);
      const [again] = (await polled(l.id)).items;
      assert.equal(again.eventId, first.eventId);
      assert.equal(again.sequence, first.sequence);
      assert.notEqual(again.headers['X-Vidmill-Timestamp'], first.headers['X-Vidmill-Timestamp']);
      await forward(again);
      const got = await receiver.waitFor(2);
      for (const r of got) assert.ok(r.verified, r.verifyError);
      assert.equal(got[0]!.body, first.body);
      assert.equal(got[1]!.json.attemptCount, 3, 'the third hand-out');
      // The first signature is stale now (8 minutes old): the receiver would refuse a replay of it.
      await forward(first);
      const [, , stale] = await receiver.waitFor(3);
      assert.ok(!stale!.verified);
      assert.match(stale!.verifyError!, /stale-timestamp/);
    } finally {
      await receiver.close();
    }
  });

  it('after acknowledges: without it a delivery comes again (same sequence and eventId); with it the deliveries up to it are removed', async () => {
    const l = await create();
    await record('video_out.done');
    await record('video_out.done');
    const before = await handedOut();
    const first = await polled(l.id);
    assert.deepEqual(
      first.items.map((d: any) => d.sequence),
      [1, 2],
    );
    const again = await polled(l.id);
    assert.deepEqual(
      again.items.map((d: any) => [d.sequence, d.eventId, JSON.parse(d.body).attemptCount]),
      first.items.map((d: any) => [d.sequence, d.eventId, 2]),
    );
    const after = await handedOut();
    assert.deepEqual({ first: after.first - before.first, again: after.again - before.again }, { first: 2, again: 2 }, 'the metric counts every hand-out');
    const rest = await polled(l.id, { after: 1 });
    assert.deepEqual(
      rest.items.map((d: any) => d.sequence),
      [2],
    );
    await record('video_out.done');
    const next = await polled(l.id, { after: 2 });
    assert.deepEqual(
      next.items.map((d: any) => d.sequence),
      [3],
    );
    assert.equal(
      await h.database
        .db('webhook_listener_deliveries')
        .where({ listener_id: l.id })
        .count({ n: '*' })
        .first()
        .then((r: any) => Number(r.n)),
      1,
    );
    // An `after` beyond what was handed out acknowledges what was, and hides nothing recorded later.
    assert.deepEqual((await polled(l.id, { after: 1000 })).items, []);
    await record('video_out.done');
    assert.deepEqual(
      (await polled(l.id, { after: 1000 })).items.map((d: any) => d.sequence),
      [4],
    );
  });

  it('a poll answers at most 100 deliveries, oldest first; the rest come with the next polls', async () => {
    const l = await create(['video_out.done']);
    const videoIds: string[] = [];
    for (let i = 0; i < 130; i++) {
      videoIds.push(randomUUID());
      await record('video_out.done', { videoId: videoIds[i] });
    }
    const page1 = await polled(l.id);
    assert.equal(page1.items.length, 100);
    assert.deepEqual(
      page1.items.map((d: any) => d.sequence),
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      page1.items.map((d: any) => JSON.parse(d.body).data.videoId),
      videoIds.slice(0, 100),
    );
    const page2 = await polled(l.id, { after: 100 });
    assert.deepEqual(
      page2.items.map((d: any) => JSON.parse(d.body).data.videoId),
      videoIds.slice(100),
    );
    assert.equal(page2.items[0].sequence, 101);
  });

  it('sequences follow commit order: an event committed after a later one was acknowledged is still handed out', async function () {
    if (TEST_DIALECT !== 'postgres') this.skip(); // SQLite runs one write transaction at a time
    const l = await create();
    const slow = await h.services.db.transaction();
    try {
      await recordEvent(slow, { teamId: u.teamId, eventType: 'video_out.done', videoId: randomUUID(), occurredAt: h.clock.now() });
      await record('video_out.done');
      const first = await polled(l.id);
      assert.equal(first.items.length, 1);
      assert.equal((await polled(l.id, { after: first.items[0].sequence })).items.length, 0);
      await slow.commit();
    } catch (err) {
      if (!slow.isCompleted()) await slow.rollback();
      throw err;
    }
    const late = await polled(l.id, { after: 1 });
    assert.deepEqual(
      late.items.map((d: any) => d.sequence),
      [2],
    );
  });

  it('deleting a listener does not wait for an event transaction in flight, and that transaction still commits (its row is swept)', async function () {
    if (TEST_DIALECT !== 'postgres') this.skip(); // SQLite runs one write transaction at a time
    const l = await create();
    const inFlight = await h.services.db.transaction();
    try {
      await recordEvent(inFlight, { teamId: u.teamId, eventType: 'video_out.done', videoId: randomUUID(), occurredAt: h.clock.now() });
      const deleted = Promise.resolve(del(`${LISTENERS}/${l.id}`)).then((r) => r.status);
      const first = await Promise.race([deleted, new Promise((r) => setTimeout(() => r('still waiting'), 3_000))]);
      if (first === 'still waiting') {
        await inFlight.rollback();
        await deleted;
        assert.fail('the delete waited for the event transaction');
      }
      assert.equal(first, 204);
      await inFlight.commit();
    } catch (err) {
      if (!inFlight.isCompleted()) await inFlight.rollback();
      throw err;
    }
    assert.equal((await h.database.db('webhook_events').where({ team_id: u.teamId })).length, 1, 'the event committed');
    assert.equal((await h.database.db('webhook_listener_deliveries').where({ listener_id: l.id })).length, 1, 'the raced row, until the sweep');
    await h.services.webhookListeners.sweepExpired();
    assert.equal((await h.database.db('webhook_listener_deliveries').where({ listener_id: l.id })).length, 0);
  });

  it('long polling: a waiting poll answers as soon as an event is recorded, and with an empty list after waitSeconds', async () => {
    const l = await create();
    let started = Date.now();
    const empty = await polled(l.id, { waitSeconds: 1 });
    const waited = Date.now() - started;
    assert.deepEqual(empty.items, []);
    assert.ok(waited >= 950 && waited < scaledBelow(3_000, 10_000), `waited ${waited} ms`);

    started = Date.now();
    const waiting = polled(l.id, { waitSeconds: 20 });
    setTimeout(() => void record('video_out.done'), 300);
    const got = await waiting;
    const took = Date.now() - started;
    assert.equal(got.items.length, 1);
    assert.ok(took < scaledBelow(5_000, 15_000), `answered after ${took} ms`);
  });

  it('long polling: a delivery written by another process (no wake in this one) is found by the look at the table within about a second', async () => {
    const l = await create();
    const started = Date.now();
    const waiting = polled(l.id, { waitSeconds: 20 });
    await new Promise((r) => setTimeout(r, 300));
    const id = randomUUID();
    // What recordEvent writes, inserted directly: the in-process wake does not fire.
    await h.database.db('webhook_listener_deliveries').insert({
      id,
      listener_id: l.id,
      sequence: null,
      event_type: 'video_out.done',
      payload: JSON.stringify({
        id,
        webhookId: l.id,
        eventType: 'video_out.done',
        occurredAt: h.clock.now().toISOString(),
        test: false,
        attemptCount: 0,
        data: { type: 'VIDEO', videoId: randomUUID() },
      }),
      attempt_count: 0,
      created_at: h.clock.now(),
    });
    const got = await waiting;
    const took = Date.now() - started;
    assert.deepEqual(
      got.items.map((d: any) => d.eventId),
      [id],
    );
    assert.ok(took < scaledBelow(5_000, 15_000), `answered after ${took} ms`);
  });

  it('shutting down (stopWaiting, which main.ts calls before closing the server) answers waiting polls at once; later polls do not wait', async () => {
    const l = await create();
    const agent = await h.listen();
    const started = Date.now();
    // Sent now (a supertest request starts when awaited or `then`ed).
    const answered = Promise.resolve(agent.get(`/api${LISTENERS}/${l.id}/deliveries?waitSeconds=25`).set('X-API-Key', u.apiKey));
    await new Promise((r) => setTimeout(r, 300));
    h.services.webhookListeners.stopWaiting();
    const res = await answered;
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.items, []);
    assert.ok(Date.now() - started < scaledBelow(3_000, 20_000), `answered after ${Date.now() - started} ms`);
    // Later polls do not wait either.
    const t = Date.now();
    assert.deepEqual((await polled(l.id, { waitSeconds: 25 })).items, []);
    assert.ok(Date.now() - t < 2_000);
  });

  it('expiry: 5 minutes after the last poll on the clock the listener is gone (404), records nothing, and the periodic task deletes it with its deliveries', async () => {
    const l = await create();
    await record('video_out.done');
    h.clock.advance(4 * MINUTE);
    const kept = await polled(l.id);
    assert.equal(kept.expiresAt, new Date(h.clock.now().getTime() + 5 * MINUTE).toISOString(), 'each poll moves the expiry 5 minutes ahead');
    h.clock.advance(4 * MINUTE);
    assert.equal((await polled(l.id)).items.length, 1, 'alive 8 minutes after creation, polled 4 minutes ago');
    h.clock.advance(5 * MINUTE);
    await record('video_out.done');
    expectError(await poll(l.id), 404, 'RESOURCE_NOT_FOUND');
    expectError(await del(`${LISTENERS}/${l.id}`), 404, 'RESOURCE_NOT_FOUND');
    assert.equal((await h.database.db('webhook_listener_deliveries').where({ listener_id: l.id })).length, 1, 'nothing recorded after the expiry');
    const task = createPeriodicTasks(h.services).find((t) => t.name === 'webhook-listener-expiry')!;
    const live = await create();
    await task.run(pino({ level: 'silent' }));
    assert.equal((await h.database.db('webhook_listeners').where({ id: l.id })).length, 0);
    assert.equal((await h.database.db('webhook_listener_deliveries').where({ listener_id: l.id })).length, 0);
    assert.equal((await h.database.db('webhook_listeners').where({ id: live.id })).length, 1, 'a live listener stays');
  });

  it('getWebhookListeners: pages like every list (pageNumber, pageSize, sortDirection, sortBy); every team the caller belongs to, or one with teamId; 403 for a team of someone else', async () => {
    const other = await h.user();
    const stranger = await h.user();
    await h.services.accounts.addMember(other.teamId, u.email);
    const own: any[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await post(`${LISTENERS}?selectTeamId=${u.teamId}`, { eventTypes: ['video_out.done'] });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      own.push(res.body);
      h.clock.advance(1000);
    }
    const shared = await create(['video_in.done'], other);
    h.clock.advance(1000);
    await create(['video_in.done'], stranger);
    const ids = (res: any) => res.body.items.map((l: any) => l.id);

    const first = await get(`${LISTENERS}?pageSize=2`);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual({ ...first.body, items: undefined }, { pageNumber: 0, pageSize: 2, numberOfElements: 2, totalPages: 2, totalElements: 4, items: undefined });
    assert.deepEqual(first.body.items[0], own[0], 'an item is the listener as created');
    assert.deepEqual(ids(first), [own[0].id, own[1].id], 'createdAt ascending by default');
    const second = await get(`${LISTENERS}?pageSize=2&pageNumber=1`);
    assert.deepEqual(ids(second), [own[2].id, shared.id], "the team the caller joined is listed, the stranger's is not");
    const past = await get(`${LISTENERS}?pageSize=2&pageNumber=2`);
    assert.deepEqual([past.body.numberOfElements, past.body.totalElements, past.body.items], [0, 4, []]);
    assert.deepEqual(ids(await get(`${LISTENERS}?sortDirection=DESC`)), [shared.id, own[2].id, own[1].id, own[0].id]);

    // teamId: one team only; a team of someone else (or none) is 403 FORBIDDEN, as on every list.
    assert.deepEqual(ids(await get(`${LISTENERS}?teamId=${other.teamId}`)), [shared.id]);
    assert.deepEqual(
      ids(await get(`${LISTENERS}?teamId=${u.teamId}`)),
      own.map((l) => l.id),
    );
    expectError(await get(`${LISTENERS}?teamId=${stranger.teamId}`), 403, 'FORBIDDEN');
    expectError(await get(`${LISTENERS}?teamId=${randomUUID()}`), 403, 'FORBIDDEN');

    // sortBy=updatedAt orders by the last poll: the oldest listener, polled now, comes last.
    await polled(own[0].id);
    assert.deepEqual(ids(await get(`${LISTENERS}?teamId=${u.teamId}&sortBy=updatedAt`)), [own[1].id, own[2].id, own[0].id]);
    assert.deepEqual(
      ids(await get(`${LISTENERS}?teamId=${u.teamId}&sortBy=createdAt`)),
      own.map((l) => l.id),
    );

    expectError(await get(`${LISTENERS}?pageSize=101`), 400, 'VALIDATION_ERROR');
    expectError(await get(`${LISTENERS}?sortBy=expiresAt`), 400, 'VALIDATION_ERROR');
  });

  it("getWebhookListenerById: the listener as created; reading it neither polls (expiresAt stays) nor acknowledges; 404 for another team's, after delete, for an unknown id", async () => {
    const other = await h.user();
    const l = await create(['video_out.done', 'video_in.done']);
    const got = await get(`${LISTENERS}/${l.id}`);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.deepEqual(got.body, l);
    await record('video_out.done');
    const handed = await polled(l.id);
    assert.equal(handed.items.length, 1);
    h.clock.advance(MINUTE);
    const read = await get(`${LISTENERS}/${l.id}`);
    assert.equal(read.body.expiresAt, handed.expiresAt, 'a read does not move the expiry');
    assert.equal((await get(LISTENERS)).body.items[0].expiresAt, handed.expiresAt, 'nor does the list');
    const again = await polled(l.id);
    assert.deepEqual(
      again.items.map((d: any) => [d.sequence, d.eventId, JSON.parse(d.body).attemptCount]),
      [[1, handed.items[0].eventId, 2]],
      'a read acknowledged nothing: the delivery comes again',
    );
    expectError(await get(`${LISTENERS}/${l.id}`, other), 404, 'RESOURCE_NOT_FOUND');
    assert.deepEqual((await get(LISTENERS, other)).body.items, [], "another team's listener is not listed");
    assert.equal((await del(`${LISTENERS}/${l.id}`)).status, 204);
    expectError(await get(`${LISTENERS}/${l.id}`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await get(`${LISTENERS}/${randomUUID()}`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await get(`${LISTENERS}/not-a-uuid`), 400, 'VALIDATION_ERROR');
  });

  it('expired listeners (injected clock): gone from the list and 404 by id at 5 minutes after the last poll, before the periodic task deletes them; their places are free again', async () => {
    const kept = await create();
    const lost: string[] = [];
    for (let i = 0; i < 4; i++) lost.push((await create()).id);
    expectError(await post(LISTENERS, { eventTypes: ['video_out.done'] }), 409, 'MAXIMUM_AMOUNT_OF_WEBHOOK_LISTENERS_REACHED');
    // The client lost the ids: the list finds all 5.
    assert.equal((await get(LISTENERS)).body.totalElements, 5);
    h.clock.advance(4 * MINUTE);
    await polled(kept.id);
    h.clock.advance(MINUTE - 1);
    assert.equal((await get(LISTENERS)).body.totalElements, 5, 'one millisecond before the expiry all are live');
    assert.equal((await get(`${LISTENERS}/${lost[0]}`)).status, 200);
    h.clock.advance(1);
    const page = await get(LISTENERS);
    assert.deepEqual([page.body.totalElements, page.body.items.map((l: any) => l.id)], [1, [kept.id]], 'the listeners not polled for 5 minutes are not listed');
    for (const id of lost) expectError(await get(`${LISTENERS}/${id}`), 404, 'RESOURCE_NOT_FOUND');
    assert.equal((await h.database.db('webhook_listeners').whereIn('id', lost)).length, 4, 'still rows: the periodic task has not run');
    for (let i = 0; i < 4; i++) await create();
    assert.equal((await get(LISTENERS)).body.totalElements, 5);
  });

  it("404 for another team's listener (poll and delete), after delete, and for an unknown id", async () => {
    const other = await h.user();
    const l = await create();
    await record('video_out.done');
    expectError(await poll(l.id, {}, other), 404, 'RESOURCE_NOT_FOUND');
    expectError(await del(`${LISTENERS}/${l.id}`, other), 404, 'RESOURCE_NOT_FOUND');
    assert.equal((await polled(l.id)).items.length, 1, 'untouched by the other team');
    assert.equal((await del(`${LISTENERS}/${l.id}`)).status, 204);
    expectError(await poll(l.id), 404, 'RESOURCE_NOT_FOUND');
    expectError(await del(`${LISTENERS}/${l.id}`), 404, 'RESOURCE_NOT_FOUND');
    assert.equal((await h.database.db('webhook_listener_deliveries').where({ listener_id: l.id })).length, 0, 'its deliveries went with it');
    expectError(await poll(randomUUID()), 404, 'RESOURCE_NOT_FOUND');
  });

  it('selectTeamId: a listener of a team the user belongs to; 403 for a team of someone else', async () => {
    const other = await h.user();
    const res = await post(`${LISTENERS}?selectTeamId=${other.teamId}`, { eventTypes: ['video_out.done'] });
    expectError(res, 403, 'FORBIDDEN');
    const own = await post(`${LISTENERS}?selectTeamId=${u.teamId}`, { eventTypes: ['video_out.done'] });
    assert.equal(own.status, 201);
    assert.equal(own.body.teamId, u.teamId);
  });

  it('validation: empty eventTypes, an unknown type, a repeated type, no body, waitSeconds 26 and a negative after are 400', async () => {
    expectError(await post(LISTENERS, { eventTypes: [] }), 400, 'VALIDATION_ERROR');
    expectError(await post(LISTENERS, { eventTypes: ['video.exploded'] }), 400, 'VALIDATION_ERROR');
    expectError(await post(LISTENERS, { eventTypes: ['video_out.done', 'video_out.done'] }), 400, 'VALIDATION_ERROR');
    expectError(await post(LISTENERS, { eventTypes: ['video_out.done'], url: 'https://example.com' }), 400, 'VALIDATION_ERROR');
    expectError(await post(LISTENERS), 400, 'MISSING_REQUEST_BODY');
    const l = await create();
    expectError(await get(`${LISTENERS}/${l.id}/deliveries?waitSeconds=26`), 400, 'VALIDATION_ERROR');
    expectError(await get(`${LISTENERS}/${l.id}/deliveries?after=-1`), 400, 'VALIDATION_ERROR');
    expectError(await get(`${LISTENERS}/not-a-uuid/deliveries`), 400, 'VALIDATION_ERROR');
  });

  describe('events recorded by a worker job', () => {
    let server: RangeServer;
    before(async () => {
      server = await startRangeServer();
    });
    after(() => server.close());

    it('video in on a worker: video_in.started and video_in.done reach a waiting listener', async () => {
      await h.close();
      h = await createHarness({ allowPrivateUrls: true, extraCa: [server.ca] });
      u = await h.user();
      await setFreeClipEnabled(h.database.db, u.teamId, false);
      const l = await create(['video_in.started', 'video_in.done']);
      server.serve('/media/listener.mp4', Buffer.alloc(64 * 1024, 5));
      const res = await post('/v1/videos/in/https', { name: 'Listened', url: `${server.origin}/media/listener.mp4` });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      h.startWorker();
      const seen: any[] = [];
      let after = 0;
      const deadline = Date.now() + 30_000;
      while (seen.length < 2 && Date.now() < deadline) {
        const { items } = await polled(l.id, { after, waitSeconds: 5 });
        for (const d of items) seen.push(d);
        if (items.length) after = items[items.length - 1].sequence;
      }
      assert.deepEqual(
        seen.map((d) => d.eventType),
        ['video_in.started', 'video_in.done'],
      );
      for (const d of seen) assert.equal(JSON.parse(d.body).data.videoId, res.body.videoId);
    });
  });
});
