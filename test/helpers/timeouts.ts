/**
 * The one scale of the tests' wall-clock bounds. Every bound a test sets (mocha's timeouts,
 * `waitFor`'s, the hang limit a test gives ffmpeg) is a hang detector written for a quiet machine
 * running one test file; nothing healthy comes near it there. `npm test` runs several files at
 * once (scripts/run-tests.ts: its passes side by side, two files each; CI adds the Node 22 run
 * alongside) on a machine that may be shared, so CPU-bound work takes several times longer: an
 * x265 encode of 3 s alone took over 60 s in a CI run with ten test files on 2 cores. The runner
 * sets VIDMILL_TEST_TIMEOUT_SCALE from how many files it runs per core (1 when unset: one file
 * run by hand), and every bound is written `scaled(ms)` (eslint refuses a bare number in
 * `this.timeout`), so that a busy machine slows the suite without failing it while a real hang
 * still fails, later.
 */

/** The factor every wall-clock bound of the tests is multiplied by (at least 1). */
export const TIMEOUT_SCALE = Math.max(1, Number(process.env.VIDMILL_TEST_TIMEOUT_SCALE ?? 1) || 1);

/** `ms` (a bound written for a quiet machine) scaled to the load the runner puts on this one. */
export function scaled(ms: number): number {
  return Math.round(ms * TIMEOUT_SCALE);
}

/**
 * A bound that tells one mechanism from a slower one (a wake from the next poll, a deadline from
 * the long wait behind it): `ms` scaled to the load, but never `ceilingMs` or more, the point
 * from which the slower mechanism could have answered instead. `assert.ok(took < scaledBelow(2_000, 30_000))`.
 */
export function scaledBelow(ms: number, ceilingMs: number): number {
  return Math.min(scaled(ms), ceilingMs);
}
