/**
 * Storage billing (docs/billing.md): stored bytes sampled over time, charged daily and at the
 * month's close as UTILITIES / STORAGE records, exactly once, on both ledgers.
 */
import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { DEFAULT_PRICE_LIST, StorageMeters } from '../../src/features/billing';
import { creditReads, ledgerReads, storageReads } from '../../src/features/billing/testing';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser, linkTestAgreement } from '../helpers/harness';
import { apiRequests } from '../helpers/scenario';
import { storedVideo } from '../helpers/stored-video';
import { scaled } from '../helpers/timeouts';

const DAY = 24 * 3600_000;
const MB = Buffer.alloc(1_000_000, 7);
/** 3000 USD (3,000,000 credits) per GB-month: 1 MB stored for a 30-day month costs 3 USD, 0.1 USD a day. */
const PRICES = { ...DEFAULT_PRICE_LIST, storage: { usd: 3000, credits: 3_000_000 } };

describe(`Storage billing (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  const { get } = apiRequests(
    () => h,
    () => u,
  );
  /** A stored video as video in leaves it, with the sample its copy job takes. */
  const store = async (owner: TestUser, data = MB) => {
    const id = await storedVideo(h, owner, { data });
    await new StorageMeters(h.services.db).sample(owner.teamId, h.clock.now());
    return id;
  };
  const storageTransactions = async (teamId: string) => (await ledgerReads.allForTeam(h.services.db, teamId)).filter((t) => t.category === 'STORAGE');
  const run = () => h.services.storageBilling.run();

  beforeEach(async () => {
    h = await createHarness({ priceList: PRICES });
    h.clock.set('2026-11-10T00:00:00Z');
    u = await h.user({ teamName: 'Storage team' });
  });
  afterEach(() => h.close());

  it("storage is charged daily and at the month close; a period's storageCostUsd is the sum of its storage transactions", async () => {
    await store(u);
    await run();
    assert.equal((await storageTransactions(u.teamId)).length, 0, 'nothing is due before a day of usage');
    h.clock.advance(DAY);
    await run();
    let tx = await storageTransactions(u.teamId);
    assert.deepEqual(
      tx.map((t) => t.amountMicros),
      [-100_000],
      'one day of 1 MB: 0.1 USD',
    );
    assert.equal(tx[0]!.type, 'UTILITIES');
    assert.equal(tx[0]!.balanceKind, 'utilities');
    assert.equal(tx[0]!.products?.[0]!.productName, 'Storage');
    h.clock.advance(6 * 3600_000);
    await run();
    assert.equal((await storageTransactions(u.teamId)).length, 1, 'the next batch waits a day');

    // The month closes: the period job books usage up to the end of November into November.
    h.clock.set('2026-12-01T00:05:00Z');
    await h.services.ledger.rollPeriods();
    tx = await storageTransactions(u.teamId);
    assert.deepEqual(
      tx.map((t) => t.amountMicros),
      [-100_000, -2_000_000],
      '21 days of November: 2.1 USD in all',
    );
    const periods = (await get(`/v2/wallet/billing-periods?teamId=${u.teamId}&sortDirection=ASC`)).body.items;
    assert.equal(periods.length, 2);
    const [november, december] = periods;
    assert.equal(november.endedAt, '2026-12-01T00:00:00.000Z');
    assert.equal(november.storageCostUsd, 2.1);
    const list = (await get(`/v2/wallet/billing-periods/${november.id}/transactions?processingTransactionsMode=EXCLUDE&pageSize=100`)).body;
    const storage = list.items.filter((t: any) => t.product?.category === 'STORAGE');
    assert.equal(
      storage.reduce((s: number, t: any) => s + t.amountUsd, 0),
      -2.1,
    );
    assert.equal(list.totals.totalsByCategory.find((c: any) => c.category === 'STORAGE').netTotalUsd, -2.1);
    assert.equal(storage[0].product.unitPriceUsd, 3000);
    assert.equal(storage[0].product.amountUnit, 'GB');

    // December's usage goes to December's period.
    h.clock.set('2026-12-02T00:05:00Z');
    await run();
    const decemberList = (await get(`/v2/wallet/billing-periods/${december.id}/transactions?pageSize=100`)).body;
    const decemberStorage = decemberList.items.filter((t: any) => t.product?.category === 'STORAGE');
    assert.equal(decemberStorage.length, 1);
    // 1 MB for a day and 5 minutes of a 31-day month (0.0971 USD), rounded up to the mill
    assert.equal(decemberStorage[0].amountUsd, -0.098);
    assert.equal((await get(`/v2/wallet/billing-periods/${december.id}`)).body.storageCostUsd, 0.098);
    assert.equal((await get('/v2/wallet/financial-details')).body.utilitiesBalanceUsd, -2.198);
  });

  it('deletion stops accrual at the moment of deletion', async () => {
    const video = await store(u);
    await store(u, Buffer.alloc(500_000, 1));
    h.clock.advance(12 * 3600_000);
    const del = await h.request.delete(`/api/v1/videos/${video}`).set('X-API-Key', u.apiKey);
    assert.equal(del.status, 200);
    h.clock.advance(DAY);
    await run();
    // 1 MB for 12 h + 0.5 MB for 36 h = 0.05 + 0.075 USD
    assert.deepEqual(
      (await storageTransactions(u.teamId)).map((t) => t.amountMicros),
      [-125_000],
    );
    const usage = await storageReads.usageOfTeam(h.services.db, u.teamId);
    assert.ok(
      usage.every((r) => r.chargeId),
      'every interval billed',
    );
  });

  it('exactly once: a charge that dies before its commit books nothing and loses nothing; concurrent runs charge once', async () => {
    await store(u);
    h.clock.advance(2 * DAY);
    await assert.rejects(
      h.services.db.transaction(async (trx) => {
        await h.services.storageBilling.within(trx).billTeam(u.teamId);
        throw new Error('process killed before the commit');
      }),
      /killed/,
    );
    assert.equal((await storageTransactions(u.teamId)).length, 0);
    assert.equal((await storageReads.chargesOfTeam(h.services.db, u.teamId)).length, 0);
    assert.ok((await storageReads.usageOfTeam(h.services.db, u.teamId)).every((r) => !r.chargeId));

    const other = h.anotherProcess().services.storageBilling;
    const runs: Array<() => Promise<unknown>> = [run, () => h.services.storageBilling.billTeam(u.teamId)];
    // Another process at the same time on PostgreSQL. On SQLite (one writer per file) both
    // connections here share one thread, so a waiting one would block the other: it runs after.
    if (TEST_DIALECT === 'postgres') runs.push(() => other.run());
    await Promise.all(runs.map((r) => r()));
    if (TEST_DIALECT === 'sqlite') await other.run();
    assert.deepEqual(
      (await storageTransactions(u.teamId)).map((t) => t.amountMicros),
      [-200_000],
    );
    await run();
    assert.equal((await storageTransactions(u.teamId)).length, 1);
  });

  it('storage changes and charges of one team at the same time do not deadlock and count every byte once (lock order: team, then meter)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await store(u, Buffer.alloc(100_000, i)));
    h.clock.advance(2 * DAY);
    // On PostgreSQL the charges run in another process, interleaved with the deletions; on SQLite
    // (one writer) the one connection runs them in turn.
    const biller = TEST_DIALECT === 'postgres' ? h.anotherProcess().services.storageBilling : h.services.storageBilling;
    const work: Promise<unknown>[] = [];
    for (const id of ids) {
      work.push(
        h.request
          .delete(`/api/v1/videos/${id}`)
          .set('X-API-Key', u.apiKey)
          .then((r) => assert.equal(r.status, 200, JSON.stringify(r.body))),
      );
      work.push(biller.billTeam(u.teamId));
    }
    await Promise.all(work);
    h.clock.advance(DAY);
    await run();
    // 600 kB for two days of November: 0.12 USD, charged once in all
    assert.equal(
      (await storageTransactions(u.teamId)).reduce((s, t) => s + t.amountMicros, 0),
      -120_000,
    );
    assert.equal((await storageReads.meter(h.services.db, u.teamId))?.bytes, 0);
  });

  it('cloud marketplace: storage is charged in credits, and waits while the team has no current agreement', async () => {
    const m = await h.user({ billingType: 'CLOUD_MARKETPLACE' });
    await store(m);
    h.clock.advance(DAY);
    await run();
    assert.equal((await creditReads.allForTeam(h.services.db, m.teamId)).length, 0, 'no agreement: nothing charged');
    await linkTestAgreement(h, m.teamId, 'agmt-storage');
    h.clock.advance(DAY);
    await run();
    const usage = await creditReads.allForTeam(h.services.db, m.teamId);
    assert.equal(usage.length, 1);
    assert.equal(usage[0]!.type, 'UTILITIES');
    assert.equal(usage[0]!.category, 'STORAGE');
    assert.equal(usage[0]!.agreementId, 'agmt-storage');
    assert.equal(usage[0]!.credits, 200, 'two days of 1 MB at 3,000,000 credits per GB-month (30-day month)');
    const res = await get('/v2/cloud-marketplace/credits-usage', m);
    assert.equal(res.body.items[0].product.category, 'STORAGE');
    assert.equal(res.body.items[0].product.unitPriceCredits, 3_000_000);
  });

  it('the totals of every month equal the price of its GB-months, rounded up once (random timelines over a month boundary)', async function () {
    this.timeout(scaled(180_000));
    const microsOf = (gbMonths: number) => gbMonths * 3000 * 1e6;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('store' as const), kb: fc.integer({ min: 1, max: 900 }) }),
            fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
            fc.record({ kind: fc.constant('wait' as const), minutes: fc.integer({ min: 1, max: 4 * 24 * 60 }) }),
            fc.record({ kind: fc.constant('run' as const) }),
          ),
          { minLength: 3, maxLength: 14 },
        ),
        async (steps) => {
          h.clock.set('2026-11-24T06:00:00Z');
          const owner = await h.user();
          await h.services.ledger.rollPeriods(); // the period task opens the team's first period
          const live = new Map<string, number>();
          // The exact cost (micro-USD) of each month, from the test's own timeline.
          const expected = new Map<number, number>();
          let last = h.clock.now().getTime();
          const accrue = () => {
            const until = h.clock.now().getTime();
            const bytes = [...live.values()].reduce((a, b) => a + b, 0);
            for (let from = last; from < until;) {
              const d = new Date(from);
              const month = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
              const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
              const to = Math.min(next, until);
              expected.set(month, (expected.get(month) ?? 0) + microsOf(((bytes / 1e9) * (to - from)) / (next - month)));
              from = to;
            }
            last = until;
          };
          /** Moves the clock; the period task runs a minute after each month boundary passed. */
          const advanceTo = async (t: number) => {
            for (;;) {
              const d = h.clock.now();
              const boundary = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
              if (boundary + 60_000 > t) break;
              h.clock.set(new Date(boundary + 60_000));
              await h.services.ledger.rollPeriods();
            }
            h.clock.set(new Date(t));
          };
          for (const s of steps) {
            if (s.kind === 'store') {
              accrue();
              const data = Buffer.alloc(s.kb * 1000, 3);
              live.set(await store(owner, data), data.length);
            } else if (s.kind === 'delete' && live.size) {
              accrue();
              const id = [...live.keys()][s.pick % live.size]!;
              await h.services.videos.delete(owner.userId, id);
              live.delete(id);
            } else if (s.kind === 'wait') {
              await advanceTo(h.clock.now().getTime() + s.minutes * 60_000);
            } else if (s.kind === 'run') {
              await run();
            }
          }
          // Past the end of December: both months closed by the period task, every batch billed.
          await advanceTo(Date.UTC(2027, 0, 5));
          accrue();
          await run();

          const periods = (await get(`/v2/wallet/billing-periods?teamId=${owner.teamId}&pageSize=100`, owner)).body.items;
          const tx = await storageTransactions(owner.teamId);
          const chargedIn = (periodId: string) => -tx.filter((t) => t.periodId === periodId).reduce((s, t) => s + t.amountMicros, 0) || 0;
          for (const p of periods) {
            assert.equal(Math.round(p.storageCostUsd * 1e6), chargedIn(p.id), `period ${p.createdAt}: storageCostUsd is the sum of its storage transactions`);
          }
          for (const [month, end] of [
            [Date.UTC(2026, 10, 1), Date.UTC(2026, 11, 1)],
            [Date.UTC(2026, 11, 1), Date.UTC(2027, 0, 1)],
          ] as const) {
            const p = periods.find((x: any) => x.endedAt && Date.parse(x.endedAt) === end);
            assert.ok(p, `a period ends at ${new Date(end).toISOString()}`);
            const charged = chargedIn(p.id);
            const exact = expected.get(month) ?? 0;
            assert.ok(charged >= exact - 1 && charged < exact + 1000 + 1, `${new Date(month).toISOString()}: charged ${charged} for exactly ${exact} micro-USD`);
            assert.equal(charged % 1000, 0, 'whole mills');
          }
        },
      ),
      { numRuns: TEST_DIALECT === 'postgres' ? 10 : 20 },
    );
  });
});
