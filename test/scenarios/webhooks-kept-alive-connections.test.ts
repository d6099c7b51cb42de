// test-databases: one
/**
 * Webhook deliveries over kept-alive connections (docs/webhooks.md, "Delivery"): a receiver may
 * close an idle connection (its keep-alive timeout) just as the next delivery reuses it. A reset
 * on a reused connection before any answer means the request was not read: the delivery goes
 * again at once on another connection, as the same attempt. A reset on a new connection is a
 * failed attempt as before. The SQL is the delivery store's, tested on both databases by
 * webhooks-delivery.test.ts.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { DeliveryWorker, recordEvent } from '../../src/features/webhooks';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { Receiver, startReceiver } from '../helpers/webhook-receiver';

describe(`Webhook delivery over kept-alive connections (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  let receiver: Receiver;
  let worker: DeliveryWorker;

  const emit = async () => {
    const [delivery] = await h.services.db.transaction((trx) => recordEvent(trx, { teamId: u.teamId, eventType: 'video_in.done', videoId: randomUUID(), occurredAt: h.clock.now() }));
    return delivery!.id;
  };
  const event = async (id: string) => (await h.request.get(`/api/v1/webhooks/events/${id}`).set('X-API-Key', u.apiKey)).body;

  before(async () => {
    h = await createHarness({ allowPrivateUrls: true });
    u = await h.user();
    receiver = await startReceiver({ now: () => h.clock.now(), fetchKey: async (id: string) => (await h.request.get(`/api/v1/webhooks/public-keys/${id}`).set('X-API-Key', u.apiKey)).body.publicKey });
    worker = new DeliveryWorker({ db: h.services.db, clock: h.clock, signingKeys: h.services.signingKeys, policy: { allowPrivateUrls: true }, log: pino({ level: 'silent' }) }, { random: () => 0.5 });
    const res = await h.request
      .post('/api/v1/webhooks')
      .set('X-API-Key', u.apiKey)
      .send({ name: 'Kept alive', url: receiver.url, eventTypes: ['video_in.done'], active: true });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  });
  after(async () => {
    await worker.stop();
    await receiver.close();
    await h.close();
  });

  it('a reset on a kept-alive connection before any answer is not a failed attempt: the request goes again at once on a new connection', async () => {
    await emit();
    await worker.drain();
    assert.equal(receiver.received.length, 1);
    const first = receiver.received[0]!;
    // the next request comes on the same connection; the receiver resets it as if it had closed it while idle
    receiver.answer((r) => (r.connection === first.connection ? { reset: true } : { status: 200, body: 'ok' }));
    const id = await emit();
    await worker.drain();
    assert.equal(receiver.received.length, 3);
    const [lost, resent] = receiver.received.slice(1);
    assert.equal(lost!.connection, first.connection, 'the delivery reused the kept-alive connection');
    assert.notEqual(resent!.connection, first.connection);
    assert.ok(resent!.verified, resent!.verifyError);
    assert.equal(resent!.body, lost!.body, 'the same attempt: same payload and attemptCount');
    assert.equal(resent!.headers['x-vidmill-signature'], lost!.headers['x-vidmill-signature']);
    const e = await event(id);
    assert.equal(e.successful, true);
    assert.equal(e.responses.length, 1, 'one attempt recorded');
    assert.equal(e.responses[0].statusCode, 200);
  });

  it('a reset on a new connection is a failed attempt (WEBHOOK_NETWORK_ERROR), and the resends of one attempt are bounded', async () => {
    receiver.answer(() => ({ reset: true }));
    const before = receiver.received.length;
    const id = await emit();
    await worker.drain();
    // the kept-alive connection (reset), then a new one (reset): the attempt fails
    const sent = receiver.received.slice(before);
    assert.ok(sent.length >= 2 && sent.length <= 3, `sent ${sent.length} times`);
    const e = await event(id);
    assert.equal(e.successful, null, 'not decided: a retry is scheduled');
    assert.ok(e.nextAttemptEarliestAt);
    assert.equal(e.responses.length, 1);
    assert.equal(e.responses[0].statusCode, 0);
    assert.equal(e.responses[0].errorCode, 'WEBHOOK_NETWORK_ERROR');
  });
});
