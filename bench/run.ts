/**
 * Benchmark dispatcher: `npm run bench -- [name...]` runs the named benchmarks (default: all),
 * prints each one's table, ratios and PASS/FAIL, and exits 1 when any target or run failed.
 * Every benchmark reports ratios against a baseline measured in the same run: the machine is
 * shared and noisy, so absolute numbers from different runs do not compare.
 */
import { apiBenchmark } from './api';
import { billingBenchmark } from './billing';
import { Benchmark, installCleanupHandlers, report, stopAllChildren } from './lib';
import { webhooksBenchmark } from './webhooks';

const BENCHMARKS: Benchmark[] = [apiBenchmark];

/**
 * Benchmarks that print their own table, ratios and verdict. `run` resolves to false when a
 * target was missed (the dispatcher then fails); benchmarks without targets resolve to nothing.
 */
const SELF_REPORTING: { name: string; description: string; run: () => Promise<boolean | void> }[] = [
  { name: 'webhooks', description: 'signed deliveries per second vs a bare POST loop; idle commit-to-delivery latency', run: webhooksBenchmark },
  { name: 'billing', description: 'latest-period transactions with totals over 100,000 rows vs a plain indexed page query', run: billingBenchmark },
];

async function main(): Promise<number> {
  installCleanupHandlers();
  const args = process.argv.slice(2).filter((a) => a !== '--');
  if (args.includes('--help') || args.includes('-h')) {
    console.log('usage: npm run bench -- [name...]\n');
    for (const b of [...BENCHMARKS, ...SELF_REPORTING]) console.log(`  ${b.name.padEnd(10)} ${b.description}`);
    return 0;
  }
  const known = [...BENCHMARKS, ...SELF_REPORTING].map((b) => b.name);
  const unknown = args.filter((a) => !known.includes(a));
  if (unknown.length) {
    console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${known.join(', ')}`);
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
  for (const b of SELF_REPORTING.filter((b) => !args.length || args.includes(b.name))) {
    console.log(`\n>> ${b.name}: ${b.description}`);
    try {
      if ((await b.run()) === false) {
        failed = true;
        console.log(`\n${b.name}: FAIL (target missed)`);
      }
    } catch (err) {
      failed = true;
      console.error(`\n${b.name}: ERROR ${(err as Error)?.stack ?? err}`);
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
