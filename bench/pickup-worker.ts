/**
 * The worker process of `npm run bench -- pickup`: a Worker on PICKUP_PG_URL that runs
 * `bench.pickup` jobs and prints when each started (`{"n":..,"at":..}` per line, wall time).
 * PICKUP_NOTIFY=1 wakes it with the LISTEN/NOTIFY of src/jobs/job-notifications.ts, as main.ts
 * does; otherwise it finds jobs by polling every PICKUP_POLL_MS (default 2000, the default of
 * VIDMILL_WORKER_POLL_MS).
 */
import pino from 'pino';
import { openDatabase } from '../src/db/database';
import { listenForJobs } from '../src/jobs/job-notifications';
import { JobQueue } from '../src/jobs/job-queue';
import { Worker } from '../src/jobs/worker';
import { systemClock } from '../src/shared/clock';

async function main(): Promise<void> {
  const db = openDatabase({ client: 'pg', connectionString: process.env.PICKUP_PG_URL! });
  const log = pino({ level: 'warn' });
  const worker = new Worker(new JobQueue(db, systemClock), { workerId: 'pickup-bench', log, concurrency: 4, pollMs: Number(process.env.PICKUP_POLL_MS ?? 2000) });
  worker.define<{ n: number }>({ kind: 'bench.pickup', run: async ({ n }) => void process.stdout.write(`${JSON.stringify({ n, at: Date.now() })}\n`) });
  const notifications = process.env.PICKUP_NOTIFY === '1' ? listenForJobs(db, log) : undefined;
  if (notifications) {
    worker.wakeOn(notifications.subscribe);
    await notifications.ready();
  }
  worker.start();
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => {
    void (async () => {
      await worker.stop({ graceMs: 1000 });
      await notifications?.close();
      await db.destroy();
      process.exit(0);
    })();
  });
}

void main();
