/**
 * The one way to declare a job: `defineJob<P, D>({ kind, attempts, run, onGiveUp })` in the
 * feature's `<feature>.jobs.ts`. Its result is both sides of the job:
 *
 * - `enqueue(queue, trx, payload, { runAt })` inserts a job of this kind with its attempts and a
 *   payload of type P, in the caller's transaction (the only way src/ enqueues: the lint forbids
 *   `queue.enqueue(trx, { kind, ... })` outside src/jobs/);
 * - `bind(deps)` gives the worker its handler and give-up handler (`Worker.define`), built from
 *   the feature's dependencies D (its services) by the composition root.
 *
 * `run` and `onGiveUp` take D rather than closing over services, so that the service that
 * enqueues a job can import its definition while the definition only names the service's type.
 */
import type { Knex } from 'knex';
import type { JobQueue } from './job-queue';
import type { BoundJob, GiveUpHandler, JobHandler } from './worker';

export type { BoundJob };

export interface JobSpec<P, D> {
  /** The `jobs.kind` value, for example `video.ingest`. */
  kind: string;
  /** Attempts before the job fails for good. */
  attempts: number;
  /** The handler of one attempt, given the feature's dependencies. */
  run(deps: D): JobHandler<P>;
  /** The give-up handler (see BoundJob.onGiveUp), given the feature's dependencies. */
  onGiveUp?(deps: D): GiveUpHandler<P>;
}

export interface JobDefinition<P, D = void> {
  readonly kind: string;
  readonly attempts: number;
  /** Inserts a queued job of this kind with `trx` (a transaction or the pool); returns its id. */
  enqueue(queue: Pick<JobQueue, 'enqueue'>, trx: Knex, payload: P, opts?: { runAt?: Date }): Promise<string>;
  /** The handler and give-up handler over `deps`, for `Worker.define`. */
  bind(deps: D): BoundJob<P>;
}

export function defineJob<P, D = void>(spec: JobSpec<P, D>): JobDefinition<P, D> {
  return {
    kind: spec.kind,
    attempts: spec.attempts,
    enqueue: (queue, trx, payload, opts = {}) => queue.enqueue(trx, { kind: spec.kind, payload, maxAttempts: spec.attempts, runAt: opts.runAt }),
    bind: (deps) => ({ kind: spec.kind, run: spec.run(deps), ...(spec.onGiveUp ? { onGiveUp: spec.onGiveUp(deps) } : {}) }),
  };
}
