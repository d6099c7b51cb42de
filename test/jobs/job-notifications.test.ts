/**
 * Job pickup across processes on PostgreSQL (issue 28): a job enqueued through one pool wakes a
 * worker listening through another pool (another process's connections) at the commit, not
 * before and not after a rollback; the worker polls only once a minute on a stopped test clock,
 * so only the notification can make it run the job.
 */
import { strict as assert } from 'node:assert';
import pino from 'pino';
import { openDatabase, type Db } from '../../src/db/database';
import { JobNotifications, listenForJobs } from '../../src/jobs/job-notifications';
import { JobQueue } from '../../src/jobs/job-queue';
import { Worker } from '../../src/jobs/worker';
import { ManualClock } from '../../src/shared/clock';
import { createTestDatabase, TEST_DIALECT, TestDatabase } from '../helpers/database';
import { waitFor } from '../helpers/scenario';
import { scaledBelow } from '../helpers/timeouts';

const log = pino({ level: process.env.VIDMILL_TEST_LOG ?? 'silent' });
const settle = (ms = 100) => new Promise((r) => setTimeout(r, ms));

describe(`Job notifications across pools (${TEST_DIALECT})`, function () {
  let database: TestDatabase;
  let other: Db;
  let notifications: JobNotifications;

  before(async function () {
    if (TEST_DIALECT !== 'postgres') return this.skip(); // one process on SQLite: nothing to listen to
    database = await createTestDatabase();
    other = openDatabase(database.config);
    notifications = listenForJobs(other, log);
    await notifications.ready();
  });
  after(async () => {
    await notifications?.close();
    await other?.destroy();
    await database?.drop();
  });

  it('a job enqueued in a transaction of another pool is heard at its commit, never after a rollback', async () => {
    const queue = new JobQueue(database.db, new ManualClock('2026-03-01T12:00:00Z'));
    const heard: string[] = [];
    const unsubscribe = notifications.subscribe((kind) => heard.push(kind));
    try {
      await database.db
        .transaction(async (trx) => {
          await queue.enqueue(trx, { kind: 'notify.rolled-back', payload: {} });
          throw new Error('rollback');
        })
        .catch(() => undefined);
      await database.db.transaction(async (trx) => {
        await queue.enqueue(trx, { kind: 'notify.committed', payload: {} });
        await settle();
        assert.deepEqual(heard, [], 'not before the commit');
      });
      await waitFor('the notification', () => (heard.length ? true : undefined), { timeoutMs: 5_000, intervalMs: 5 });
      await settle();
      assert.deepEqual(heard, ['notify.committed']);
    } finally {
      unsubscribe();
      await database.db('jobs').where('kind', 'like', 'notify.%').delete();
    }
  });

  it('wakes a worker of the other pool at once; its poll (a minute, on a stopped clock) would not', async () => {
    const clock = new ManualClock('2026-03-01T12:00:00Z');
    const api = new JobQueue(database.db, clock);
    const ran: string[] = [];
    const worker = new Worker(new JobQueue(other, clock), { workerId: 'listening', log, pollMs: 60_000, sweepLeases: false })
      .define<{ n: number }>({ kind: 'notify.pickup', run: async ({ n }) => void ran.push(`job ${n}`) })
      .wakeOn(notifications.subscribe);
    worker.start();
    try {
      await waitFor('the worker sleeps', () => (worker.status === 'running' ? true : undefined));
      await settle();
      const started = Date.now();
      await database.db.transaction((trx) => api.enqueue(trx, { kind: 'notify.pickup', payload: { n: 1 } }));
      await waitFor('the job ran', () => (ran.length ? true : undefined), { timeoutMs: 5_000, intervalMs: 2 });
      assert.deepEqual(ran, ['job 1']);
      assert.ok(Date.now() - started < scaledBelow(2_000, 30_000), `picked up in ${Date.now() - started} ms`);
    } finally {
      await worker.stop({ graceMs: 0 });
      await database.db('jobs').where('kind', 'like', 'notify.%').delete();
    }
  });
});
