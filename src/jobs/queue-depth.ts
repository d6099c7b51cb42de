/**
 * The queue as metrics read it at scrape time: jobs per kind and state (queued, running,
 * failed), and per kind the wait of the oldest due queued job. Two grouped queries on the
 * `(status, run_at)` index; on PostgreSQL they run under a statement timeout, so a scrape cannot
 * hold a connection for long whatever the table's size. The endpoint caches the answer
 * (src/http/metrics-endpoint.ts), so scrapes do not reach the database more than once per
 * cache period per process.
 */
import type { Knex } from 'knex';
import { asDate, isPostgres } from '../db/database';
import { transactional } from '../db/transactional';

export const COUNTED_STATES = ['queued', 'running', 'failed'] as const;
export type CountedState = (typeof COUNTED_STATES)[number];

export interface QueueDepth {
  counts: { kind: string; state: CountedState; jobs: number }[];
  /** Per kind with a due queued job: seconds since the oldest one became due. */
  oldestQueuedAgeSeconds: Map<string, number>;
}

/** Longest a scrape's queries may run on PostgreSQL. */
const STATEMENT_TIMEOUT_MS = 2_000;

export async function readQueueDepth(db: Knex, now: Date): Promise<QueueDepth> {
  const read = async (q: Knex) => {
    const countRows = await q('jobs').whereIn('status', COUNTED_STATES).groupBy('kind', 'status').select('kind', 'status').count({ n: '*' });
    const counts = countRows as unknown as { kind: string; status: CountedState; n: number | string }[];
    const oldestRows = await q('jobs').where('status', 'queued').andWhere('run_at', '<=', now).groupBy('kind').select('kind').min({ oldest: 'run_at' });
    const oldest = oldestRows as unknown as { kind: string; oldest: unknown }[];
    return {
      counts: counts.map((r) => ({ kind: r.kind, state: r.status, jobs: Number(r.n) })),
      oldestQueuedAgeSeconds: new Map(oldest.map((r) => [r.kind, Math.max(0, (now.getTime() - asDate(r.oldest).getTime()) / 1000)])),
    };
  };
  if (!isPostgres(db)) return read(db);
  // The free `transactional`, allowed in src/jobs/ only (vidmill/one-way): a read of the queue
  // for the metrics endpoint, with no service to own it; the transaction only scopes the
  // `set local` to these two queries.
  return transactional(db, async (trx) => {
    await trx.raw(`set local statement_timeout = ${STATEMENT_TIMEOUT_MS}`);
    return read(trx);
  });
}
