/**
 * A background loop that runs one task every `intervalMs`: abortable sleep, `notify()` to run
 * early, exponential back-off after errors (capped), and `stop()` that waits for the run in flight.
 *
 * Each feature declares its periodic tasks as PeriodicTaskDefinitions (exported by its index.ts);
 * the composition root lists them all (`createPeriodicTasks`) and main.ts runs one PeriodicTask each.
 */
import type { Logger } from 'pino';
import { backoffMs } from './backoff';

export type LoopState = 'idle' | 'running' | 'stopping' | 'stopped';

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
  private state: LoopState = 'idle';
  private wake?: () => void;
  private loop?: Promise<void>;
  private failures = 0;

  constructor(
    private readonly definition: PeriodicTaskDefinition,
    private readonly opts: { log: Logger; maxBackoffMs?: number },
  ) {}

  get status(): LoopState {
    return this.state;
  }

  start(): void {
    if (this.state !== 'idle') return;
    this.state = 'running';
    this.loop = this.run();
  }

  notify(): void {
    this.wake?.();
  }

  async stop(): Promise<void> {
    if (this.state === 'idle') this.state = 'stopped';
    if (this.state !== 'running') return this.loop;
    this.state = 'stopping';
    this.wake?.();
    await this.loop;
    this.state = 'stopped';
  }

  private async run(): Promise<void> {
    while (this.state === 'running') {
      try {
        await this.definition.run(this.opts.log);
        this.failures = 0;
      } catch (err) {
        this.failures++;
        this.opts.log.error({ err, task: this.definition.name, failures: this.failures }, 'background task failed');
      }
      if (this.state !== 'running') break;
      const { intervalMs } = this.definition;
      await this.sleep(this.failures ? backoffMs(this.failures, { baseMs: intervalMs, maxMs: this.opts.maxBackoffMs ?? 10 * 60_000 }) : intervalMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.wake = done;
    });
  }
}
