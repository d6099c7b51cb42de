/**
 * `npm run bench -- pickup` (issue 28): enqueue-to-start of a job enqueued by one process (this
 * one, as an API process does: a transaction with the enqueue) and run by a worker in another
 * process (bench/pickup-worker.ts), on PostgreSQL (VIDMILL_TEST_PG_URL, an admin URL; a fresh
 * database per run). Two worker modes in the same run: woken by LISTEN/NOTIFY (what main.ts
 * does on PostgreSQL), and the baseline, polling every 2 s (VIDMILL_WORKER_POLL_MS's default,
 * what every worker did before). Jobs are enqueued one at a time at random gaps (20-60 ms
 * notified, 100-400 ms polled), each timed from before its transaction to the worker's start.
 * Target: notified p50 < 50 ms; printed: p50 and p99 of both and their ratio.
 */
import path from 'node:path';
import { createInterface } from 'node:readline';
import { openDatabase } from '../src/db/database';
import { JobQueue } from '../src/jobs/job-queue';
import { systemClock } from '../src/shared/clock';
import { benchDatabase, printTable, ROOT, sleep, spawnTracked, stopChild } from './lib';

const TARGET_P50_MS = 50;

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Per job: from before the enqueuing transaction to its commit (the API side's share). */
const commitMs: number[] = [];

async function measure(url: string, mode: { notify: boolean; jobs: number; gapMs: [number, number] }): Promise<number[]> {
  const child = spawnTracked(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/pickup-worker.ts')], {
    cwd: ROOT,
    env: { ...process.env, PICKUP_PG_URL: url, PICKUP_NOTIFY: mode.notify ? '1' : '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const started = new Map<number, number>();
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line === 'ready') return ready();
    const { n, at } = JSON.parse(line) as { n: number; at: number };
    started.set(n, at);
  });
  await isReady;
  const db = openDatabase({ client: 'pg', connectionString: url });
  const queue = new JobQueue(db, systemClock);
  const enqueuedAt = new Map<number, number>();
  try {
    await sleep(300);
    for (let n = 0; n < mode.jobs; n++) {
      const at = Date.now();
      enqueuedAt.set(n, at);
      await db.transaction((trx) => queue.enqueue(trx, { kind: 'bench.pickup', payload: { n } }));
      commitMs.push(Date.now() - at);
      await sleep(mode.gapMs[0] + Math.random() * (mode.gapMs[1] - mode.gapMs[0]));
    }
    const deadline = Date.now() + 10_000;
    while (started.size < mode.jobs && Date.now() < deadline) await sleep(20);
    if (started.size < mode.jobs) throw new Error(`only ${started.size} of ${mode.jobs} jobs started`);
  } finally {
    await stopChild(child);
    await db.destroy();
  }
  return [...enqueuedAt].map(([n, at]) => started.get(n)! - at);
}

export async function pickupBenchmark(): Promise<boolean> {
  const database = await benchDatabase('pickup');
  const url = new URL(database.url);
  try {
    const notified = await measure(url.toString(), { notify: true, jobs: 200, gapMs: [20, 60] });
    const commits = commitMs.splice(0);
    const polled = await measure(url.toString(), { notify: false, jobs: 20, gapMs: [100, 400] });
    const row = (mode: string, xs: number[]) => ({ mode, jobs: xs.length, 'p50 ms': percentile(xs, 50), 'p99 ms': percentile(xs, 99), 'max ms': Math.max(...xs) });
    console.log('\n== pickup (PostgreSQL, API process -> worker process) ==');
    printTable([row('LISTEN/NOTIFY', notified), row('poll 2 s (baseline)', polled)]);
    console.log(`note: the enqueuing transaction itself (begin, insert, notify, commit) took p50 ${percentile(commits, 50)} ms, p99 ${percentile(commits, 99)} ms of it`);
    const p50 = percentile(notified, 50);
    console.log(`notified p50 / polled p50               ${(p50 / percentile(polled, 50)).toFixed(3)}x  (info)`);
    console.log(`notified p99 / polled p99               ${(percentile(notified, 99) / percentile(polled, 99)).toFixed(3)}x  (info)`);
    const pass = p50 < TARGET_P50_MS;
    console.log(`notified enqueue-to-start p50           ${p50} ms  (target < ${TARGET_P50_MS} ms)  ${pass ? 'PASS' : 'FAIL'}`);
    return pass;
  } finally {
    await database.drop();
  }
}
