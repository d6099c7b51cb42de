/**
 * The one back-off function: a capped exponential delay, optionally with equal jitter. Every
 * retry and error back-off in Vidmill (job retries, the worker's failed polls, webhook delivery
 * retries and its failed polls, periodic tasks, the copy engine's part retries) computes its
 * delay here, each with its own parameters.
 */

export interface BackoffOptions {
  /** Delay (before jitter) of the first retry; multiplied by `factor` for each later one. */
  baseMs: number;
  /** Upper bound of the delay (before jitter). */
  maxMs: number;
  /** Growth per retry; default 2. */
  factor?: number;
  /**
   * `none` (default): exactly the capped delay. `equal`: uniform in [ceiling/2, ceiling], so
   * retries of many clients spread out while each still waits at least half the ceiling.
   */
  jitter?: 'none' | 'equal';
  /** Source of jitter in [0, 1); default Math.random. Injected by tests. */
  random?: () => number;
}

/**
 * The delay before retry number `retry` (1 = the first retry; values below 1 count as 1):
 * `min(maxMs, baseMs * factor^(retry - 1))`, jittered as the options say, whole milliseconds.
 */
export function backoffMs(retry: number, opts: BackoffOptions): number {
  const exponent = Math.max(0, retry - 1);
  const ceiling = Math.min(opts.maxMs, opts.baseMs * (opts.factor ?? 2) ** exponent);
  if ((opts.jitter ?? 'none') === 'none') return ceiling;
  const r = (opts.random ?? Math.random)();
  return Math.round(ceiling / 2 + (ceiling / 2) * r);
}
