/**
 * Property test of the ledger: random sequences of charges (with repeated job ids; a charge the
 * processing balance does not cover is refused), refunds,
 * top-ups, adjustments, utilities accruals and month changes with the period job. After each
 * sequence: every balance is the sum of its rows (and every running balance the prefix sum),
 * a job is charged at most once, balances match a model, and the totals by category, from the
 * maintained aggregates and from the GROUP BY path alike, equal the sums of the items' lines.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { teamRows } from '../../src/features/accounts/testing';
import { ledgerReads, periodRows, summaryFromAggregates } from '../../src/features/billing/testing';
import { DEFAULT_PRICE_LIST, LedgerService, type ProductUse } from '../../src/features/billing';
import { ManualClock } from '../../src/shared/clock';
import { createTestDatabase, TEST_DIALECT, TestDatabase } from '../helpers/database';
import { scaled } from '../helpers/timeouts';

const product: fc.Arbitrary<ProductUse> = fc.oneof(
  fc.record({ productName: fc.constantFrom(...Object.keys(DEFAULT_PRICE_LIST.encoders)), category: fc.constant('ENCODER' as const), amount: fc.double({ min: 0, max: 2500, noNaN: true }) }),
  fc.record({ productName: fc.constantFrom(...Object.keys(DEFAULT_PRICE_LIST.filters)), category: fc.constant('FILTER' as const), amount: fc.integer({ min: 0, max: 2500 }) }),
  fc.record({ productName: fc.constant('Processing'), category: fc.constant('PROCESSING' as const), amount: fc.integer({ min: 0, max: 2500 }) }),
);

type Cmd =
  | { kind: 'charge'; job: number; products: ProductUse[] }
  | { kind: 'refund'; job: number }
  | { kind: 'topUp'; micros: number }
  | { kind: 'adjust'; micros: number; balance: 'processing' | 'utilities' }
  | { kind: 'utility'; job: number; gb: number; category: 'STORAGE' | 'DOWNLOAD_S3' | 'DOWNLOAD_HTTPS' }
  | { kind: 'time'; hours: number };

const command: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({ kind: fc.constant('charge' as const), job: fc.integer({ min: 0, max: 6 }), products: fc.array(product, { minLength: 1, maxLength: 3 }) }),
  fc.record({ kind: fc.constant('refund' as const), job: fc.integer({ min: 0, max: 6 }) }),
  fc.record({ kind: fc.constant('topUp' as const), micros: fc.integer({ min: 1, max: 500_000_000 }) }),
  fc.record({ kind: fc.constant('adjust' as const), micros: fc.integer({ min: -50_000_000, max: 50_000_000 }), balance: fc.constantFrom('processing' as const, 'utilities' as const) }),
  fc.record({
    kind: fc.constant('utility' as const),
    job: fc.integer({ min: 0, max: 6 }),
    gb: fc.double({ min: 0, max: 500, noNaN: true }),
    category: fc.constantFrom('STORAGE' as const, 'DOWNLOAD_S3' as const, 'DOWNLOAD_HTTPS' as const),
  }),
  fc.record({ kind: fc.constant('time' as const), hours: fc.integer({ min: 1, max: 24 * 40 }) }),
);

describe(`Ledger properties (${TEST_DIALECT})`, function () {
  this.timeout(scaled(240_000));
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(() => database.drop());

  const stats = { rows: 0 };
  it('balances are sums, no double charge per job, totals by category equal their items', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 25 }), async (cmds) => {
        const db = database.db;
        const clock = new ManualClock('2026-01-20T08:00:00Z');
        const ledger = new LedgerService({ db, clock, priceList: DEFAULT_PRICE_LIST });
        const teamId = randomUUID();
        await teamRows.insert(db, { id: teamId, name: 'prop', apiEnabled: true, billingType: 'WALLET', createdAt: clock.now() });
        const model = { processing: 0, utilities: 0 };
        const charged = new Map<number, number>();
        const refunded = new Set<number>();
        const accrued = new Set<number>();
        for (const c of cmds) {
          clock.advance(1000);
          switch (c.kind) {
            case 'charge': {
              const jobId = `${teamId}:job:${c.job}`;
              // A wallet processing charge needs cover (a repeated job id answers the first charge).
              const { costMicros } = await ledger.estimate(teamId, c.products);
              if (!charged.has(c.job) && model.processing < costMicros) {
                await assert.rejects(ledger.charge(teamId, { jobId, products: c.products }), { status: 409, errorCode: 'INSUFFICIENT_PROJECTED_BALANCE_ERROR' });
                break;
              }
              const r = await ledger.charge(teamId, { jobId, products: c.products });
              assert.equal(r.duplicate, charged.has(c.job));
              if (!r.duplicate && r.billingType === 'WALLET') assert.ok(model.processing + r.amountMicros >= 0, 'a charge never takes the processing balance below zero');
              if (!charged.has(c.job) && r.billingType === 'WALLET') {
                charged.set(c.job, r.amountMicros);
                model.processing += r.amountMicros;
              }
              break;
            }
            case 'refund': {
              const ok = await ledger.refund(teamId, `${teamId}:job:${c.job}`, 'PROCESSING_FAILED');
              assert.equal(ok, charged.has(c.job));
              if (ok && !refunded.has(c.job)) {
                refunded.add(c.job);
                model.processing -= charged.get(c.job)!;
              }
              break;
            }
            case 'topUp': {
              const booked = Math.round(c.micros / 1000) * 1000;
              // An amount that rounds to zero mills is refused, not booked as 0.
              if (booked === 0) await assert.rejects(ledger.topUp(teamId, c.micros), { errorCode: 'INVALID_INPUT' });
              else await ledger.topUp(teamId, c.micros);
              model.processing += booked;
              break;
            }
            case 'adjust': {
              const booked = Math.sign(c.micros) * Math.round(Math.abs(c.micros) / 1000) * 1000;
              const adjust = () => ledger.adjust(teamId, { amountMicros: c.micros, adjustmentType: 'MANUAL_ADJUSTMENT', reason: 'prop', balance: c.balance });
              if (booked === 0) await assert.rejects(adjust(), { errorCode: 'INVALID_INPUT' });
              else await adjust();
              model[c.balance] += booked;
              break;
            }
            case 'utility': {
              const r = await ledger.accrueUtility(teamId, { jobId: `${teamId}:util:${c.job}`, product: { productName: c.category, category: c.category, amount: c.gb } });
              assert.equal(r.duplicate, accrued.has(c.job));
              if (!accrued.has(c.job) && r.billingType === 'WALLET') {
                accrued.add(c.job);
                model.utilities += r.amountMicros;
              }
              break;
            }
            case 'time':
              clock.advance(c.hours * 3600_000);
              await ledger.rollPeriods();
              break;
          }
        }

        const rows = await ledgerReads.allForTeam(db, teamId);
        stats.rows += rows.length;
        for (const kind of ['processing', 'utilities'] as const) {
          let sum = 0;
          for (const r of rows.filter((x) => x.balanceKind === kind)) {
            sum += r.amountMicros;
            assert.equal(r.balanceMicros, sum, `running ${kind} balance`);
            assert.ok(r.amountMicros % 1000 === 0, 'whole mills');
          }
          assert.equal(await ledgerReads.balance(db, teamId, kind), sum);
          assert.equal(sum, model[kind], `${kind} balance matches the model`);
        }
        const jobIds = rows.filter((r) => r.jobId).map((r) => r.jobId);
        assert.equal(new Set(jobIds).size, jobIds.length, 'one row per job id');

        // Periods: at most one open; totals per category equal the sums of the items' lines.
        const periods = (await db('billing_periods').where({ team_id: teamId })).map((p: any) => p.id as string);
        assert.ok((await db('billing_periods').where({ team_id: teamId }).whereNull('ended_at')).length <= 1);
        for (const periodId of periods) {
          const lines = await db('ledger_lines').where({ period_id: periodId });
          const expected = new Map<string, { credit: number; debit: number }>();
          for (const l of lines) {
            const e = expected.get(l.category) ?? { credit: 0, debit: 0 };
            const a = Number(l.amount_micros);
            if (a >= 0) e.credit += a;
            else e.debit -= a;
            expected.set(l.category, e);
          }
          const period = (await periodRows.byId(db, periodId))!;
          const whole = { from: new Date(0), to: new Date('2100-01-01T00:00:00Z'), mode: 'INCLUDE' as const };
          const viaAggregates = await ledgerReads.summary(db, periodId, whole);
          assert.equal(viaAggregates.fromAggregates, true);
          const viaScan = await ledgerReads.summary(db, periodId, { ...whole, from: new Date(period.createdAt.getTime() - 1) }, false);
          assert.equal(viaScan.fromAggregates, false);
          const items = await ledgerReads.items(db, periodId, whole, { pageNumber: 0, pageSize: 100_000, sortDirection: 'ASC' });
          assert.equal(viaAggregates.count, items.length);
          assert.equal(viaScan.count, items.length);
          const onePass = await ledgerReads.pageWithPeriod(db, { id: periodId }, whole, { pageNumber: 0, pageSize: 100_000, sortDirection: 'ASC' });
          assert.deepEqual(
            onePass.items.map((t) => t.seq),
            items.map((t) => t.seq),
          );
          const viaPage = summaryFromAggregates(onePass.aggregates, whole)!;
          assert.ok(viaPage, 'the whole-period filter is served from the aggregates');
          for (const s of [viaAggregates, viaScan, viaPage]) {
            const got = new Map(s.totals.map((t) => [t.category, { credit: t.credit, debit: t.debit }]));
            for (const [cat, e] of expected) assert.deepEqual(got.get(cat as any) ?? { credit: 0, debit: 0 }, e, `totals of ${cat}`);
            const net = s.totals.reduce((x, t) => x + t.credit - t.debit, 0);
            assert.equal(
              net,
              items.reduce((x, t) => x + t.amountMicros, 0),
              'net total equals the sum of the items',
            );
          }
        }
      }),
      { numRuns: TEST_DIALECT === 'postgres' ? 15 : 40 },
    );
    assert.ok(stats.rows > 0, 'the runs booked transactions');
  });
});
