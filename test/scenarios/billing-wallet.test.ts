import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { ledgerReads, periodRows, toPeriod } from '../../src/features/billing/testing';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, expectError, Harness, TestUser, linkTestAgreement } from '../helpers/harness';
import { apiRequests } from '../helpers/scenario';
import { scaled } from '../helpers/timeouts';

describe(`Wallet billing (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  const { get } = apiRequests(
    () => h,
    () => u,
  );
  const video = randomUUID();
  const enc = encodeURIComponent;
  const job = (jobId: string, videoId = video) => ({
    jobId,
    videoId,
    sourceVideoId: randomUUID(),
    products: [
      { productName: 'Super-resolution 4x', category: 'FILTER' as const, amount: 329 },
      { productName: 'H.264 / AVC', category: 'ENCODER' as const, amount: 330 },
    ],
  });

  beforeEach(async () => {
    h = await createHarness();
    h.clock.set('2026-03-10T12:00:00Z');
    u = await h.user({ teamName: 'Wallet team' });
  });
  afterEach(() => h.close());

  it('financial details start at zero and follow top-ups, charges and refunds', async () => {
    let res = await get('/v2/wallet/financial-details');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      processingCreditsBalanceUsd: 0,
      processingLifetimeSpendUsd: 0,
      processingBaseVolumeDiscountGp: 0,
      processingBaseVolumeDiscountPercentage: 0,
      utilitiesBalanceUsd: 0,
    });
    await h.services.ledger.topUp(u.teamId, 100_000_000);
    h.clock.advance(1000);
    const charge = await h.services.ledger.charge(u.teamId, job('job-1'));
    assert.equal(charge.billingType, 'WALLET');
    res = await get('/v2/wallet/financial-details');
    // 329 GP x 0.03 + 330 GP x 0.0075 = 12.345, minus a 8.25 % volume discount (330 of 1000 GP x 25 %)
    const spend = -(charge as any).amountMicros / 1e6;
    assert.equal(res.body.processingLifetimeSpendUsd, spend);
    assert.equal(res.body.processingCreditsBalanceUsd, Math.round((100 - spend) * 1000) / 1000);
    // A processing failure's refund (type OTHER) counts against the spend like an ingestion failure's; once.
    await h.services.ledger.refund(u.teamId, 'job-1', 'PROCESSING_FAILED');
    await h.services.ledger.refund(u.teamId, 'job-1', 'PROCESSED_VIDEO_INGESTION_FAILED');
    res = await get('/v2/wallet/financial-details');
    assert.equal(res.body.processingLifetimeSpendUsd, 0);
    assert.equal(res.body.processingCreditsBalanceUsd, 100);
  });

  it('a charge is idempotent by job id', async () => {
    await h.services.ledger.topUp(u.teamId, 100_000_000);
    const a = await h.services.ledger.charge(u.teamId, job('job-x'));
    const b = await h.services.ledger.charge(u.teamId, job('job-x'));
    assert.equal(a.duplicate, false);
    assert.equal(b.duplicate, true);
    const res = await get('/v2/wallet/billing-periods/latest/transactions');
    assert.equal(res.status, 200);
    assert.equal(res.body.items.filter((t: any) => t.type === 'PROCESSING' && !t.accountAdjustment).length, 1);
  });

  it('latest transactions: period, resolved filters, items with products, totals over the filtered set', async () => {
    await h.services.ledger.topUp(u.teamId, 100_000_000);
    h.clock.advance(1000);
    await h.services.ledger.charge(u.teamId, job('job-1'));
    h.clock.advance(1000);
    await h.services.ledger.accrueUtility(u.teamId, { jobId: 'storage-1', videoId: video, product: { productName: 'Storage', category: 'STORAGE', amount: 12.4 } });
    h.clock.advance(1000);
    const res = await get('/v2/wallet/billing-periods/latest/transactions?pageSize=2');
    assert.equal(res.status, 200);
    const b = res.body;
    assert.equal(b.totalElements, 4); // period start, top-up, charge, storage
    assert.equal(b.numberOfElements, 2);
    assert.equal(b.totalPages, 2);
    assert.equal(b.billingPeriod.teamId, u.teamId);
    assert.equal(b.billingPeriod.endedAt, null);
    assert.equal(b.billingPeriod.storageCostUsd, 0.298);
    assert.equal(b.filterProcessingTransactionsMode, 'INCLUDE');
    assert.equal(b.filterByFromDateTime, '2026-03-10T12:00:00.000Z');
    assert.equal(b.filterByToDateTime, h.clock.now().toISOString());
    assert.equal(b.items[0].accountAdjustment.type, 'BILLING_PERIOD_STARTED');
    assert.equal(b.items[1].accountAdjustment.type, 'CREDITS_BOUGHT');
    assert.equal(b.items[1].amountUsd, 100);
    const all = b.totals.totalsForAllCategories;
    const byCat = Object.fromEntries(b.totals.totalsByCategory.map((t: any) => [t.category, t]));
    assert.equal(byCat.OTHER.totalCreditUsd, 100);
    assert.equal(byCat.STORAGE.totalDebitUsd, 0.298);
    assert.ok(byCat.FILTER.totalDebitUsd > 0 && byCat.ENCODER.totalDebitUsd > 0);
    const debit = b.totals.totalsByCategory.reduce((s: number, t: any) => s + Math.round(t.totalDebitUsd * 1000), 0);
    assert.equal(Math.round(all.totalDebitUsd * 1000), debit);

    const page2 = (await get('/v2/wallet/billing-periods/latest/transactions?pageSize=2&pageNumber=1')).body;
    const charge = page2.items[0];
    assert.equal(charge.type, 'PROCESSING');
    assert.equal(charge.videoId, video);
    assert.equal(charge.details.products.length, 2);
    assert.equal(charge.details.discountPercentage, 8.25);
    assert.equal(page2.items[1].type, 'UTILITIES');
    assert.equal(page2.items[1].product.category, 'STORAGE');
    assert.equal(page2.items[1].balanceUsd, -0.298);

    // Filters: only processing; only utilities; by video; by time window; sort descending.
    const only = (await get('/v2/wallet/billing-periods/latest/transactions?processingTransactionsMode=ONLY')).body;
    assert.ok(only.items.every((t: any) => t.type === 'PROCESSING'));
    assert.equal(only.totalElements, 2);
    assert.equal(only.filterProcessingTransactionsMode, 'ONLY');
    const excl = (await get('/v2/wallet/billing-periods/latest/transactions?processingTransactionsMode=EXCLUDE')).body;
    assert.equal(excl.totalElements, 2);
    assert.deepEqual(
      excl.totals.totalsByCategory.map((t: any) => t.category),
      ['STORAGE', 'OTHER'],
    );
    const byVideo = (await get(`/v2/wallet/billing-periods/latest/transactions?videoId=${video}`)).body;
    assert.equal(byVideo.totalElements, 2);
    assert.equal(byVideo.filterByVideoId, video);
    assert.equal(byVideo.totals.totalsForAllCategories.totalCreditUsd, 0);
    const window = (await get(`/v2/wallet/billing-periods/latest/transactions?fromDateTime=${enc('2026-03-10T12:00:00.500Z')}&toDateTime=${enc('2026-03-10T12:00:01.500Z')}`)).body;
    assert.equal(window.totalElements, 1);
    assert.equal(window.items[0].accountAdjustment, undefined);
    assert.equal(window.totals.totalsByCategory.length, 2);
    const desc = (await get('/v2/wallet/billing-periods/latest/transactions?sortDirection=DESC')).body;
    assert.equal(desc.items[0].type, 'UTILITIES');
  });

  it('the period job closes a month and opens the next, with BILLING_PERIOD_STARTED', async () => {
    assert.deepEqual(await h.services.ledger.rollPeriods(), { closed: 0, opened: 1 });
    assert.deepEqual(await h.services.ledger.rollPeriods(), { closed: 0, opened: 0 });
    await h.services.ledger.topUp(u.teamId, 5_000_000);
    h.clock.set('2026-04-01T00:03:00Z');
    assert.deepEqual(await h.services.ledger.rollPeriods(), { closed: 1, opened: 1 });
    const periods = (await get('/v2/wallet/billing-periods?sortDirection=ASC')).body;
    assert.equal(periods.totalElements, 2);
    assert.equal(periods.items[0].endedAt, '2026-04-01T00:00:00.000Z');
    assert.equal(periods.items[1].createdAt, '2026-04-01T00:00:00.000Z');
    assert.equal(periods.items[1].endedAt, null);
    const ended = (await get('/v2/wallet/billing-periods?endedMode=ONLY')).body;
    assert.deepEqual(
      ended.items.map((p: any) => p.id),
      [periods.items[0].id],
    );
    const open = (await get('/v2/wallet/billing-periods?endedMode=EXCLUDE')).body;
    assert.deepEqual(
      open.items.map((p: any) => p.id),
      [periods.items[1].id],
    );
    const latest = (await get('/v2/wallet/billing-periods/latest/transactions')).body;
    assert.equal(latest.billingPeriod.id, periods.items[1].id);
    assert.equal(latest.items.length, 1);
    assert.equal(latest.items[0].accountAdjustment.type, 'BILLING_PERIOD_STARTED');
    const first = (await get(`/v2/wallet/billing-periods/${periods.items[0].id}/transactions`)).body;
    assert.equal(first.totalElements, 2);
    assert.equal(first.items[1].balanceUsd, 5);
    assert.equal((await get(`/v2/wallet/billing-periods/${periods.items[0].id}`)).body.endedAt, '2026-04-01T00:00:00.000Z');
    // balances carry over: the wallet still holds 5 USD
    assert.equal((await get('/v2/wallet/financial-details')).body.processingCreditsBalanceUsd, 5);
  });

  it('a billing period starts at the first instant of its month whichever task or charge opens it; two concurrent openers make one period', async () => {
    const ledger = h.services.ledger;
    await ledger.topUp(u.teamId, 50_000_000); // opens the team's first period (it starts when the team was created)
    const periods = async () =>
      (await h.services.db('billing_periods').where({ team_id: u.teamId }).orderBy('created_at')).map((r: any) => {
        const p = toPeriod(r);
        return { id: p.id, createdAt: p.createdAt.toISOString(), endedAt: p.endedAt ?? null };
      });
    const openers: Array<[string, () => Promise<unknown>]> = [
      ['a storage charge', () => ledger.accrueUtility(u.teamId, { jobId: `storage-${randomUUID()}`, product: { productName: 'Storage', category: 'STORAGE', amount: 1.5 } })],
      ['a processing charge', () => ledger.charge(u.teamId, job(`job-${randomUUID()}`))],
      ['a download charge', () => ledger.accrueUtility(u.teamId, { jobId: `dl-${randomUUID()}`, product: { productName: 'Download', category: 'DOWNLOAD_HTTPS', amount: 2 } })],
      ['a top-up', () => ledger.topUp(u.teamId, 1_000_000)],
      ['the period job', () => ledger.rollPeriods()],
    ];
    const closeAt = async (boundary: string) => {
      const open = (await periods()).filter((p) => p.endedAt === null);
      assert.equal(open.length, 1);
      await periodRows.end(h.services.db, open[0]!.id, new Date(boundary));
      h.clock.set(new Date(Date.parse(boundary) + 5 * 60_000));
    };
    let month = 4;
    for (const [name, open] of openers) {
      const first = `2026-${String(month).padStart(2, '0')}-01T00:00:00.000Z`;
      // The team's period was closed at the month's boundary, none is open; the opener comes at 00:05.
      await closeAt(first);
      await open();
      const latest = (await periods()).at(-1)!;
      assert.equal(latest.createdAt, first, `${name} at 00:05 opens a period starting at ${first}`);
      assert.equal(latest.endedAt, null);
      month++;
    }
    // Two openers at once (any number of processes): one period, starting at the boundary.
    const first = `2026-${String(month).padStart(2, '0')}-01T00:00:00.000Z`;
    await closeAt(first);
    await Promise.all(openers.map(([, open]) => open()));
    const open = (await periods()).filter((p) => p.endedAt === null);
    assert.equal(open.length, 1, JSON.stringify(open));
    assert.equal(open[0]!.createdAt, first);
  });

  it('period date filters: fromDate/toDate, defaults, from after to is 400 INVALID_DATE_TIME_RANGE', async () => {
    await h.services.ledger.rollPeriods();
    let res = await get(`/v2/wallet/billing-periods?teamId=${u.teamId}&fromDate=2026-03-10&toDate=2026-03-10`);
    assert.equal(res.body.totalElements, 1);
    res = await get(`/v2/wallet/billing-periods?fromDate=2026-03-11`);
    expectError(res, 400, 'INVALID_DATE_TIME_RANGE'); // toDate defaults to today (2026-03-10)
    expectError(await get('/v2/wallet/billing-periods?fromDate=2026-02-02&toDate=2026-02-01'), 400, 'INVALID_DATE_TIME_RANGE');
    res = await get('/v2/wallet/billing-periods?toDate=2026-03-09');
    assert.equal(res.body.totalElements, 0);
    expectError(await get('/v2/wallet/billing-periods?fromDate=yesterday'), 400, 'VALIDATION_ERROR');
    expectError(await get(`/v2/wallet/billing-periods?fromDate=${enc('2026-02-30T00:00:00Z')}`), 400, 'VALIDATION_ERROR');
    expectError(await get('/v2/wallet/billing-periods?endedMode=SOMETIMES'), 400, 'VALIDATION_ERROR');
    expectError(await get('/v2/wallet/billing-periods?pageSize=0'), 400, 'VALIDATION_ERROR');
    expectError(await get('/v2/wallet/billing-periods?pageSize=101'), 400, 'VALIDATION_ERROR');
    expectError(await get('/v2/wallet/billing-periods?pageNumber=-1'), 400, 'VALIDATION_ERROR');
    // A number past int32 (1e999 reads as Infinity) is refused, not echoed into the page (found by the contract fuzzer).
    expectError(await get('/v2/wallet/billing-periods?pageNumber=1e999'), 400, 'VALIDATION_ERROR');
    expectError(await get('/v1/teams?pageNumber=1e999'), 400, 'VALIDATION_ERROR');
    expectError(await get('/v2/wallet/billing-periods?pageNumber=2147483648'), 400, 'VALIDATION_ERROR');
  });

  it('transaction filters: bad date-times, from after to, page bounds', async () => {
    await h.services.ledger.rollPeriods();
    const base = '/v2/wallet/billing-periods/latest/transactions';
    expectError(await get(`${base}?fromDateTime=${enc('2026-03-10T12:00:00Z')}&toDateTime=${enc('2026-03-10T11:00:00Z')}`), 400, 'INVALID_DATE_TIME_RANGE');
    expectError(await get(`${base}?fromDateTime=${enc('2027-01-01T00:00:00Z')}`), 400, 'INVALID_DATE_TIME_RANGE');
    expectError(await get(`${base}?fromDateTime=not-a-date`), 400, 'VALIDATION_ERROR');
    expectError(await get(`${base}?videoId=nope`), 400, 'VALIDATION_ERROR');
    expectError(await get(`${base}?processingTransactionsMode=ALL`), 400, 'VALIDATION_ERROR');
    expectError(await get(`${base}?pageSize=101`), 400, 'VALIDATION_ERROR');
    const past = (await get(`${base}?pageNumber=5`)).body;
    assert.equal(past.numberOfElements, 0);
    assert.equal(past.totalElements, 1);
  });

  it('latest transactions: the default team (oldest API-enabled), selectTeamId, and every team-selection error', async () => {
    const latest = (query = '') => get(`/v2/wallet/billing-periods/latest/transactions${query}`);
    const first = h.clock.now();
    await h.services.ledger.topUp(u.teamId, 1_000_000);
    h.clock.advance(60_000);
    const second = await h.services.accounts.createTeam({ name: 'Second', ownerEmail: u.email });
    await h.services.ledger.topUp(second.id, 2_000_000);
    h.clock.advance(1000);
    const amounts = (res: any) => res.body.items.map((t: any) => t.amountUsd).filter((a: number) => a > 0);
    // default: the oldest API-enabled team; the lower bound defaults to that team's creation
    let res = await latest();
    assert.equal(res.status, 200);
    assert.deepEqual(amounts(res), [1]);
    assert.equal(res.body.filterByFromDateTime, first.toISOString());
    res = await latest(`?selectTeamId=${second.id}`);
    assert.deepEqual(amounts(res), [2]);
    assert.equal(res.body.filterByFromDateTime, second.createdAt.toISOString());
    res = await latest(`?selectTeamId=${u.teamId}`);
    assert.deepEqual(amounts(res), [1]);
    // the first team no longer API-enabled: the default moves on, selecting it is refused
    await h.services.accounts.updateTeam(u.teamId, { apiEnabled: false });
    assert.deepEqual(amounts(await latest()), [2]);
    expectError(await latest(`?selectTeamId=${u.teamId}`), 403, 'ACCESS_DENIED');
    const other = await h.user();
    expectError(await latest(`?selectTeamId=${other.teamId}`), 403, 'FORBIDDEN');
    expectError(await latest(`?selectTeamId=${randomUUID()}`), 403, 'FORBIDDEN'); // an unknown team: as a team of someone else
    // the lower bound before the team existed is kept as given
    res = await latest(`?selectTeamId=${second.id}&fromDateTime=${enc(first.toISOString())}`);
    assert.equal(res.body.filterByFromDateTime, first.toISOString());
    assert.deepEqual(amounts(res), [2]);
    await h.services.accounts.updateTeam(second.id, { apiEnabled: false });
    expectError(await latest(), 403, 'DEFAULT_TEAM_NOT_API_ENABLED');
  });

  it('unknown periods, periods of other teams, latest without a period: 404', async () => {
    expectError(await get('/v2/wallet/billing-periods/latest/transactions'), 404, 'RESOURCE_NOT_FOUND');
    const other = await h.user();
    await h.services.ledger.topUp(other.teamId, 1_000_000);
    const theirs = (await get('/v2/wallet/billing-periods', other.apiKey)).body.items[0].id;
    expectError(await get(`/v2/wallet/billing-periods/${theirs}`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await get(`/v2/wallet/billing-periods/${theirs}/transactions`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await get(`/v2/wallet/billing-periods/${randomUUID()}`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await get(`/v2/wallet/billing-periods/${randomUUID()}/transactions`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await get('/v2/wallet/billing-periods/not-a-uuid'), 400, 'VALIDATION_ERROR');
    expectError(await get(`/v2/wallet/billing-periods?teamId=${other.teamId}`), 403, 'FORBIDDEN');
    expectError(await get(`/v2/wallet/financial-details?selectTeamId=${other.teamId}`), 403, 'FORBIDDEN');
    expectError(await get(`/v2/wallet/financial-details?selectTeamId=${randomUUID()}`), 403, 'FORBIDDEN'); // an unknown team: as a team of someone else
    // the list without teamId shows only the caller's teams
    assert.equal((await get('/v2/wallet/billing-periods')).body.totalElements, 0);
  });

  it('wallet operations for a cloud-marketplace team answer 409 TEAM_NOT_BILLED_THROUGH_WALLET', async () => {
    await h.services.ledger.topUp(u.teamId, 1_000_000);
    const period = (await get('/v2/wallet/billing-periods')).body.items[0].id;
    await h.services.ledger.switchBillingType(u.teamId, 'CLOUD_MARKETPLACE', 'moved to marketplace');
    expectError(await get('/v2/wallet/financial-details'), 409, 'TEAM_NOT_BILLED_THROUGH_WALLET');
    expectError(await get(`/v2/wallet/billing-periods?teamId=${u.teamId}`), 409, 'TEAM_NOT_BILLED_THROUGH_WALLET');
    expectError(await get(`/v2/wallet/billing-periods/${period}`), 409, 'TEAM_NOT_BILLED_THROUGH_WALLET');
    expectError(await get(`/v2/wallet/billing-periods/${period}/transactions`), 409, 'TEAM_NOT_BILLED_THROUGH_WALLET');
    expectError(await get('/v2/wallet/billing-periods/latest/transactions'), 409, 'TEAM_NOT_BILLED_THROUGH_WALLET');
    // without teamId the list simply leaves marketplace teams out
    assert.equal((await get('/v2/wallet/billing-periods')).body.totalElements, 0);
    // and charges now go to the credits ledger, under an agreement
    await linkTestAgreement(h, u.teamId, 'agmt-moved');
    const c = await h.services.ledger.charge(u.teamId, job('job-m'));
    assert.equal(c.billingType, 'CLOUD_MARKETPLACE');
  });

  it('an adjustment or top-up that rounds to zero mills is refused, saying why (admin adjust --amount-usd=0.0004)', async function () {
    this.timeout(scaled(60_000));
    await assert.rejects(h.services.ledger.adjust(u.teamId, { amountMicros: 400, adjustmentType: 'MANUAL_ADJUSTMENT', reason: 'rounding', balance: 'processing' }), {
      status: 400,
      errorCode: 'INVALID_INPUT',
      message: /0\.0004 USD rounds to 0\.000 USD.*whole mills/,
    });
    await assert.rejects(h.services.ledger.adjust(u.teamId, { amountMicros: -499, adjustmentType: 'OTHER', reason: 'rounding', balance: 'utilities' }), { errorCode: 'INVALID_INPUT' });
    await assert.rejects(h.services.ledger.topUp(u.teamId, 499), { errorCode: 'INVALID_INPUT' });
    assert.equal((await ledgerReads.allForTeam(h.services.db, u.teamId)).length, 0, 'nothing booked, not even a period');
    await h.services.ledger.adjust(u.teamId, { amountMicros: 500, adjustmentType: 'MANUAL_ADJUSTMENT', reason: 'half a mill rounds up', balance: 'processing' });
    assert.equal((await get('/v2/wallet/financial-details')).body.processingCreditsBalanceUsd, 0.001);

    // The admin CLI says why and exits 1.
    const db = h.database.config;
    const cli = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', 'adjust', `--team-id=${u.teamId}`, '--amount-usd=0.0004', '--reason=test'], {
      encoding: 'utf8',
      env: {
        ...process.env,
        VIDMILL_DATABASE_URL: db.client === 'pg' ? db.connectionString : `sqlite:${db.filename}`,
        VIDMILL_DATA_DIR: path.dirname(db.client === 'pg' ? h.blobDir : db.filename),
        VIDMILL_MASTER_KEY: randomBytes(32).toString('base64'),
        VIDMILL_LOG_LEVEL: 'silent',
      },
    });
    assert.equal(cli.status, 1, cli.stdout + cli.stderr);
    assert.match(cli.stderr, /INVALID_INPUT: The amount 0\.0004 USD rounds to 0\.000 USD/);
  });

  it('manual adjustments carry their reason; an unknown product is refused', async () => {
    await h.services.ledger.adjust(u.teamId, { amountMicros: -1_234_567, adjustmentType: 'MANUAL_ADJUSTMENT', reason: 'goodwill correction', balance: 'utilities' });
    const items = (await get('/v2/wallet/billing-periods/latest/transactions')).body.items;
    const adj = items.find((t: any) => t.accountAdjustment?.type === 'MANUAL_ADJUSTMENT');
    assert.equal(adj.type, 'UTILITIES');
    assert.equal(adj.amountUsd, -1.235);
    assert.equal(adj.accountAdjustment.reason, 'goodwill correction');
    await assert.rejects(h.services.ledger.charge(u.teamId, { jobId: 'j', products: [{ productName: 'Nope', category: 'FILTER', amount: 1 }] }), /No price/);
  });
});
