/**
 * Progress and time left of a running stage, from measured progress only: every stage that shows
 * `progressPercentage` / `etaSeconds` (video in, ingestion, the clip's cut, processing, video out)
 * feeds its progress here and writes what `estimate()` answers.
 *
 * - Progress is a fraction of the whole stage (0..1, never decreasing). A stage of several steps
 *   weights each step by its expected cost (`weightedFraction`), so the fraction grows with the
 *   time spent and the time left covers the steps still to come.
 * - The rate is measured from the first observation on (work done before it, such as parts copied
 *   by an earlier run, does not count; nor the time before progress starts: observations that
 *   show none since the first one move it forward), then smoothed: an exponentially weighted mean of the rate
 *   between observations, its weight growing with the wall time between them (time constant
 *   `smoothingMs`), so uneven reports (a step without progress of its own lands in one jump)
 *   weigh by how long they took.
 * - No estimate (undefined: the state leaves `etaSeconds` out) until there is enough signal: at
 *   least `minProgress` of the whole measured over at least `minElapsedMs`.
 * - Between observations the estimate counts down with the clock; once it is overdue (a step
 *   took longer than its share predicted) there is no estimate until the next observation.
 * - `writeProgress` writes the estimate of a running stage once a second (only when the whole
 *   percentage or second changed), one write at a time, and waits for the last one on `stop()`,
 *   so no late write lands after the stage's final state.
 *
 * Time comes from `now` (milliseconds of a monotonic clock; `performance.now` by default), so
 * tests feed synthetic sequences. `finish()` hands the run (every estimate with its time, and the
 * end) to the listeners of `onEtaRun`, for measuring how good the estimates were.
 */

export interface EtaOptions {
  /** Milliseconds of a monotonic clock. */
  now?: () => number;
  /** No estimate before this much of the whole has been measured (default 0.05). */
  minProgress?: number;
  /** No estimate before measuring this long (ms, default 2000). */
  minElapsedMs?: number;
  /** Time constant of the smoothed rate (ms, default 3000). */
  smoothingMs?: number;
  /** What is measured (`ingestion`, `processing`...), for the listeners. */
  label?: string;
}

export interface Estimate {
  /** 0..1, never decreasing. */
  fraction: number;
  /** Seconds left, when there is enough signal. */
  etaSeconds?: number;
}

/** One estimate as it was reported, with its time (ms of the estimator's clock). */
export interface EtaReport {
  at: number;
  fraction: number;
  etaSeconds?: number;
}

export interface EtaRun {
  label: string;
  reports: EtaReport[];
  /** When the stage ended (ms of the same clock). */
  endedAt: number;
}

const listeners = new Set<(run: EtaRun) => void>();

/** Hears every finished run (a test or a benchmark measuring the estimates); returns the unsubscribe. */
export function onEtaRun(listener: (run: EtaRun) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Reports kept per run for the listeners (a long copy reports once a second). */
const MAX_REPORTS = 2000;

export class ProgressEta {
  private readonly now: () => number;
  private readonly minProgress: number;
  private readonly minElapsedMs: number;
  private readonly smoothingMs: number;
  private readonly label: string;
  private origin?: { at: number; fraction: number };
  private last?: { at: number; fraction: number };
  /** Fraction per millisecond, once there is enough signal. */
  private rate?: number;
  private readonly reports: EtaReport[] = [];

  constructor(opts: EtaOptions = {}) {
    this.now = opts.now ?? (() => performance.now());
    this.minProgress = opts.minProgress ?? 0.05;
    this.minElapsedMs = opts.minElapsedMs ?? 2000;
    this.smoothingMs = opts.smoothingMs ?? 3000;
    this.label = opts.label ?? 'stage';
  }

  /** Feeds a measurement: the fraction of the whole stage done now. */
  observe(fraction: number): void {
    const at = this.now();
    const f = Math.min(1, Math.max(this.last?.fraction ?? 0, Number.isFinite(fraction) ? fraction : 0));
    // The rate is measured from when progress starts: an observation that shows none since the
    // first one (a process starting up) moves the origin forward.
    if (!this.origin || !this.last || f <= this.origin.fraction) {
      this.origin = this.last = { at, fraction: f };
      return;
    }
    const dt = at - this.last.at;
    if (dt <= 0) {
      this.last = { at: this.last.at, fraction: f };
      return;
    }
    if (this.rate === undefined) {
      const measured = f - this.origin.fraction;
      const elapsed = at - this.origin.at;
      if (measured >= this.minProgress && elapsed >= this.minElapsedMs) this.rate = measured / elapsed;
    } else {
      const weight = 1 - Math.exp(-dt / this.smoothingMs);
      this.rate += weight * ((f - this.last.fraction) / dt - this.rate);
    }
    this.last = { at, fraction: f };
  }

  /** The current fraction and, with enough signal, the seconds left; reported to the listeners. */
  estimate(): Estimate {
    const at = this.now();
    const fraction = this.last?.fraction ?? 0;
    const out: Estimate = { fraction };
    if (fraction >= 1) out.etaSeconds = 0;
    else if (this.rate !== undefined && this.rate > 0 && this.last) {
      // Counts down from the last observation; past zero the rate was too optimistic, and no
      // estimate is better than a wrong one until the next observation.
      const left = (1 - fraction) / this.rate - (at - this.last.at);
      if (left > 0) out.etaSeconds = left / 1000;
    }
    if (this.reports.length < MAX_REPORTS) this.reports.push({ at, ...out });
    return out;
  }

  /** Observes and estimates at once (the usual call of a stage that writes every observation). */
  update(fraction: number): Estimate {
    this.observe(fraction);
    return this.estimate();
  }

  /** The stage is done: the listeners get the run. */
  finish(): void {
    if (listeners.size === 0) return;
    const run: EtaRun = { label: this.label, reports: [...this.reports], endedAt: this.now() };
    for (const l of listeners) l(run);
  }
}

/**
 * The fraction of a stage of weighted steps: every step before `step` done, `step` done by
 * `stepFraction` (0..1). Weights are the steps' expected costs, in any unit.
 */
export function weightedFraction(weights: readonly number[], step: number, stepFraction: number): number {
  const total = weights.reduce((a, b) => a + b, 0);
  if (!(total > 0)) return 0;
  const before = weights.slice(0, step).reduce((a, b) => a + b, 0);
  const current = (weights[step] ?? 0) * Math.min(1, Math.max(0, stepFraction));
  return Math.min(1, (before + current) / total);
}

/**
 * How good the estimates of finished runs were: for every report at or after `fromFraction` of
 * progress that has an estimate, the absolute error against the time actually left
 * (`|eta - left| / left`); the median over all of them.
 */
export function etaError(runs: readonly EtaRun[], fromFraction = 0.1): { reports: number; median?: number; p90?: number } {
  const errors: number[] = [];
  for (const run of runs) {
    for (const r of run.reports) {
      if (r.etaSeconds === undefined || r.fraction < fromFraction || r.fraction >= 1) continue;
      const left = (run.endedAt - r.at) / 1000;
      if (left <= 0) continue;
      errors.push(Math.abs(r.etaSeconds - left) / left);
    }
  }
  errors.sort((a, b) => a - b);
  const at = (q: number) => (errors.length ? errors[Math.min(errors.length - 1, Math.floor(q * errors.length))] : undefined);
  return { reports: errors.length, median: at(0.5), p90: at(0.9) };
}

export interface ProgressWrites {
  /** Writes the current estimate now (after the writes before it). */
  now(): Promise<void>;
  /** Stops writing and waits for the write in flight. */
  stop(): Promise<void>;
}

/** Writes `eta`'s estimate every `everyMs` while a stage runs (see the module's comment). */
export function writeProgress(eta: ProgressEta, write: (e: Estimate) => Promise<void>, opts: { everyMs?: number; onError?: (err: unknown) => void } = {}): ProgressWrites {
  let chain: Promise<void> = Promise.resolve();
  let last = '';
  let stopped = false;
  const tick = (): Promise<void> => {
    chain = chain
      .then(async () => {
        if (stopped) return;
        const e = eta.estimate();
        const key = `${Math.floor(e.fraction * 100)}/${e.etaSeconds === undefined ? '-' : Math.round(e.etaSeconds)}`;
        if (key === last) return;
        last = key;
        await write(e);
      })
      .catch((err) => opts.onError?.(err));
    return chain;
  };
  const timer = setInterval(() => void tick(), opts.everyMs ?? 1000);
  timer.unref?.();
  return {
    now: tick,
    async stop() {
      clearInterval(timer);
      await chain;
      stopped = true;
    },
  };
}
