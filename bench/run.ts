/**
 * Benchmark dispatcher: `npm run bench -- [name...]` runs the named benchmarks (default: all),
 * prints each one's table, ratios and PASS/FAIL, and exits 1 when any target or run failed.
 * Every benchmark reports ratios against a baseline measured in the same run: the machine is
 * shared and noisy, so absolute numbers from different runs do not compare.
 */
import { apiBenchmark } from './api';
import { Benchmark, installCleanupHandlers, report, stopAllChildren } from './lib';

const BENCHMARKS: Benchmark[] = [apiBenchmark];

async function main(): Promise<number> {
  installCleanupHandlers();
  const args = process.argv.slice(2).filter((a) => a !== '--');
  if (args.includes('--help') || args.includes('-h')) {
    console.log('usage: npm run bench -- [name...]\n');
    for (const b of BENCHMARKS) console.log(`  ${b.name.padEnd(10)} ${b.description}`);
    return 0;
  }
  const unknown = args.filter((a) => !BENCHMARKS.some((b) => b.name === a));
  if (unknown.length) {
    console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${BENCHMARKS.map((b) => b.name).join(', ')}`);
    return 2;
  }
  const selected = args.length ? BENCHMARKS.filter((b) => args.includes(b.name)) : BENCHMARKS;
  let failed = false;
  for (const b of selected) {
    console.log(`\n>> ${b.name}: ${b.description}`);
    try {
      const result = await b.run();
      if (!report(b.name, result)) failed = true;
    } catch (err) {
      failed = true;
      console.error(`\n${b.name}: ERROR ${(err as Error)?.stack ?? err}`);
    } finally {
      await stopAllChildren();
    }
  }
  console.log(failed ? '\nbench: FAIL' : '\nbench: PASS');
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  async (err) => {
    console.error(err);
    await stopAllChildren();
    process.exit(1);
  },
);
