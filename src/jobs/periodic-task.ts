/**
 * A background loop that runs one task every `intervalMs`, on the one loop runtime (./loop.ts):
 * abortable sleep, `notify()` to run early, exponential back-off after errors (capped), and
 * `stop()` that waits for the run in flight.
 *
 * Each feature declares its periodic tasks as PeriodicTaskDefinitions (exported by its index.ts);
 * the composition root lists them all (`createPeriodicTasks`) and main.ts runs one PeriodicTask each.
 */
import type { Logger } from 'pino';
import { Loop, type LoopState } from './loop';

export type { LoopState };

/** One periodic task: what to run and how often. */
export interface PeriodicTaskDefinition {
  /** Unique among the tasks; names the task in the logs. */
  name: string;
  /** Time between the end of one run and the start of the next (after a failure: the back-off's base). */
  intervalMs: number;
  /** One run; reports what it did through `log`. Throwing backs the loop off. */
  run(log: Logger): Promise<void>;
}

export class PeriodicTask {
  private readonly loop: Loop;

  constructor(definition: PeriodicTaskDefinition, opts: { log: Logger; maxBackoffMs?: number }) {
    this.loop = new Loop({
      name: definition.name,
      log: opts.log,
      failureMessage: 'background task failed',
      backoff: { baseMs: definition.intervalMs, maxMs: opts.maxBackoffMs ?? 10 * 60_000 },
      turn: async () => {
        await definition.run(opts.log);
        return definition.intervalMs;
      },
    });
  }

  get status(): LoopState {
    return this.loop.status;
  }

  start(): void {
    this.loop.start();
  }

  notify(): void {
    this.loop.notify();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
