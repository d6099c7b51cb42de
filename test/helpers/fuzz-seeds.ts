/**
 * The committed seeds of the randomised tests (see test/helpers/fuzzing.ts): what `npm test` and
 * CI run, each for `runs` cases. A seed that found a bug is added here with what it found, and
 * stays as a regression; the list only grows. Seeds are fast-check seeds (signed 32-bit) for the
 * fuzzers and the crash soak's own generator seed (unsigned 32-bit).
 */
export type RandomisedTest = 'api-fuzz' | 'tus-fuzz' | 'crash-soak';

export interface CommittedSeed {
  seed: number;
  /** Why it is here: what it found, or that it is a plain coverage seed. */
  why: string;
}

export const COMMITTED_SEEDS: Record<RandomisedTest, { runs: number; seeds: CommittedSeed[] }> = {
  /**
   * test/contract/fuzz.test.ts: requests per seed; the first seed's include the cases earlier runs
   * reported (246, tried first). CI runs the file three times (each database on Node 20, SQLite
   * on Node 22), and every run is a new process that also compiles the validators of each
   * operation and Content-Type it reaches: 1200 per seed cost 145 s of CPU for the two databases,
   * 400 cost 73 (issue 26). Searching deeper is `npm run fuzz`: new random seeds, 40 s each
   * by default (VIDMILL_FUZZ_MS).
   */
  'api-fuzz': {
    runs: 400,
    seeds: [
      { seed: -1397462043, why: 'found GET /api/v1/webhooks?pageSize=1e999 answered 500 (integer query parameters read loosely, issue 25)' },
      { seed: 20261128, why: 'coverage' },
    ],
  },
  /**
   * test/contract/tus-fuzz.test.ts: requests per seed and storage, three quarters against the live
   * sessions and a quarter against the ended ones (with seed + 1). Its requests are slow: cut-off
   * bodies are waited for until the offsets settle.
   */
  'tus-fuzz': {
    runs: 120,
    seeds: [
      {
        seed: 1218098378,
        why: 'found "rejected with 410 but the offset moved" on S3 storage: an upload half way through its removal read as complete (issue 29)',
      },
    ],
  },
  /** test/scenarios/crash-soak.test.ts: one workload and kill schedule per seed (runs unused). */
  'crash-soak': {
    runs: 1,
    seeds: [{ seed: 2_903_311_797, why: 'coverage' }],
  },
};
