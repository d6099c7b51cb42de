import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { TEST_DIALECT } from '../helpers/database';
import { creditReads } from '../../src/features/billing/testing';
import { createHarness, expectError, Harness, TestUser, linkTestAgreement } from '../helpers/harness';
import { apiRequests } from '../helpers/scenario';

describe(`Cloud-marketplace billing (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  const enc = encodeURIComponent;
  const { get } = apiRequests(
    () => h,
    () => u,
  );
  const link = (teamId: string, agreementId: string) => linkTestAgreement(h, teamId, agreementId);

  beforeEach(async () => {
    h = await createHarness();
    h.clock.set('2026-05-04T10:20:00Z');
    u = await h.user({ teamName: 'Marketplace team', billingType: 'CLOUD_MARKETPLACE' });
  });
  afterEach(() => h.close());

  it('current subscription, by agreement id, and the list of history rows', async () => {
    expectError(await get('/v2/cloud-marketplace/subscriptions/current'), 404, 'RESOURCE_NOT_FOUND');
    h.clock.advance(60_000);
    await link(u.teamId, 'agmt-1');
    let cur = await get('/v2/cloud-marketplace/subscriptions/current');
    assert.equal(cur.status, 200);
    assert.equal(cur.body.agreementId, 'agmt-1');
    assert.equal(cur.body.status, 'SUBSCRIBED');
    assert.equal(cur.body.agreementIntent, 'NEW');
    assert.equal(cur.body.effectiveFromHour, '2026-05-04T10:00:00.000Z');
    assert.equal(cur.body.teamId, u.teamId);

    h.clock.advance(60_000);
    await h.services.billing.recordAgreementChange({ kind: 'status', agreementId: 'agmt-1', status: 'UNSUBSCRIBE_PENDING' });
    cur = await get('/v2/cloud-marketplace/subscriptions/current');
    assert.equal(cur.body.status, 'UNSUBSCRIBE_PENDING');
    assert.equal(cur.body.cancellationRequestedAt, h.clock.now().toISOString());
    assert.equal(cur.body.createdAt, '2026-05-04T10:21:00.000Z');
    assert.equal(cur.body.updatedAt, '2026-05-04T10:22:00.000Z');

    h.clock.advance(60_000);
    await h.services.billing.recordAgreementChange({ kind: 'replace', agreementId: 'agmt-1', newAgreementId: 'agmt-2', offerId: 'offer-2' });
    cur = await get('/v2/cloud-marketplace/subscriptions/current');
    assert.equal(cur.body.agreementId, 'agmt-2');
    assert.equal(cur.body.replacesAgreementId, 'agmt-1');
    assert.equal(cur.body.agreementIntent, 'REPLACE');
    assert.equal(cur.body.licenseId, 'lic-agmt-1');
    const old = await get('/v2/cloud-marketplace/subscriptions/agmt-1');
    assert.equal(old.body.status, 'AGREEMENT_REPLACED');
    assert.equal(old.body.replacedByAgreementId, 'agmt-2');

    const list = await get(`/v2/cloud-marketplace/subscriptions?teamId=${u.teamId}&sortDirection=DESC`);
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.items.map((s: any) => s.agreementId),
      ['agmt-2', 'agmt-1'],
    );
    assert.equal((await get('/v2/cloud-marketplace/subscriptions?pageSize=1&pageNumber=1')).body.numberOfElements, 1);
  });

  it('reassignment moves the subscription to another team under a new agreement version', async () => {
    const other = await h.user({ billingType: 'CLOUD_MARKETPLACE' });
    await link(u.teamId, 'agmt-a');
    h.clock.advance(1000);
    await h.services.billing.recordAgreementChange({ kind: 'reassign', agreementId: 'agmt-a', newAgreementId: 'agmt-b', toTeamId: other.teamId });
    expectError(await get('/v2/cloud-marketplace/subscriptions/current'), 404, 'RESOURCE_NOT_FOUND');
    const mine = await get('/v2/cloud-marketplace/subscriptions/agmt-a');
    assert.equal(mine.body.status, 'REASSIGNED');
    assert.equal(mine.body.reassignedToAgreementId, 'agmt-b');
    assert.ok(mine.body.reassignedAt);
    const theirs = await get('/v2/cloud-marketplace/subscriptions/current', other.apiKey);
    assert.equal(theirs.body.agreementId, 'agmt-b');
    assert.equal(theirs.body.reassignedFromAgreementId, 'agmt-a');
    // the other team's agreement is not visible to this user
    expectError(await get('/v2/cloud-marketplace/subscriptions/agmt-b'), 404, 'RESOURCE_NOT_FOUND');
    await assert.rejects(h.services.billing.recordAgreementChange({ kind: 'status', agreementId: 'agmt-a', status: 'UNSUBSCRIBED' }), /REASSIGNED/);
  });

  it('credits usage: charges in credits, filters, totals, refunds', async () => {
    const video = randomUUID();
    await link(u.teamId, 'agmt-1');
    h.clock.advance(1000);
    const c = await h.services.ledger.charge(u.teamId, {
      jobId: 'job-1',
      videoId: video,
      products: [
        { productName: 'Super-resolution 4x', category: 'FILTER', amount: 329 },
        { productName: 'H.264 / AVC', category: 'ENCODER', amount: 330.5 },
      ],
    });
    assert.deepEqual(c, { billingType: 'CLOUD_MARKETPLACE', jobId: 'job-1', credits: 329 * 3 + 331, duplicate: false });
    assert.equal((await h.services.ledger.charge(u.teamId, { jobId: 'job-1', products: [] })).duplicate, true);
    h.clock.advance(1000);
    await h.services.ledger.accrueUtility(u.teamId, { jobId: 'dl-1', product: { productName: 'Download', category: 'DOWNLOAD_HTTPS', amount: 2 } });
    h.clock.advance(1000);
    const res = await get('/v2/cloud-marketplace/credits-usage');
    assert.equal(res.status, 200);
    assert.equal(res.body.teamId, u.teamId);
    assert.equal(res.body.filterByFromDateTime, '2026-05-04T10:20:00.000Z'); // first link to an agreement
    assert.equal(res.body.totalElements, 2);
    assert.equal(res.body.items[0].type, 'PROCESSING');
    assert.equal(res.body.items[0].details.products[0].costCredits, 987);
    assert.equal(res.body.items[1].product.category, 'DOWNLOAD_HTTPS');
    assert.equal(res.body.totals.totalsForAllCategories.totalCredits, 987 + 331 + 18);
    assert.deepEqual(res.body.totals.totalsByCategory, [
      { category: 'ENCODER', totalCredits: 331 },
      { category: 'FILTER', totalCredits: 987 },
      { category: 'DOWNLOAD_HTTPS', totalCredits: 18 },
    ]);
    const only = (await get('/v2/cloud-marketplace/credits-usage?processingCreditsUsageMode=EXCLUDE')).body;
    assert.equal(only.totalElements, 1);
    assert.equal(only.filterProcessingCreditsUsageMode, 'EXCLUDE');
    assert.equal((await get(`/v2/cloud-marketplace/credits-usage?videoId=${video}`)).body.totalElements, 1);
    await h.services.ledger.refund(u.teamId, 'job-1', 'PROCESSED_VIDEO_INGESTION_FAILED');
    const after = (await get('/v2/cloud-marketplace/credits-usage')).body;
    assert.equal(after.totals.totalsForAllCategories.totalCredits, 18);
    expectError(await get(`/v2/cloud-marketplace/credits-usage?fromDateTime=${enc('2026-05-05T00:00:00Z')}&toDateTime=${enc('2026-05-04T00:00:00Z')}`), 400, 'INVALID_DATE_TIME_RANGE');
    expectError(await get('/v2/cloud-marketplace/credits-usage?toDateTime=tomorrow'), 400, 'VALIDATION_ERROR');
    expectError(await get('/v2/cloud-marketplace/credits-usage?pageSize=101'), 400, 'VALIDATION_ERROR');
  });

  it('unknown agreements are 404; marketplace operations for a wallet team without marketplace history are 409', async () => {
    expectError(await get('/v2/cloud-marketplace/subscriptions/agmt-unknown'), 404, 'RESOURCE_NOT_FOUND');
    const w = await h.user({ billingType: 'WALLET' });
    const wget = (p: string) => get(p, w.apiKey);
    expectError(await wget('/v2/cloud-marketplace/subscriptions/current'), 409, 'TEAM_NOT_BILLED_THROUGH_CLOUD_MARKETPLACE');
    expectError(await wget(`/v2/cloud-marketplace/subscriptions?teamId=${w.teamId}`), 409, 'TEAM_NOT_BILLED_THROUGH_CLOUD_MARKETPLACE');
    expectError(await wget('/v2/cloud-marketplace/credits-usage'), 409, 'TEAM_NOT_BILLED_THROUGH_CLOUD_MARKETPLACE');
    expectError(await get(`/v2/cloud-marketplace/subscriptions?teamId=${w.teamId}`), 403, 'FORBIDDEN');
    await link(u.teamId, 'agmt-1');
    await assert.rejects(link(u.teamId, 'agmt-1'), /already recorded/);
  });

  it('an agreement is not linked or reassigned to a team billed by wallet (409 TEAM_NOT_BILLED_THROUGH_CLOUD_MARKETPLACE); the list and the by-id read agree', async () => {
    const w = await h.user({ billingType: 'WALLET' });
    await assert.rejects(link(w.teamId, 'agmt-w'), { errorCode: 'TEAM_NOT_BILLED_THROUGH_CLOUD_MARKETPLACE' });
    await link(u.teamId, 'agmt-a');
    await assert.rejects(h.services.billing.recordAgreementChange({ kind: 'reassign', agreementId: 'agmt-a', newAgreementId: 'agmt-b', toTeamId: w.teamId }), {
      errorCode: 'TEAM_NOT_BILLED_THROUGH_CLOUD_MARKETPLACE',
      message: /set-billing-type/,
    });
    // nothing was recorded: the agreement is still this team's current one
    assert.equal((await get('/v2/cloud-marketplace/subscriptions/current')).body.agreementId, 'agmt-a');
    expectError(await get('/v2/cloud-marketplace/subscriptions/agmt-b'), 404, 'RESOURCE_NOT_FOUND');

    // Switched first, the team takes the agreement; every row of the list reads by id.
    await h.services.ledger.switchBillingType(w.teamId, 'CLOUD_MARKETPLACE', 'takes over agmt-a');
    await h.services.billing.recordAgreementChange({ kind: 'reassign', agreementId: 'agmt-a', newAgreementId: 'agmt-b', toTeamId: w.teamId });
    const list = (await get('/v2/cloud-marketplace/subscriptions', w.apiKey)).body.items;
    assert.deepEqual(
      list.map((s: any) => s.agreementId),
      ['agmt-b'],
    );
    for (const s of list) assert.equal((await get(`/v2/cloud-marketplace/subscriptions/${s.agreementId}`, w.apiKey)).status, 200);
    assert.equal((await get('/v2/cloud-marketplace/subscriptions/current', w.apiKey)).body.agreementId, 'agmt-b');
  });

  it('after a team switches back to the wallet its marketplace history stays readable; only current needs a current agreement', async () => {
    await link(u.teamId, 'agmt-1');
    h.clock.advance(1000);
    await h.services.ledger.charge(u.teamId, { jobId: 'job-h', products: [{ productName: 'H.264 / AVC', category: 'ENCODER', amount: 10 }] });
    h.clock.advance(1000);
    await h.services.billing.recordAgreementChange({ kind: 'status', agreementId: 'agmt-1', status: 'UNSUBSCRIBED' });
    await h.services.ledger.switchBillingType(u.teamId, 'WALLET', 'back to the wallet');
    const byTeam = await get(`/v2/cloud-marketplace/subscriptions?teamId=${u.teamId}`);
    assert.equal(byTeam.status, 200, JSON.stringify(byTeam.body));
    assert.deepEqual(
      byTeam.body.items.map((s: any) => [s.agreementId, s.status]),
      [['agmt-1', 'UNSUBSCRIBED']],
    );
    assert.equal((await get('/v2/cloud-marketplace/subscriptions/agmt-1')).body.status, 'UNSUBSCRIBED');
    const usage = await get('/v2/cloud-marketplace/credits-usage');
    assert.equal(usage.status, 200, JSON.stringify(usage.body));
    assert.equal(usage.body.totalElements, 1);
    assert.equal(usage.body.totals.totalsForAllCategories.totalCredits, 10);
    expectError(await get('/v2/cloud-marketplace/subscriptions/current'), 409, 'TEAM_NOT_BILLED_THROUGH_CLOUD_MARKETPLACE');
  });

  it('a marketplace team with no current agreement cannot have work charged (409 CLOUD_MARKETPLACE_ACCESS_NOT_AVAILABLE) until it has one or switches to the wallet', async () => {
    const work = (jobId: string) => ({ jobId, products: [{ productName: 'H.264 / AVC', category: 'ENCODER' as const, amount: 10 }] });
    await assert.rejects(h.services.ledger.charge(u.teamId, work('job-0')), { status: 409, errorCode: 'CLOUD_MARKETPLACE_ACCESS_NOT_AVAILABLE' });
    const other = await h.user({ billingType: 'CLOUD_MARKETPLACE' });
    await link(u.teamId, 'agmt-a');
    assert.equal((await h.services.ledger.charge(u.teamId, work('job-1'))).billingType, 'CLOUD_MARKETPLACE');
    // reassigned away: nothing to charge against
    await h.services.billing.recordAgreementChange({ kind: 'reassign', agreementId: 'agmt-a', newAgreementId: 'agmt-b', toTeamId: other.teamId });
    await assert.rejects(h.services.ledger.charge(u.teamId, work('job-2')), { errorCode: 'CLOUD_MARKETPLACE_ACCESS_NOT_AVAILABLE' });
    assert.equal((await creditReads.allForTeam(h.services.db, u.teamId)).length, 1, 'nothing was booked');
    assert.equal((await h.services.ledger.charge(other.teamId, work('job-3'))).billingType, 'CLOUD_MARKETPLACE');
    // on the wallet again, work is charged in USD
    await h.services.ledger.switchBillingType(u.teamId, 'WALLET');
    await h.services.ledger.topUp(u.teamId, 1_000_000);
    assert.equal((await h.services.ledger.charge(u.teamId, work('job-2'))).billingType, 'WALLET');
  });
});
