/**
 * What the fuzzers (test/contract/fuzz.test.ts over the API, test/contract/tus-fuzz.test.ts over
 * the tus endpoint) share: their bounds, read once from the environment, and how they report.
 * VIDMILL_FUZZ_SEED replays a run (random when unset); VIDMILL_FUZZ_MS and VIDMILL_FUZZ_RUNS bound it.
 */
import { randomBytes } from 'node:crypto';

export const FUZZ_SEED = process.env.VIDMILL_FUZZ_SEED !== undefined ? Number(process.env.VIDMILL_FUZZ_SEED) : randomBytes(4).readInt32LE();
export const FUZZ_BUDGET_MS = Number(process.env.VIDMILL_FUZZ_MS ?? 40_000);
export const FUZZ_MAX_RUNS = Number(process.env.VIDMILL_FUZZ_RUNS ?? 20_000);

/** Problems by cause, most frequent first, each with its first three cases. */
export function problemReport(problems: Map<string, string[]>): string {
  return [...problems]
    .sort((a, b) => b[1].length - a[1].length)
    .map(
      ([cause, list]) =>
        `  ${list.length} x ${cause}\n${list
          .slice(0, 3)
          .map((r) => `    - ${r}`)
          .join('\n')}`,
    )
    .join('\n');
}
