/**
 * Benchmark dispatcher: `npm run bench -- [name...]` runs the named benchmarks (default: all),
 * prints each one's table, ratios and PASS/FAIL, and exits 1 when any target or run failed.
 * Every benchmark reports ratios against a baseline measured in the same run: the machine is
 * shared and noisy, so absolute numbers from different runs do not compare.
 */
import { apiBenchmark } from './api';
import { Benchmark, installCleanupHandlers, report, stopAllChildren } from './lib';
import { mediaBenchmark } from './media';
import { startupBenchmark } from './startup';

const BENCHMARKS: Benchmark[] = [apiBenchmark, mediaBenchmark, startupBenchmark];

/**
 * Benchmarks that print their own table, ratios and verdict. Those that return a boolean report
 * whether their targets passed (false fails the run); the others fail it only by throwing.
 * Each is imported only when it runs: webhooks and billing load the whole application
 * (src/composition.ts), which ingest does not need.
 */
const SELF_REPORTING: { name: string; description: string; run: () => Promise<void | boolean> }[] = [
  { name: 'webhooks', description: 'signed deliveries per second vs a bare POST loop; idle commit-to-delivery latency', run: async () => (await import('./webhooks')).webhooksBenchmark() },
  { name: 'billing', description: 'latest-period transactions with totals over 100,000 rows vs a plain indexed page query', run: async () => (await import('./billing')).billingBenchmark() },
  {
    name: 'processing',
    description: 'issue 6: 30 s 720p -> 1080p H.264 through Vidmill vs the same ffmpeg command; then video-out (below)',
    run: async () => {
      const processed = await (await import('./processing')).processingBenchmark();
      const copied = await (await import('./video-out')).videoOutBenchmark();
      return processed && copied;
    },
  },
  {
    name: 'video-out',
    description: '1 GiB result copied out to the local S3 server through Vidmill (job, copy engine) vs a bare @aws-sdk/lib-storage Upload',
    run: async () => (await import('./video-out')).videoOutBenchmark(),
  },
  {
    name: 'uploads',
    description: 'issue 15: 1 GiB direct upload through tus (tus-js-client) vs curl -T PUT to a bare Node server; Vidmill peak RSS',
    run: async () => (await import('./uploads')).uploadsBenchmark(),
  },
  {
    name: 'split',
    description: 'issue 16: 4 min 1080p -> H.264 split into segments on 1 and 2 one-core workers (PostgreSQL) vs unsplit on 1; seam PSNR',
    run: async () => (await import('./split')).splitBenchmark(),
  },
  {
    name: 'pickup',
    description: 'issue 28: enqueue-to-start p50/p99 of a job enqueued by one process and run by a worker process (PostgreSQL): LISTEN/NOTIFY vs 2 s polling',
    run: async () => (await import('./pickup')).pickupBenchmark(),
  },
  {
    name: 'overhead',
    description: "issue 28: a 4 s video's request-to-ingested time (this process requests, a worker process copies and ingests, PostgreSQL) against its ffmpeg steps",
    run: async () => (await import('./overhead')).overheadBenchmark(),
  },
  { name: 'ingest', description: 'video-in copy engine: 1 GiB vs curl, per-connection throttled source, peak RSS copying 2 GiB', run: async () => (await import('./ingest')).ingestBenchmark() },
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
      console.error(`\n${b.name}: ERROR ${(err as Error)?.stack ?? String(err)}`);
    } finally {
      await stopAllChildren();
    }
  }
  for (const b of SELF_REPORTING.filter((b) => !args.length || args.includes(b.name))) {
    console.log(`\n>> ${b.name}: ${b.description}`);
    try {
      if ((await b.run()) === false) {
        failed = true;
        console.error(`\n${b.name}: FAIL (a target was missed)`);
      }
    } catch (err) {
      failed = true;
      console.error(`\n${b.name}: ERROR ${(err as Error)?.stack ?? String(err)}`);
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
