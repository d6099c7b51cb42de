/**
 * The durable job queue: one `jobs` row per unit of background work (copy-in, ingest, clip,
 * process, copy-out, webhook delivery, sweeps).
 *
 * - `enqueue(trx, ...)` inserts inside the caller's transaction, so a domain write and the work
 *   it causes commit (or roll back) together. Local listeners (`onEnqueue`) are told after the
 *   commit, so an in-process worker wakes at once; on PostgreSQL a NOTIFY in the same
 *   transaction wakes the workers of other processes at commit (./job-notifications.ts), and
 *   polling stays the fallback.
 * - `claim()` is ONE guarded `UPDATE ... RETURNING` (the leased-rows claim shared with webhook
 *   deliveries, `./leased-rows.ts`): `FOR UPDATE SKIP LOCKED` on PostgreSQL; on SQLite the
 *   statement takes the database's write lock, so it is atomic as well. The row moves
 *   `queued -> running` with a fresh lease token in `lease_owner` and `attempts + 1`.
 * - Every later write by the holder (`heartbeat`, `complete`, `fail`, `release`) is guarded by
 *   `status = 'running' AND lease_owner = <token>`; a holder whose lease was swept (and perhaps
 *   re-claimed by another worker) is refused, so a job never has two owners.
 * - `fail()` retries with capped exponential back-off and jitter until `max_attempts`, then the
 *   job is `failed`. `sweepExpiredLeases()` is the takeover: it requeues running jobs whose lease
 *   expired (a crashed or stalled worker), or fails them when their attempts are used up. Workers
 *   run it as soon as `nextLeaseExpiry()` has passed (src/jobs/worker.ts).
 *
 * Time comes from the injected clock, never from the database server.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { asDate, asOptionalDate, Db, isPostgres } from '../db/database';
import type { Clock } from '../shared/clock';
import { transactional } from '../db/transactional';
import { afterCommit } from '../db/after-commit';
import { announceAtCommit } from './job-notifications';
import type { DbInt, DbTimestamp, Nullable } from '../db/store';
import { backoffMs } from './backoff';
import { recordLeaseTakeovers } from '../shared/metrics';
import { claimLeasedRows, LeasedTable, leaseToken, whereLeaseHeld } from './leased-rows';

export type JobStatus = 'queued' | 'running' | 'done' | 'failed';

export interface Job<P = unknown> {
  id: string;
  kind: string;
  payload: P;
  status: JobStatus;
  runAt: Date;
  attempts: number;
  maxAttempts: number;
  lastError?: string;
  /** The lease token of the current holder: `<workerId>#<random>`, unique per claim. */
  leaseOwner?: string;
  leaseExpiresAt?: Date;
  createdAt: Date;
  updatedAt: Date;
}

/** A job as returned by `claim()`: running, with a lease. */
export interface ClaimedJob<P = unknown> extends Job<P> {
  status: 'running';
  leaseOwner: string;
  leaseExpiresAt: Date;
}

export interface NewJob {
  kind: string;
  payload: unknown;
  /** Not before this instant; default now. */
  runAt?: Date;
  /** Default: the queue's `defaultMaxAttempts`. */
  maxAttempts?: number;
}

export interface RetryPolicy {
  /** Delay before the second attempt; doubles with every attempt. */
  baseMs: number;
  /** Upper bound of the delay. */
  maxMs: number;
}

export interface JobQueueOptions {
  defaultMaxAttempts?: number;
  retry?: RetryPolicy;
  /** Source of jitter in [0, 1); injected by tests. */
  random?: () => number;
}

/** What one `sweepExpiredLeases()` took over. */
export interface LeaseSweep {
  /** Jobs queued again for any worker (attempts were left). */
  requeued: number;
  /** Jobs failed because their worker was lost on their last attempt. */
  failed: number;
  /** The ids of both. */
  jobIds: string[];
}

export const MAX_KIND_LENGTH = 64;
const ERROR_TEXT_LIMIT = 4000;

/** `jobs` as leased rows: queued ones are claimable when `run_at` is due; a claim makes them running and counts the attempt. */
const JOB_LEASES: LeasedTable = {
  table: 'jobs',
  leaseOwnerLength: 200,
  dueColumn: 'run_at',
  orderBy: ['run_at', 'id'],
  claimable: (q) => {
    q.where('status', 'queued');
  },
  claimedColumns: (db, now) => ({ status: 'running', attempts: db.raw('attempts + 1'), updated_at: now }),
  held: (q) => {
    q.where('status', 'running');
  },
};

/** A `jobs` row as stored. */
interface JobRow {
  id: string;
  kind: string;
  /** JSON text. */
  payload: string;
  status: JobStatus;
  run_at: DbTimestamp;
  attempts: DbInt;
  max_attempts: DbInt;
  last_error: Nullable<string>;
  lease_owner: Nullable<string>;
  lease_expires_at: Nullable<DbTimestamp>;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

export class JobQueue {
  readonly defaultMaxAttempts: number;
  readonly retry: RetryPolicy;
  private readonly random: () => number;
  private readonly listeners = new Set<(kind: string) => void>();

  constructor(
    private readonly db: Db,
    readonly clock: Clock,
    opts: JobQueueOptions = {},
  ) {
    this.defaultMaxAttempts = opts.defaultMaxAttempts ?? 5;
    this.retry = opts.retry ?? { baseMs: 5_000, maxMs: 10 * 60_000 };
    this.random = opts.random ?? Math.random;
  }

  /** Called (after commit) for every job enqueued through this queue object. */
  onEnqueue(listener: (kind: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Inserts a queued job with `trx` (a transaction or the db itself). Listeners hear of it once
   * the transaction commits; nothing is heard when it rolls back.
   */
  async enqueue(trx: Knex | Knex.Transaction, job: NewJob): Promise<string> {
    if (!job.kind || job.kind.length > MAX_KIND_LENGTH) throw new Error(`job kind must be 1..${MAX_KIND_LENGTH} characters`);
    const maxAttempts = job.maxAttempts ?? this.defaultMaxAttempts;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new Error('maxAttempts must be a positive integer');
    const now = this.clock.now();
    const id = randomUUID();
    await trx('jobs').insert({
      id,
      kind: job.kind,
      payload: JSON.stringify(job.payload ?? null),
      status: 'queued',
      run_at: job.runAt ?? now,
      attempts: 0,
      max_attempts: maxAttempts,
      last_error: null,
      lease_owner: null,
      lease_expires_at: null,
      created_at: now,
      updated_at: now,
    });
    // Workers of other processes: PostgreSQL delivers the notification at commit, never after a
    // rollback (./job-notifications.ts); they poll as well.
    await announceAtCommit(trx, job.kind);
    // Once the outermost transaction commits (never when it or a savepoint between rolls back).
    afterCommit(trx, () => this.listeners.forEach((l) => l(job.kind)));
    return id;
  }

  /**
   * Takes the next due queued job of one of `kinds` (oldest `run_at` first) with a lease of
   * `leaseMs`, or undefined when none is due. Safe under any number of concurrent claimers.
   */
  async claim<P = unknown>(workerId: string, kinds: readonly string[], leaseMs: number): Promise<ClaimedJob<P> | undefined> {
    if (kinds.length === 0) return undefined;
    const [row] = await claimLeasedRows<JobRow>(this.db, JOB_LEASES, {
      token: leaseToken(JOB_LEASES, workerId),
      now: this.clock.now(),
      leaseMs,
      limit: 1,
      filter: (q) => {
        q.whereIn('kind', kinds);
      },
    });
    return row ? (toJob(row) as ClaimedJob<P>) : undefined;
  }

  /**
   * Extends the lease to now + `leaseMs` while `job` still holds it (running, same token, not
   * yet expired). False means the lease is lost: stop working on the job.
   */
  async heartbeat(job: ClaimedJob<unknown>, leaseMs: number): Promise<boolean> {
    const now = this.clock.now();
    const expires = new Date(now.getTime() + leaseMs);
    const n = await this.held(job, now).update({ lease_expires_at: expires, updated_at: now });
    if (n === 1) job.leaseExpiresAt = expires;
    return n === 1;
  }

  /** Marks the job done. False when the lease was lost (the result must not count). */
  async complete(job: ClaimedJob<unknown>, trx: Knex | Knex.Transaction = this.db): Promise<boolean> {
    const now = this.clock.now();
    const n = await this.held(job, now, trx).update({ status: 'done', lease_owner: null, lease_expires_at: null, last_error: null, updated_at: now });
    return n === 1;
  }

  /**
   * Records a failed attempt: requeued after a back-off while attempts remain (and the error is
   * not `permanent`), else `failed`. Returns the new state, or 'lease-lost' when refused.
   */
  async fail(job: ClaimedJob<unknown>, error: unknown, opts: { permanent?: boolean } = {}): Promise<'queued' | 'failed' | 'lease-lost'> {
    const now = this.clock.now();
    const lastError = errorText(error);
    const final = opts.permanent || job.attempts >= job.maxAttempts;
    const n = await this.held(job, now).update(
      final
        ? { status: 'failed', lease_owner: null, lease_expires_at: null, last_error: lastError, updated_at: now }
        : {
            status: 'queued',
            lease_owner: null,
            lease_expires_at: null,
            last_error: lastError,
            run_at: new Date(now.getTime() + this.backoffMs(job.attempts)),
            updated_at: now,
          },
    );
    if (n !== 1) return 'lease-lost';
    return final ? 'failed' : 'queued';
  }

  /**
   * Hands a claimed job back untouched (orderly shutdown): queued again at once, and the attempt
   * does not count. False when the lease was already lost.
   */
  async release(job: ClaimedJob<unknown>): Promise<boolean> {
    const now = this.clock.now();
    const n = await whereLeaseHeld(this.db, JOB_LEASES, job.id, job.leaseOwner).update({
      status: 'queued',
      lease_owner: null,
      lease_expires_at: null,
      run_at: now,
      attempts: this.db.raw('attempts - 1'),
      updated_at: now,
    });
    return n === 1;
  }

  /**
   * THE TAKEOVER: the one place where jobs leave a holder whose lease expired (its worker was
   * killed, lost or stalled past its lease). Each such running job is requeued at once (due now,
   * for any worker to claim), or failed when its attempts are used up: a job lost on its last
   * attempt is not run again. `onGiveUp` runs in the transaction that fails such jobs, so the
   * domain state they leave (a copy IN_PROGRESS) is marked failed with them or not at all.
   * Returns the jobs taken over: `requeued` and `failed` count them, `jobIds` names them.
   * Cheap when nothing expired: one indexed read of the running rows (`status` leads the index).
   */
  async sweepExpiredLeases(onGiveUp?: (trx: Knex.Transaction, jobs: Job[]) => Promise<void>): Promise<LeaseSweep> {
    const now = this.clock.now();
    const expired = (db: Knex) => db<JobRow>('jobs').where('status', 'running').andWhere('lease_expires_at', '<=', now);
    if (!(await expired(this.db).first('id'))) return { requeued: 0, failed: 0, jobIds: [] };
    // The free `transactional`, allowed in src/jobs/ only (vidmill/one-way): the queue is not a
    // TransactionalService on purpose. Services hold it (`this.jobs`), and `within(trx)` binds
    // every TransactionalService a service holds, so a bound service's queue would run this sweep
    // as a savepoint of a feature's transaction; the sweep is a transaction of its own (the
    // give-ups commit with the failed rows), and enqueues take the caller's transaction explicitly.
    const failedJobs = await transactional(this.db, async (trx) => {
      let q = expired(trx).andWhere('attempts', '>=', trx.ref('max_attempts'));
      if (isPostgres(this.db)) q = q.forUpdate().skipLocked();
      const dead = (await q.select('*')).map(toJob);
      if (dead.length === 0) return [];
      const rows = await expired(trx)
        .whereIn(
          'id',
          dead.map((j) => j.id),
        )
        .update({ status: 'failed', lease_owner: null, lease_expires_at: null, last_error: 'lease expired (worker lost) on the last attempt', updated_at: now }, ['id']);
      const failed = new Set(rows.map((r) => r.id));
      const failedJobs = dead.filter((j) => failed.has(j.id));
      if (onGiveUp) await onGiveUp(trx, failedJobs);
      return failedJobs;
    });
    const requeued = await expired(this.db).update(
      {
        status: 'queued',
        lease_owner: null,
        lease_expires_at: null,
        last_error: 'lease expired (worker lost)',
        run_at: now,
        updated_at: now,
      },
      ['id', 'kind'],
    );
    // Every job taken over from a lost worker (requeued, or failed on its last attempt), by kind.
    recordLeaseTakeovers([...failedJobs, ...requeued].map((j) => j.kind));
    return { requeued: requeued.length, failed: failedJobs.length, jobIds: [...failedJobs.map((j) => j.id), ...requeued.map((j) => j.id)] };
  }

  /**
   * When the earliest lease of a running job ends (any kind, any holder), or undefined when none
   * runs: a worker sleeps no longer than until then, so an expired lease is taken over at once.
   */
  async nextLeaseExpiry(): Promise<Date | undefined> {
    const row = (await this.db('jobs').where('status', 'running').min({ next: 'lease_expires_at' }).first()) as { next: Nullable<DbTimestamp> } | undefined;
    return row?.next === null || row?.next === undefined ? undefined : asDate(row.next);
  }

  /** The lease tokens of those of `ids` that are running now (job id -> token). */
  async runningLeases(ids: readonly string[]): Promise<Map<string, string>> {
    const leases = new Map<string, string>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await this.db<JobRow>('jobs')
        .where('status', 'running')
        .whereIn('id', ids.slice(i, i + 500))
        .select('id', 'lease_owner');
      for (const r of rows) if (r.lease_owner) leases.set(r.id, r.lease_owner);
    }
    return leases;
  }

  async get<P = unknown>(id: string, trx: Knex | Knex.Transaction = this.db): Promise<Job<P> | undefined> {
    const row = (await trx('jobs').where({ id }).first()) as JobRow | undefined;
    return row ? (toJob(row) as Job<P>) : undefined;
  }

  /** The earliest `run_at` of a queued job of `kinds`, so a worker can sleep until then. */
  async nextRunAt(kinds: readonly string[]): Promise<Date | undefined> {
    if (kinds.length === 0) return undefined;
    const row = (await this.db('jobs').where('status', 'queued').whereIn('kind', kinds).min({ next: 'run_at' }).first()) as { next: Nullable<DbTimestamp> } | undefined;
    return row?.next === null || row?.next === undefined ? undefined : asDate(row.next);
  }

  /** Delay before the attempt after `attempts` failed ones: equal jitter over a capped doubling. */
  backoffMs(attempts: number): number {
    return backoffMs(attempts, { ...this.retry, jitter: 'equal', random: this.random });
  }

  private held(job: ClaimedJob<unknown>, now: Date, trx: Knex | Knex.Transaction = this.db) {
    return whereLeaseHeld(trx, JOB_LEASES, job.id, job.leaseOwner, now);
  }
}

function toJob(row: JobRow): Job {
  return {
    id: row.id,
    kind: row.kind,
    payload: JSON.parse(row.payload),
    status: row.status,
    runAt: asDate(row.run_at),
    attempts: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
    lastError: row.last_error ?? undefined,
    leaseOwner: row.lease_owner ?? undefined,
    leaseExpiresAt: asOptionalDate(row.lease_expires_at),
    createdAt: asDate(row.created_at),
    updatedAt: asDate(row.updated_at),
  };
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > ERROR_TEXT_LIMIT ? text.slice(0, ERROR_TEXT_LIMIT) : text;
}
