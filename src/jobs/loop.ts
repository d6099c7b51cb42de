/**
 * The one background loop runtime (DESIGN.md "Worker loop"): the job Worker, the webhook
 * DeliveryWorker and every PeriodicTask run on it.
 *
 * States: idle -> (starting: the optional `setup`) -> running -> stopping -> stopped. While
 * running it calls `turn()` again and again; a turn returns how long to sleep before the next
 * one (0: at once). The sleep is abortable: `notify()` ends it early, and a notify that arrives
 * during a turn makes the next sleep end at once, so a wake is never lost. A turn that throws is
 * logged and the loop backs off (`backoffMs` of ./backoff.ts over the loop's own base and cap,
 * reset by the next turn that succeeds), so a broken database is not hammered. `stop()` ends the
 * sleep and resolves once the turn in flight has returned; the owner then settles its own work
 * in flight (a Worker's jobs, a DeliveryWorker's sends) with its grace limit.
 *
 * `wakeOn` subscribes the loop to a wake source (an in-process enqueue, a PostgreSQL NOTIFY),
 * unsubscribed at stop.
 */
import type { Logger } from 'pino';
import { backoffMs } from './backoff';

export type LoopState = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped';

export interface LoopOptions {
  /** Names the loop in the logs. */
  name: string;
  log: Logger;
  /** Runs once before the first turn, in state `starting` (a failure is logged, the loop starts anyway). */
  setup?(): Promise<void>;
  /** One turn; returns the sleep before the next one in ms (0: run again at once). Throwing backs the loop off. */
  turn(): Promise<number>;
  /** The back-off after failed turns: `baseMs` after the first, doubling up to `maxMs`. */
  backoff: { baseMs: number; maxMs: number };
  /** Logged with a failed turn (default 'background loop failed'). */
  failureMessage?: string;
  /** Whether a sleeping loop keeps the process alive (a worker-only process has nothing else); default false. */
  keepAlive?: boolean;
}

export class Loop {
  private state: LoopState = 'idle';
  private running?: Promise<void>;
  private wake?: () => void;
  private woken = false;
  private failures = 0;
  private readonly unsubscribes: (() => void)[] = [];

  constructor(private readonly opts: LoopOptions) {}

  get status(): LoopState {
    return this.state;
  }

  /** Failed turns in a row. */
  get failureCount(): number {
    return this.failures;
  }

  start(): void {
    if (this.state !== 'idle') return;
    this.state = this.opts.setup ? 'starting' : 'running';
    this.running = this.run();
  }

  /** Ends the current sleep now, or the next one when a turn is running. */
  notify(): void {
    this.woken = true;
    this.wake?.();
  }

  /** Wakes the loop whenever `subscribe`'s source fires; unsubscribed when the loop stops. */
  wakeOn(subscribe: (wake: () => void) => () => void): this {
    this.unsubscribes.push(subscribe(() => this.notify()));
    return this;
  }

  /** Stops turning: ends the sleep and resolves when the turn in flight (if any) has returned. */
  async stop(): Promise<void> {
    this.unsubscribes.splice(0).forEach((u) => u());
    if (this.state === 'idle') this.state = 'stopped';
    if (this.state === 'starting' || this.state === 'running') {
      this.state = 'stopping';
      this.wake?.();
    }
    await this.running;
    this.state = 'stopped';
  }

  private async run(): Promise<void> {
    if (this.opts.setup) {
      try {
        await this.opts.setup();
      } catch (err) {
        this.opts.log.error({ err, loop: this.opts.name }, 'background loop start-up failed');
      }
      if (this.state !== 'starting') return;
      this.state = 'running';
    }
    while (this.state === 'running') {
      let delay: number;
      try {
        delay = await this.opts.turn();
        this.failures = 0;
      } catch (err) {
        this.failures++;
        delay = backoffMs(this.failures, this.opts.backoff);
        this.opts.log.error({ err, loop: this.opts.name, failures: this.failures, retryInMs: delay }, this.opts.failureMessage ?? 'background loop failed');
      }
      if (this.state !== 'running') break;
      if (delay > 0) await this.sleep(delay);
      else this.woken = false;
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      if (!this.opts.keepAlive) timer.unref();
      this.wake = done;
    });
  }
}
