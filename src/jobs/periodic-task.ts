/**
 * A background loop that runs one task every `intervalMs`: abortable sleep, `notify()` to run
 * early, exponential back-off after errors (capped), and `stop()` that waits for the run in flight.
 */
import type { Logger } from 'pino';
import { backoffMs } from './backoff';

export type LoopState = 'idle' | 'running' | 'stopping' | 'stopped';

export class PeriodicTask {
  private state: LoopState = 'idle';
  private wake?: () => void;
  private loop?: Promise<void>;
  private failures = 0;

  constructor(
    private readonly name: string,
    private readonly task: () => Promise<unknown>,
    private readonly opts: { intervalMs: number; maxBackoffMs?: number; log: Logger },
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
        await this.task();
        this.failures = 0;
      } catch (err) {
        this.failures++;
        this.opts.log.error({ err, task: this.name, failures: this.failures }, 'background task failed');
      }
      if (this.state !== 'running') break;
      await this.sleep(this.failures ? backoffMs(this.failures, { baseMs: this.opts.intervalMs, maxMs: this.opts.maxBackoffMs ?? 10 * 60_000 }) : this.opts.intervalMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wake = undefined;
        resolve();
      }
      this.wake = done;
    });
  }
}
