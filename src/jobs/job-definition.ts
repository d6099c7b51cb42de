/**
 * The one shape of a job: each feature declares its jobs as JobDefinitions (in its `*.jobs.ts`)
 * and the composition root registers them all on the worker in one place.
 */
import type { GiveUpHandler, JobHandler } from './worker';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- default for lists of jobs with different payloads (a handler's parameter is contravariant, so unknown would not fit)
export interface JobDefinition<P = any> {
  /** The `jobs.kind` value, for example `video.ingest`. */
  kind: string;
  /** Attempts before the job fails for good (the enqueue's `maxAttempts`). */
  attempts: number;
  /** Runs one attempt; throwing retries with the queue's back-off (PermanentJobError does not). */
  run: JobHandler<P>;
  /**
   * Records the failure in the domain state the job owned when the lease sweep gives the job up
   * (its worker was lost on the last attempt), in the sweep's transaction.
   */
  onGiveUp?: GiveUpHandler<P>;
}

/** The handler and give-up maps the worker registers, from a list of definitions (kinds are unique). */
export function jobRegistry(definitions: JobDefinition[]): { handlers: Record<string, JobHandler>; giveUps: Record<string, GiveUpHandler> } {
  const handlers: Record<string, JobHandler> = {};
  const giveUps: Record<string, GiveUpHandler> = {};
  for (const d of definitions) {
    if (handlers[d.kind]) throw new Error(`job kind ${d.kind} is defined twice`);
    handlers[d.kind] = d.run;
    if (d.onGiveUp) giveUps[d.kind] = d.onGiveUp;
  }
  return { handlers, giveUps };
}
