import { strict as assert } from 'node:assert';
import pino from 'pino';
import { createPeriodicTasks } from '../../src/composition';
import { PeriodicTask } from '../../src/jobs/periodic-task';
import { createHarness, Harness } from '../helpers/harness';
import { TEST_DIALECT } from '../helpers/database';

const log = pino({ level: process.env.VIDMILL_TEST_LOG ?? 'silent' });

async function waitFor(what: string, probe: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('PeriodicTask loop', () => {
  it('runs its definition at once and again after intervalMs; stop() waits for the run in flight', async () => {
    let runs = 0;
    let release: () => void = () => undefined;
    const task = new PeriodicTask(
      {
        name: 'test',
        intervalMs: 10,
        run: async (l) => {
          assert.equal(l, log, "the run gets the loop's logger");
          runs++;
          if (runs === 3) await new Promise<void>((r) => (release = r));
        },
      },
      { log },
    );
    assert.equal(task.status, 'idle');
    task.start();
    await waitFor('three runs', () => runs === 3);
    const stopping = task.stop();
    assert.equal(task.status, 'stopping');
    release();
    await stopping;
    assert.equal(task.status, 'stopped');
    assert.equal(runs, 3, 'no run after stop()');
  });

  it('keeps running after a failed run (backed off) and notify() runs it early', async () => {
    let runs = 0;
    const task = new PeriodicTask(
      {
        name: 'flaky',
        intervalMs: 60_000,
        run: async () => {
          runs++;
          if (runs === 1) throw new Error('boom');
        },
      },
      { log, maxBackoffMs: 60_000 },
    );
    task.start();
    await waitFor('first run', () => runs === 1);
    // The back-off after the failure is a minute: only notify() brings the next run now.
    task.notify();
    await waitFor('second run', () => runs === 2);
    await task.stop();
  });
});

describe(`Periodic tasks of the composition root (${TEST_DIALECT})`, () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(async () => {
    await h.close();
  });

  it("lists every feature's tasks and the HTTP layer's purges once each", () => {
    const names = createPeriodicTasks(h.services).map((t) => t.name);
    assert.deepEqual([...names].sort(), [
      'api-key-idle-sweep',
      'appraisal-sweep',
      'billing-periods',
      'download-billing',
      'idempotency-key-purge',
      'processing-segment-sweep',
      'rate-limit-sweep',
      'storage-billing',
      'upload-expiry',
      'webhook-history-sweep',
      'webhook-key-rotation',
      'webhook-listener-expiry',
    ]);
  });

  it('every task runs once on a fresh database without failing', async () => {
    for (const t of createPeriodicTasks(h.services)) await t.run(log);
  });
});
