/**
 * Benchmark: getWalletTransactionsForLatestBillingPeriod (page + resolved filters + totals over
 * the whole filtered set) on a period holding 100,000 transactions, against a plain indexed
 * page query on the same table, in the same run, on SQLite and (when reachable) PostgreSQL.
 * Target (issue 28): the operation's p50 at most 2x the plain query's p50 (3x before).
 *
 *   npx tsx bench/billing.ts [--rows 100000] [--iterations 300] [--dialect sqlite|postgres|both]
 *   BENCH_PROFILE=1 also prints the p50 of each part (team selection alone, page, page with the
 *   team chosen in the same read as the operation does, aggregates).
 *
 * Under `npm run bench -- billing` (bench/run.ts) or standalone. Prints PASS or FAIL per dialect;
 * a missed target makes the run fail (exit code 1). PostgreSQL unreachable is reported as skipped.
 * The rows are bulk-inserted and the per-period aggregate rows built once with INSERT ... SELECT
 * ... GROUP BY, which gives the same state the ledger maintains row by row (the property test
 * checks that equivalence).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { createServices } from '../src/composition';
import { loadConfig } from '../src/config';
import { migrateToLatest, openDatabase } from '../src/db/database';
import { ManualClock } from '../src/shared/clock';
import { LocalDiskStore } from '../src/storage/local-disk-store';
import { benchDatabase } from './lib';

// Not strict: under `npm run bench` the dispatcher's positional arguments are on the command line too.
const { values } = parseArgs({ options: { rows: { type: 'string' }, iterations: { type: 'string' }, dialect: { type: 'string' } }, strict: false, allowPositionals: true });
const ROWS = Number(values.rows ?? 100_000);
const ITER = Number(values.iterations ?? 300);
const DIALECT = values.dialect ?? 'both';
const CATS = ['ENCODER', 'FILTER', 'PROCESSING', 'STORAGE', 'DOWNLOAD_S3', 'DOWNLOAD_HTTPS', 'OTHER'];

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function seed(db: Knex, teamId: string, periodId: string, start: Date): Promise<void> {
  const batch = 500;
  for (let i = 0; i < ROWS; i += batch) {
    const txs: any[] = [];
    for (let j = i; j < Math.min(ROWS, i + batch); j++) {
      const processing = j % 4 !== 3;
      txs.push({
        team_id: teamId,
        period_id: periodId,
        balance_kind: processing ? 'processing' : 'utilities',
        type: processing ? 'PROCESSING' : 'UTILITIES',
        category: processing ? 'PROCESSING' : 'STORAGE',
        amount_micros: -1000 * (1 + (j % 50)),
        balance_micros: -1000 * j,
        video_id: randomUUID(),
        products: JSON.stringify([
          {
            productName: 'H.264 / AVC',
            category: processing ? 'ENCODER' : 'STORAGE',
            amount: 10,
            amountUnit: 'GP',
            discountPercentage: 0,
            unitPriceMicros: 7500,
            costMicros: 1000 * (1 + (j % 50)),
            normalCostMicros: 0,
            unitPriceCredits: 1,
            costCredits: 10,
          },
        ]),
        created_at: new Date(start.getTime() + j * 1000),
      });
    }
    const [{ m }] = (await db('ledger_transactions').max({ m: 'seq' })) as [{ m: number | null }]; // an aggregate: one row
    const first = Number(m ?? 0);
    await db('ledger_transactions').insert(txs);
    await db('ledger_lines').insert(
      txs.map((t, k) => ({
        transaction_seq: first + k + 1,
        period_id: periodId,
        type: t.type,
        category: t.type === 'PROCESSING' ? CATS[k % 3] : 'STORAGE',
        amount_micros: t.amount_micros,
        video_id: t.video_id,
        created_at: t.created_at,
      })),
    );
  }
  await db('ledger_period_totals').where({ period_id: periodId }).delete();
  await db('ledger_period_counts').where({ period_id: periodId }).delete();
  await db.raw(
    `insert into ledger_period_totals (period_id, type, category, credit_micros, debit_micros)
     select period_id, type, category, sum(case when amount_micros > 0 then amount_micros else 0 end), sum(case when amount_micros < 0 then -amount_micros else 0 end)
     from ledger_lines where period_id = ? group by period_id, type, category`,
    [periodId],
  );
  await db.raw(
    `insert into ledger_period_counts (period_id, type, row_count, first_at, last_at)
     select period_id, type, count(*), min(created_at), max(created_at) from ledger_transactions where period_id = ? group by period_id, type`,
    [periodId],
  );
  await db.raw('analyze');
}

const TARGET_RATIO = 2;

/** Runs the measurement on one dialect; false when the target was missed, undefined when skipped. */
async function run(dialect: 'sqlite' | 'postgres'): Promise<boolean | undefined> {
  let database: { client: 'sqlite'; filename: string } | { client: 'pg'; connectionString: string };
  let cleanup: () => Promise<void>;
  if (dialect === 'postgres') {
    let pg: Awaited<ReturnType<typeof benchDatabase>>;
    try {
      pg = await benchDatabase('billing', { migrate: false });
    } catch (err) {
      console.log(`postgres: skipped (${(err as Error).message})`);
      return undefined;
    }
    database = { client: 'pg', connectionString: pg.url };
    cleanup = pg.drop;
  } else {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-bench-'));
    database = { client: 'sqlite', filename: path.join(dir, 'bench.sqlite') };
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  }
  const db = openDatabase(database);
  const blobDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-bench-blobs-'));
  try {
    await migrateToLatest(db);
    const clock = new ManualClock('2026-03-01T00:00:00Z');
    const s = createServices({ db, clock, masterKey: randomBytes(32), blobs: new LocalDiskStore(blobDir), config: loadConfig({}) });
    const { user, team } = await s.accounts.createUserWithTeam({ email: 'bench@example.com', password: 'bench-password-1', name: 'Bench', teamName: 'Bench' });
    await s.ledger.rollPeriods();
    const period = await db('billing_periods').where({ team_id: team.id }).first<{ id: string }>();
    const t0 = Date.now();
    await seed(db, team.id, period.id, new Date('2026-03-01T00:00:10Z'));
    clock.set('2026-03-31T00:00:00Z');
    console.log(`${dialect}: seeded ${ROWS} transactions in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    const req = { pageNumber: 0, pageSize: 10, sortDirection: 'DESC' as const };
    const operation = async () => {
      const r = await s.billing.latestTransactions(user.id, undefined, {}, req);
      if (r.totalElements !== ROWS + 1 || r.items.length !== 10) throw new Error(`unexpected page ${r.totalElements}`);
    };
    const plain = async () => {
      const rows = await db('ledger_transactions')
        .where({ period_id: period.id })
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'seq', order: 'desc' },
        ])
        .limit(10);
      if (rows.length !== 10) throw new Error('unexpected plain page');
    };
    for (let i = 0; i < 30; i++) {
      await operation();
      await plain();
    }
    if (process.env.BENCH_PROFILE) {
      const f = { from: new Date(0), to: new Date('2030-01-01'), mode: 'INCLUDE' as const };
      const { ledgerReads } = await import('../src/features/billing/testing');
      const parts: Record<string, () => Promise<unknown>> = {
        selectTeam: () => s.accounts.selectTeam(user.id),
        itemsByRef: () => ledgerReads.items(db, { latestOfTeam: team.id }, f, req),
        itemsById: () => ledgerReads.items(db, period.id, f, req),
        pageWithChosenTeam: () => ledgerReads.pageWithPeriod(db, { latestOfChosenTeam: { userId: user.id } }, { ...f, from: undefined }, req),
        pageWithPeriod: () => ledgerReads.pageWithPeriod(db, { latestOfTeam: team.id }, f, req),
        pageWithPeriodById: () => ledgerReads.pageWithPeriod(db, { id: period.id }, f, req),
        operation,
        plain,
        acquireRelease: async () => {
          const c = await (db as any).client.acquireConnection();
          await (db as any).client.releaseConnection(c);
        },
      };
      for (const [name, fn] of Object.entries(parts)) {
        const xs: number[] = [];
        for (let i = 0; i < 200; i++) {
          const t = process.hrtime.bigint();
          await fn();
          xs.push(Number(process.hrtime.bigint() - t) / 1e6);
        }
        console.log(`  ${name}: p50 ${pct(xs, 50).toFixed(3)} ms`);
      }
    }
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < ITER; i++) {
      let t = process.hrtime.bigint();
      await operation();
      a.push(Number(process.hrtime.bigint() - t) / 1e6);
      t = process.hrtime.bigint();
      await plain();
      b.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    const ratio = pct(a, 50) / pct(b, 50);
    const pass = ratio <= TARGET_RATIO;
    console.log(
      `${dialect}: latest transactions with totals p50 ${pct(a, 50).toFixed(3)} ms (p95 ${pct(a, 95).toFixed(3)}), ` +
        `plain indexed page p50 ${pct(b, 50).toFixed(3)} ms (p95 ${pct(b, 95).toFixed(3)}); ratio ${ratio.toFixed(2)}x (target <= ${TARGET_RATIO}x) ${pass ? 'PASS' : 'FAIL'}`,
    );
    return pass;
  } finally {
    await db.destroy();
    await cleanup();
    rmSync(blobDir, { recursive: true, force: true });
  }
}

/** True when every dialect that ran met the target. */
export async function billingBenchmark(): Promise<boolean> {
  const results: (boolean | undefined)[] = [];
  if (DIALECT === 'sqlite' || DIALECT === 'both') results.push(await run('sqlite'));
  if (DIALECT === 'postgres' || DIALECT === 'both') results.push(await run('postgres'));
  const ok = !results.includes(false);
  console.log(`billing: ${ok ? 'PASS' : 'FAIL'}`);
  return ok;
}

if (require.main === module) {
  billingBenchmark().then(
    (ok) => process.exit(ok ? 0 : 1),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
