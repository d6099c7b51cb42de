/**
 * What the randomised tests share: which seeds they run, how far, and how they report.
 *
 * `npm test` (and so CI) is deterministic: each randomised test runs the committed seeds of
 * test/helpers/fuzz-seeds.ts, each for a fixed number of cases, with no time limit cutting a run
 * short, so two runs of the same commit give the same verdict. A random seed runs only when asked:
 * - `VIDMILL_FUZZ_SEED=random`: a new seed (printed), bounded by VIDMILL_FUZZ_MS (default 40 s)
 *   and VIDMILL_FUZZ_RUNS (default 20,000); `npm run fuzz` runs the fuzzers this way.
 * - `VIDMILL_FUZZ_SEED=<n>`: replays seed n (VIDMILL_FUZZ_RUNS and VIDMILL_FUZZ_MS bound it when set).
 * A seed that ever found a bug goes into the committed list and stays there as a regression.
 * The crash soak reads VIDMILL_SOAK_SEED the same way (unset: its committed seed).
 */
import { randomBytes } from 'node:crypto';
import { COMMITTED_SEEDS, type RandomisedTest } from './fuzz-seeds';

export interface FuzzRun {
  seed: number;
  /** Cases to generate. */
  runs: number;
  /** A time limit, only when a random or replayed run asked for one. */
  budgetMs?: number;
  /** Why the seed is in the committed list, when it is one of them. */
  why?: string;
}

/** The runs of randomised test `test` (`envName` is its seed variable). */
export function fuzzRuns(test: RandomisedTest, envName = 'VIDMILL_FUZZ_SEED'): FuzzRun[] {
  const { runs, seeds } = COMMITTED_SEEDS[test];
  const asked = process.env[envName];
  const envRuns = process.env.VIDMILL_FUZZ_RUNS !== undefined ? Number(process.env.VIDMILL_FUZZ_RUNS) : undefined;
  const envBudget = process.env.VIDMILL_FUZZ_MS !== undefined ? Number(process.env.VIDMILL_FUZZ_MS) : undefined;
  if (asked === undefined || asked === '') return seeds.map(({ seed, why }) => ({ seed, runs, why }));
  if (asked === 'random') return [{ seed: randomBytes(4).readInt32LE(), runs: envRuns ?? 20_000, budgetMs: envBudget ?? 40_000 }];
  const seed = Number(asked);
  if (!Number.isSafeInteger(seed)) throw new Error(`${envName} must be an integer seed or "random", not ${JSON.stringify(asked)}`);
  return [{ seed, runs: envRuns ?? runs, budgetMs: envBudget }];
}

/**
 * Texts that JavaScript's Number reads as a number but that are not an integer written in
 * decimal: infinities, exponents, hexadecimal and binary, fractions, negative zero, signs,
 * spaces, leading zeros, numbers past int32 and past the exactly representable, and nothing at
 * all. Every integer parameter must refuse them (src/http/integer-parameters.ts); the contract
 * fuzzer and test/contract/bad-input.test.ts both send them.
 */
export const INTEGER_LOOKALIKES = ['Infinity', '-Infinity', 'NaN', '1e999', '-1e999', '1e2', '0x10', '0b1', '1.5', '1.0', '-0', '+1', ' 1', '01', '2147483648', '9007199254740993', ''];

/** mulberry32: a small seeded generator of numbers in [0, 1), for tests that draw their own. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` bytes drawn from `random` (a seeded stand-in for crypto's randomBytes in tests). */
export function seededBytes(n: number, random: () => number): Buffer {
  const out = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(random() * 256);
  return out;
}

/**
 * The seed of the property tests and of tests that draw their own numbers (fast-check's global
 * seed, set for every mocha run by test/helpers/seeded-properties.ts): fixed, unless
 * VIDMILL_FUZZ_SEED asks for another or for `random`.
 */
export const PROPERTY_SEED = (() => {
  const asked = process.env.VIDMILL_FUZZ_SEED;
  if (asked === 'random') return randomBytes(4).readInt32LE();
  return asked !== undefined && asked !== '' && Number.isSafeInteger(Number(asked)) ? Number(asked) : 424_242;
})();

/** How a run is named in reports: its seed, and whether it was committed or random. */
export function describeRun(r: FuzzRun): string {
  return `seed ${r.seed}${r.why ? ' (committed)' : r.budgetMs ? ' (random)' : ''}`;
}

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
