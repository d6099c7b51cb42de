/**
 * The worker loop over the durable job queue (DESIGN.md "Worker loop").
 *
 * States: idle -> starting (scratch folders of dead claims removed, a first lease sweep) -> running
 * -> stopping -> stopped.
 * While running it claims due jobs of the kinds it has handlers for, up to `concurrency` at once,
 * then sleeps until `pollMs` passes, `notify()` is called (an enqueue in this process, a slot
 * freed) or the next job is due. A failed
 * claim (database down) backs off exponentially, capped, so a broken database is not hammered.
 *
 * Each running job has a heartbeat timer that extends its lease every `heartbeatMs`; when the
 * queue refuses (the lease was swept and perhaps taken by another worker) the handler's
 * AbortSignal fires with a LeaseLostError and nothing the handler does afterwards is recorded.
 * Handler outcome: resolve -> `complete`; throw -> `fail` (retried with back-off unless a
 * PermanentJobError or attempts are used up).
 *
 * `stop()` stops claiming, waits up to `graceMs` for the jobs in flight, then aborts their signals
 * with a WorkerStoppingError and hands them back (`release`: queued again, attempt not counted) as
 * soon as their handlers return.
 *
 * Takeover: every turn of the loop reads when the earliest lease of a running job ends
 * (`nextLeaseExpiry`, any kind, any holder) and never sleeps past it; once it has passed, the
 * worker runs the queue's takeover (`sweepExpiredLeases`: requeued, or failed with the kind's
 * give-up handler on the last attempt) and claims at once. A job whose worker died is thus taken
 * over as soon as its lease ends (the last heartbeat + the lease), by any live worker, busy or
 * idle (an idle one claims it in the same turn): within 1.2 x the lease with room to spare.
 *
 * Scratch: `ctx.scratchDir()` is a folder of this claim under `scratchRoot` (`<data dir>/work`),
 * removed when the handler returns, by a worker taking the job over, or by the start-up sweep
 * (./job-scratch.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Knex } from 'knex';
import { performance } from 'node:perf_hooks';
import { JobOutcome, recordJobAttempt, withStage } from '../shared/metrics';
import { ClaimedJob, Job, JobQueue } from './job-queue';
import { JobScratch } from './job-scratch';
import { Loop } from './loop';
import { sharedAbortController } from '../shared/abort';

export type WorkerState = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped';

export interface JobContext {
  /** Aborted when the lease is lost (LeaseLostError) or the worker stops (WorkerStoppingError). */
  signal: AbortSignal;
  job: ClaimedJob<unknown>;
  /** Extends the lease now (besides the timer); false when it is lost. */
  heartbeat(): Promise<boolean>;
  /**
   * This claim's scratch folder, created on the first call: put every temporary file of the job
   * there. The worker removes it when the handler returns (and others do if this process dies).
   */
  scratchDir(): Promise<string>;
  log: Logger;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- default for lists of jobs with different payloads (a handler's parameter is contravariant, so unknown would not fit)
export type JobHandler<P = any> = (payload: P, ctx: JobContext) => Promise<void>;

/**
 * Called when a job is failed because its worker was lost on its last attempt (the lease sweep),
 * in the transaction that fails it: record the failure in the domain state the job owned.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- default for lists of jobs with different payloads (a handler's parameter is contravariant, so unknown would not fit)
export type GiveUpHandler<P = any> = (trx: Knex.Transaction, payload: P, job: Job<unknown>) => Promise<void>;

/** What the worker registers for one kind: its handler and, when it has one, its give-up handler. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- default for lists of jobs with different payloads (a handler's parameter is contravariant, so unknown would not fit)
export interface BoundJob<P = any> {
  kind: string;
  /** Runs one attempt; throwing retries with the queue's back-off (PermanentJobError does not). */
  run: JobHandler<P>;
  /**
   * Records the failure in the domain state the job owned when the lease sweep gives the job up
   * (its worker was lost on the last attempt), in the sweep's transaction.
   */
  onGiveUp?: GiveUpHandler<P>;
}

/** Thrown by a handler when retrying cannot help (bad input, checksum mismatch). */
export class PermanentJobError extends Error {
  override name = 'PermanentJobError';
}
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  constructor(jobId: string) {
    super(`lease on job ${jobId} was lost`);
  }
}
export class WorkerStoppingError extends Error {
  override name = 'WorkerStoppingError';
  constructor() {
    super('worker is stopping');
  }
}

export interface WorkerOptions {
  workerId: string;
  log: Logger;
  /** Jobs run at once by this worker; default 2. */
  concurrency?: number;
  /** Lease length; default DEFAULT_LEASE_MS (30 s; VIDMILL_JOB_LEASE_SECONDS in a process). */
  leaseMs?: number;
  /** Heartbeat period; default a third of the lease. */
  heartbeatMs?: number;
  /** Longest sleep between polls when nothing wakes the loop; default 2 s. */
  pollMs?: number;
  /** Cap of the back-off after failed polls; default 60 s. */
  maxBackoffMs?: number;
  /** Whether this worker takes over jobs whose lease expired (see the file comment); default true. */
  sweepLeases?: boolean;
  /**
   * Folder of the jobs' scratch folders, `<data dir>/work` in a process; swept at start. Unset
   * (tests), each worker uses a temporary folder of its own and sweeps nothing.
   */
  scratchRoot?: string;
}

/** The lease a worker takes on a job unless told otherwise: 30 s (the default of VIDMILL_JOB_LEASE_SECONDS). */
export const DEFAULT_LEASE_MS = 30_000;

interface Running {
  job: ClaimedJob<unknown>;
  abort: AbortController;
  done: Promise<void>;
}

export class Worker {
  private readonly loop: Loop;
  private stopped = false;
  private stopRequested = false;
  private readonly handlers = new Map<string, JobHandler>();
  private readonly giveUps = new Map<string, GiveUpHandler>();
  private readonly running = new Map<string, Running>();
  /** The scratch folders: under `scratchRoot`, else (made on first use) a temporary folder of this worker. */
  private scratch?: Promise<JobScratch>;
  /** When the scratch folders were last swept, on the queue's clock. */
  private lastScratchSweepMs = 0;
  private readonly opts: Required<Omit<WorkerOptions, 'scratchRoot'>> & Pick<WorkerOptions, 'scratchRoot'>;

  constructor(
    private readonly queue: JobQueue,
    options: WorkerOptions,
  ) {
    const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.opts = {
      concurrency: 2,
      heartbeatMs: Math.max(1, Math.floor(leaseMs / 3)),
      pollMs: 2_000,
      maxBackoffMs: 60_000,
      sweepLeases: true,
      ...options,
      leaseMs,
    };
    if (this.opts.concurrency < 1) throw new Error('concurrency must be at least 1');
    if (this.opts.heartbeatMs >= leaseMs) throw new Error('heartbeatMs must be shorter than leaseMs');
    if (options.scratchRoot) this.scratch = Promise.resolve(new JobScratch(options.scratchRoot));
    const kinds = () => [...this.handlers.keys()];
    this.loop = new Loop({
      name: `worker ${this.opts.workerId}`,
      log: this.opts.log,
      keepAlive: true,
      failureMessage: 'job poll failed',
      backoff: { baseMs: this.opts.pollMs, maxMs: this.opts.maxBackoffMs },
      setup: () => this.setup(),
      turn: () => this.turn(kinds()),
    });
  }

  get status(): WorkerState {
    // Stopping lasts until the work in flight is settled, after the loop itself has ended.
    return this.stopped ? 'stopped' : this.stopRequested ? 'stopping' : this.loop.status;
  }

  /** The lease this worker takes on a job, and how often it renews it. */
  get lease(): { leaseMs: number; heartbeatMs: number } {
    return { leaseMs: this.opts.leaseMs, heartbeatMs: this.opts.heartbeatMs };
  }

  /** Job ids running now. */
  get inFlight(): string[] {
    return [...this.running.keys()];
  }

  /**
   * Registers one job kind (a `defineJob` definition bound to its dependencies: `JOB.bind(deps)`):
   * its handler and, when it has one, its give-up handler. A kind has exactly one definition.
   */
  define<P>(definition: BoundJob<P>): this {
    if (this.handlers.has(definition.kind)) throw new Error(`a handler for job kind "${definition.kind}" is already registered`);
    if (this.loop.status !== 'idle') throw new Error('register handlers before start()');
    this.handlers.set(definition.kind, definition.run as JobHandler);
    if (definition.onGiveUp) this.giveUps.set(definition.kind, definition.onGiveUp as GiveUpHandler);
    return this;
  }

  start(): void {
    this.loop.start();
  }

  /** Wakes the loop now (a job was enqueued, a slot is free). */
  notify(): void {
    this.loop.notify();
  }

  /** Wakes the loop whenever `subscribe`'s source fires (a PostgreSQL NOTIFY of another process's enqueue); unsubscribed at stop. */
  wakeOn(subscribe: (wake: () => void) => () => void): this {
    this.loop.wakeOn(subscribe);
    return this;
  }

  /**
   * Stops claiming; waits up to `graceMs` for jobs in flight, then aborts them and hands them back.
   * Resolves when the loop and every handler have returned.
   */
  async stop(opts: { graceMs?: number } = {}): Promise<void> {
    if (this.loop.status === 'idle') {
      await this.loop.stop();
      this.stopped = true;
      return;
    }
    if (this.stopped) return;
    this.stopRequested = true;
    await this.loop.stop();
    const all = () => Promise.all([...this.running.values()].map((r) => r.done));
    const graceMs = opts.graceMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([all().then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)))]);
    clearTimeout(timer);
    if (!inTime) {
      for (const r of this.running.values()) r.abort.abort(new WorkerStoppingError());
      await all();
    }
    if (!this.opts.scratchRoot && this.scratch) await rm((await this.scratch).root, { recursive: true, force: true });
    this.stopped = true;
  }

  /** starting: remove what dead claims left in the scratch folder, and rescue what dead workers left in the queue, before taking new work. */
  private async setup(): Promise<void> {
    await this.sweepScratch();
    try {
      await this.maybeSweep();
    } catch (err) {
      this.opts.log.error({ err, worker: this.opts.workerId }, 'start-up lease sweep failed');
    }
  }

  /** One turn of the loop: take over expired leases, claim up to the free slots; returns how long to sleep. */
  private async turn(kinds: readonly string[]): Promise<number> {
    let delay = this.opts.pollMs;
    const leaseEnds = await this.maybeSweep();
    // Once a lease length: a claim that ended elsewhere (taken over by a worker on another
    // machine while this data dir's process restarted) leaves its folder here otherwise.
    if (this.nowMs() - this.lastScratchSweepMs >= this.opts.leaseMs) await this.sweepScratch();
    // Awake when the earliest lease ends, to take it over if its worker is gone.
    if (leaseEnds) delay = Math.min(delay, Math.max(5, leaseEnds.getTime() - this.nowMs()));
    while (this.loop.status === 'running' && this.running.size < this.opts.concurrency) {
      const job = await this.queue.claim(this.opts.workerId, kinds, this.opts.leaseMs);
      if (!job) break;
      this.execute(job);
    }
    if (this.running.size < this.opts.concurrency) {
      const next = await this.queue.nextRunAt(kinds);
      if (next) delay = Math.min(delay, Math.max(5, next.getTime() - this.nowMs()));
    }
    return delay;
  }

  /**
   * Removes the scratch folders under `scratchRoot` that belong to no running claim: claims of
   * dead processes (at start), and claims that ended while their folder's process was gone (a
   * restarted process kept its predecessor's folder while that lease still ran; the job was then
   * taken over on another machine). A live claim's folder is never touched: its token is the
   * job's current lease.
   */
  private async sweepScratch(): Promise<void> {
    if (!this.opts.scratchRoot) return;
    this.lastScratchSweepMs = this.nowMs();
    try {
      const removed = await (await this.scratch!).sweep((ids) => this.queue.runningLeases(ids));
      if (removed.length) this.opts.log.warn({ worker: this.opts.workerId, removed }, 'removed scratch folders of ended job claims');
    } catch (err) {
      this.opts.log.error({ err, worker: this.opts.workerId }, 'scratch sweep failed');
    }
  }

  private nowMs(): number {
    // The queue's clock decides when jobs are due.
    return this.queue.clock.now().getTime();
  }

  /**
   * Takes over the jobs whose lease has ended (the queue's `sweepExpiredLeases`, the one place of
   * a takeover) once the earliest lease has ended on the queue's clock; returns when the earliest
   * lease still running ends, so the loop wakes then.
   */
  private async maybeSweep(): Promise<Date | undefined> {
    if (!this.opts.sweepLeases) return undefined;
    // The queue's clock, like the leases themselves: a test's clock drives the sweep too.
    let next = await this.queue.nextLeaseExpiry();
    if (!next || next.getTime() > this.nowMs()) return next;
    const swept = await this.queue.sweepExpiredLeases(async (trx, jobs) => {
      for (const job of jobs) await this.giveUps.get(job.kind)?.(trx, job.payload, job);
    });
    if (swept.requeued || swept.failed) {
      this.opts.log.warn({ worker: this.opts.workerId, requeued: swept.requeued, failed: swept.failed, jobIds: swept.jobIds }, 'swept expired job leases');
      // The dead claims' scratch folders, if they were on this machine.
      await this.removeEarlierClaims(swept.jobIds).catch((err: unknown) => this.opts.log.warn({ err }, 'could not remove scratch folders of taken-over jobs'));
    }
    next = await this.queue.nextLeaseExpiry();
    return next && next.getTime() > this.nowMs() ? next : undefined;
  }

  /** This claim's scratch folder (created), under `scratchRoot` or this worker's temporary folder. */
  private async scratchFor(job: ClaimedJob<unknown>): Promise<string> {
    this.scratch ??= mkdtemp(path.join(os.tmpdir(), 'vidmill-scratch-')).then((root) => new JobScratch(root));
    return (await this.scratch).create(job.id, job.leaseOwner);
  }

  /** Removes the scratch folders of earlier claims of `jobIds` (all but `keepToken`'s), if any are here. */
  private async removeEarlierClaims(jobIds: string[], keepToken?: string): Promise<void> {
    if (this.scratch) await (await this.scratch).removeEarlierClaims(jobIds, keepToken);
  }

  private execute(job: ClaimedJob<unknown>): void {
    const handler = this.handlers.get(job.kind)!;
    const abort = sharedAbortController();
    const log = this.opts.log.child({ jobId: job.id, kind: job.kind, attempt: job.attempts });
    let lost = false;
    const beat = async (): Promise<boolean> => {
      if (lost) return false;
      try {
        if (await this.queue.heartbeat(job, this.opts.leaseMs)) return true;
      } catch (err) {
        // A database hiccup is not a lost lease; the next beat tries again.
        log.warn({ err }, 'heartbeat failed');
        return true;
      }
      if (!lost) {
        lost = true;
        log.warn('job lease lost; aborting its handler');
        abort.abort(new LeaseLostError(job.id));
      }
      return false;
    };
    const timer = setInterval(() => void beat(), this.opts.heartbeatMs);
    let scratchDir: Promise<string> | undefined;
    const scratch = (): Promise<string> => (scratchDir ??= this.scratchFor(job));
    const startedAt = performance.now();
    // How the attempt ended, for vidmill_job_duration_seconds (lease_lost unless recorded otherwise).
    let ended: JobOutcome = 'lease_lost';
    const done = (async () => {
      let outcome: { ok: true } | { ok: false; err: unknown };
      try {
        // A takeover (an earlier claim of this job was lost): its scratch folder, if here, goes.
        if (job.attempts > 1) await this.removeEarlierClaims([job.id], job.leaseOwner).catch((err: unknown) => log.warn({ err }, 'could not remove scratch folders of earlier claims'));
        // withStage: ffmpeg run by the handler is counted under the job's kind.
        await withStage(job.kind, () => handler(job.payload, { signal: abort.signal, job, heartbeat: beat, log, scratchDir: scratch }));
        outcome = { ok: true };
      } catch (err) {
        outcome = { ok: false, err };
      }
      clearInterval(timer);
      if (scratchDir) {
        await scratchDir.then(async () => (await this.scratch!).remove(job.id, job.leaseOwner)).catch((err: unknown) => log.warn({ err }, 'could not remove the job scratch folder'));
      }
      try {
        if (lost) return;
        if (outcome.ok) {
          if (await this.queue.complete(job)) ended = 'completed';
          else log.warn('job finished after its lease was lost; result not recorded');
        } else if (abort.signal.reason instanceof WorkerStoppingError) {
          if (await this.queue.release(job)) ended = 'released';
          log.info('job handed back on stop');
        } else {
          const state = await this.queue.fail(job, outcome.err, { permanent: outcome.err instanceof PermanentJobError });
          ended = state === 'lease-lost' ? 'lease_lost' : state === 'queued' ? 'retried' : 'failed';
          log[state === 'failed' ? 'error' : 'warn']({ err: outcome.err, state }, 'job attempt failed');
        }
      } catch (err) {
        // The lease runs out and the sweeper requeues the job.
        log.error({ err }, 'could not record the job outcome');
      }
    })().finally(() => {
      recordJobAttempt(job.kind, ended, (performance.now() - startedAt) / 1000, job.attempts);
      this.running.delete(job.id);
      this.notify();
    });
    this.running.set(job.id, { job, abort, done });
  }
}
