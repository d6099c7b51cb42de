/**
 * DeliveryWorker on the loop runtime: stop() waits for sends in flight up to its grace, then
 * hands their leases back (the delivery is due again at once, no attempt recorded), and a
 * delivery loop stopped within its grace records the attempt as usual.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { DeliveryWorker, recordEvent } from '../../src/features/webhooks';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { Receiver, startReceiver } from '../helpers/webhook-receiver';
import { waitFor } from '../helpers/scenario';
import { scaledBelow } from '../helpers/timeouts';

describe(`Webhook delivery stop (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  let receiver: Receiver;

  before(async () => {
    h = await createHarness({ allowPrivateUrls: true });
  });
  after(async () => {
    await h.close();
  });
  beforeEach(async () => {
    u = await h.user();
    receiver = await startReceiver({ fetchKey: async () => undefined });
    const res = await h.request
      .post('/api/v1/webhooks')
      .set('X-API-Key', u.apiKey)
      .send({ name: 'Receiver', url: receiver.url, eventTypes: ['video_processing.done'], active: true });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  });
  afterEach(async () => {
    await receiver.close();
  });

  const worker = () =>
    new DeliveryWorker(
      { db: h.services.db, clock: h.clock, signingKeys: h.services.signingKeys, policy: { allowPrivateUrls: true }, log: pino({ level: 'silent' }) },
      { random: () => 0.5, pollMs: 20 },
    );
  const emit = async () =>
    (await h.services.db.transaction((trx) => recordEvent(trx, { teamId: u.teamId, eventType: 'video_processing.done', videoId: randomUUID(), occurredAt: h.clock.now() })))[0]!.id;
  const row = (id: string) => h.services.db('webhook_deliveries').where({ id }).first();
  const attempts = async (id: string) => Number((await h.services.db('webhook_delivery_attempts').where({ delivery_id: id }).count({ n: '*' }))[0]!.n);

  it('past its grace, stop() hands the lease of a send in flight back: pending, unleased, no attempt recorded', async () => {
    receiver.answer(() => ({ status: 200, delayMs: 5_000 }));
    const w = worker();
    const id = await emit();
    w.start();
    await waitFor('the request arrived', () => (receiver.received.length === 1 ? true : undefined));
    assert.ok((await row(id)).lease_owner, 'leased while sending');
    const started = Date.now();
    await w.stop({ graceMs: 100 });
    assert.ok(Date.now() - started < scaledBelow(2_000, 4_000), `stop() kept its grace (${Date.now() - started} ms)`);
    assert.equal(w.status, 'stopped');
    const after = await row(id);
    assert.equal(after.status, 'pending');
    assert.equal(after.lease_owner, null);
    assert.equal(await attempts(id), 0);
  });

  it('within its grace, stop() lets the send finish and records it', async () => {
    receiver.answer(() => ({ status: 200, delayMs: 200 }));
    const w = worker();
    const id = await emit();
    w.start();
    await waitFor('the request arrived', () => (receiver.received.length === 1 ? true : undefined));
    const stopping = w.stop({ graceMs: 10_000 });
    assert.equal(w.status, 'stopping');
    await stopping;
    assert.equal((await row(id)).status, 'succeeded');
    assert.equal(await attempts(id), 1);
  });
});
