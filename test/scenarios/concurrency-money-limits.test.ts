/**
 * Money and limits under concurrency (issue 25): every rule that decides money or a limit is
 * checked under the lock that serialises it, so N requests at once never get more than the rule
 * allows. On SQLite one write transaction runs at a time; on PostgreSQL these requests really
 * overlap (the app's pool has 10 connections), which is where check-then-act outside the lock
 * let two accepts spend one wallet's money twice.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { creditReads, ledgerReads } from '../../src/features/billing/testing';
import { StorageMeters } from '../../src/features/billing';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { downloadRows } from '../../src/features/video-out/testing';
import { findVideo } from '../../src/features/videos';
import { MAX_ACTIVE_WEBHOOKS, MAX_LISTENERS_PER_TEAM } from '../../src/features/webhooks/testing';
import { TEST_DIALECT } from '../helpers/database';
import { basic, createHarness, expectError, Harness, linkTestAgreement, TestUser } from '../helpers/harness';
import { fixtureBytes } from '../helpers/media-fixtures';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { apiRequests, waitFor } from '../helpers/scenario';
import { storedVideo } from '../helpers/stored-video';
import { scaled } from '../helpers/timeouts';

/** Priced above zero even for a short source (output gigapixels of a 4K upscale). */
const UPSCALE_4K = { container: 'MP4', encodingConfiguration: { codec: 'H264' }, filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'UHD_4K' } } };
const PUBLIC_URL = 'https://1.1.1.1/vidmill-hook';
const N = 6;

/** How many responses had each status. */
function statuses(responses: { status: number }[]): Record<number, number> {
  const count: Record<number, number> = {};
  for (const r of responses) count[r.status] = (count[r.status] ?? 0) + 1;
  return count;
}

describe(`Money and limits under concurrency (${TEST_DIALECT})`, function () {
  this.timeout(scaled(120_000));
  let server: RangeServer;
  let h: Harness;
  let u: TestUser;
  let n = 0;
  const { get, post } = apiRequests(
    () => h,
    () => u,
  );
  const processingBalance = (teamId: string) => ledgerReads.balance(h.services.db, teamId, 'processing');

  before(async () => {
    server = await startRangeServer();
  });
  after(() => server.close());
  // A harness per test: a test's accepted processing jobs stay queued and must not reach the
  // worker that ingests the next test's source.
  beforeEach(async () => {
    h = await createHarness({ allowPrivateUrls: true, extraCa: [server.ca] });
    await h.services.configurations.ensureBuiltIns();
    u = await h.user();
  });
  afterEach(() => h.close());

  describe('processing: a wallet pays only for the jobs it covers', () => {
    /** A 2-second master of `u` copied in and ingested (no clip); the worker is stopped again, so accepted jobs stay queued. */
    async function ingestedSource(): Promise<string> {
      await setFreeClipEnabled(h.database.db, u.teamId, false);
      const p = `/media/concurrency-${++n}.mp4`;
      server.serve(p, fixtureBytes({ seconds: 2 }));
      const worker = h.startWorker({ concurrency: 2 });
      try {
        const res = await post('/v1/videos/in/https', { name: `Source ${n}`, url: server.origin + p });
        assert.equal(res.status, 202, JSON.stringify(res.body));
        const ingestion = await waitFor(
          'ingestion',
          async () => {
            const s = (await findVideo(h.database.db, res.body.videoId))?.ingestion;
            return s && ['DONE', 'FAILED'].includes(s.status) ? s : undefined;
          },
          { timeoutMs: 60_000 },
        );
        assert.equal(ingestion.status, 'DONE', JSON.stringify(ingestion.error));
        return res.body.videoId;
      } finally {
        await worker.stop({ graceMs: 5_000 });
      }
    }

    /** Tops the wallet up with exactly `jobs` times `costMicros` (whole mills, as the ledger books). */
    async function fund(costMicros: number, jobs: number): Promise<void> {
      assert.ok(costMicros > 0 && costMicros % 1000 === 0, `a job costs whole mills (${costMicros})`);
      await h.services.ledger.topUp(u.teamId, costMicros * jobs);
    }

    for (const k of [1, 2]) {
      it(`a wallet covering exactly ${k} job(s) accepts exactly ${k} of ${N} concurrent accepts (the rest 409 INSUFFICIENT_PROJECTED_BALANCE_ERROR); the balance never goes below zero`, async () => {
        const source = await ingestedSource();
        const appraisals: any[] = [];
        for (let i = 0; i < N; i++) {
          const res = await post(`/v1/videos/${source}/processing/appraisals/create`, UPSCALE_4K);
          assert.equal(res.status, 201, JSON.stringify(res.body));
          appraisals.push(res.body);
        }
        const cost = Math.round(appraisals[0].video.processingJobAppraisal.cost.totalProcessingCostUsd * 1e6);
        assert.ok(appraisals.every((a) => Math.round(a.video.processingJobAppraisal.cost.totalProcessingCostUsd * 1e6) === cost));
        await fund(cost, k);

        const answers = await Promise.all(appraisals.map((a) => post(`/v1/videos/${source}/processing/appraisals/${a.appraisalId}/accept`)));
        assert.deepEqual(statuses(answers), { 202: k, 409: N - k }, JSON.stringify(answers.map((r) => [r.status, r.body.errorCode])));
        for (const r of answers.filter((a) => a.status === 409)) expectError(r, 409, 'INSUFFICIENT_PROJECTED_BALANCE_ERROR');
        assert.equal(await processingBalance(u.teamId), 0);
        const rows = await ledgerReads.allForTeam(h.services.db, u.teamId);
        assert.ok(
          rows.every((r) => r.balanceMicros >= 0),
          `no running balance below zero: ${rows.map((r) => r.balanceMicros).join(', ')}`,
        );
        // Only the accepted jobs made videos: the refused ones rolled back everything.
        const made = (await get(`/v1/videos?pageSize=100`)).body.items.filter((v: any) => v.id !== source);
        assert.deepEqual(
          made.map((v: any) => v.id).sort(),
          answers
            .filter((r) => r.status === 202)
            .map((r) => r.body.videoId)
            .sort(),
        );
      });
    }

    it(`POST /processing/start: a wallet covering exactly 1 job starts exactly 1 of ${N} concurrent starts`, async () => {
      const source = await ingestedSource();
      const appraisal = (await post(`/v1/videos/${source}/processing/appraisals/create`, UPSCALE_4K)).body;
      await fund(Math.round(appraisal.video.processingJobAppraisal.cost.totalProcessingCostUsd * 1e6), 1);
      const answers = await Promise.all(Array.from({ length: N }, () => post(`/v1/videos/${source}/processing/start`, UPSCALE_4K)));
      assert.deepEqual(statuses(answers), { 202: 1, 409: N - 1 }, JSON.stringify(answers.map((r) => [r.status, r.body.errorCode])));
      for (const r of answers.filter((a) => a.status === 409)) expectError(r, 409, 'INSUFFICIENT_PROJECTED_BALANCE_ERROR');
      assert.equal(await processingBalance(u.teamId), 0);
    });
  });

  describe('the ledger owns the rules, whoever calls it', () => {
    const products = [{ productName: 'H.264 / AVC', category: 'ENCODER' as const, amount: 100 }];

    it(`a wallet processing charge needs cover, checked under the team lock: ${N} concurrent charges of a wallet covering 2 book exactly 2`, async () => {
      const cost = (await h.services.ledger.estimate(u.teamId, products)).costMicros;
      await h.services.ledger.topUp(u.teamId, 2 * cost);
      const results = await Promise.allSettled(Array.from({ length: N }, (_, i) => h.services.ledger.charge(u.teamId, { jobId: `cover-${u.teamId}-${i}`, products })));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 2);
      for (const r of results)
        if (r.status === 'rejected') assert.deepEqual({ status: r.reason.status, errorCode: r.reason.errorCode }, { status: 409, errorCode: 'INSUFFICIENT_PROJECTED_BALANCE_ERROR' });
      assert.equal(await processingBalance(u.teamId), 0);
    });

    it(`a job is charged once: ${N} concurrent charges with one job id book one wallet charge, and one marketplace usage`, async () => {
      const cost = (await h.services.ledger.estimate(u.teamId, products)).costMicros;
      await h.services.ledger.topUp(u.teamId, N * cost);
      const wallet = await Promise.all(Array.from({ length: N }, () => h.services.ledger.charge(u.teamId, { jobId: `once-${u.teamId}`, products })));
      assert.equal(wallet.filter((r) => !r.duplicate).length, 1);
      assert.equal(await processingBalance(u.teamId), (N - 1) * cost);

      const m = await h.user({ billingType: 'CLOUD_MARKETPLACE' });
      await linkTestAgreement(h, m.teamId, `agreement-${randomUUID()}`);
      const credits = await Promise.all(Array.from({ length: N }, () => h.services.ledger.charge(m.teamId, { jobId: `once-${m.teamId}`, products })));
      assert.equal(credits.filter((r) => !r.duplicate).length, 1);
      assert.equal((await creditReads.allForTeam(h.services.db, m.teamId)).length, 1);
    });

    it(`download bytes are billed once: ${N} overlapping download billing runs book each batch once (post-paid utilities)`, async () => {
      const video = await storedVideo(h, u);
      await downloadRows.recordDownload(h.services.db, { teamId: u.teamId, videoId: video, bytes: 2_000_000_000, servedAt: h.clock.now() });
      await Promise.allSettled(Array.from({ length: N }, () => h.services.videoOut.billDownloads()));
      const downloads = (await ledgerReads.allForTeam(h.services.db, u.teamId)).filter((t) => t.category === 'DOWNLOAD_HTTPS');
      assert.equal(downloads.length, 1);
      assert.ok(downloads[0]!.amountMicros < 0 && downloads[0]!.balanceMicros < 0, 'downloads are post-paid: the utilities balance may go below zero');
    });

    it(`storage is charged once: ${N} overlapping storage billing runs of one team book what one run books (post-paid utilities)`, async () => {
      const alone = await h.user();
      for (const team of [u, alone]) {
        await storedVideo(h, team, { data: Buffer.alloc(1_000_000, 7) });
        await new StorageMeters(h.services.db).sample(team.teamId, h.clock.now());
      }
      h.clock.advance(3 * 24 * 3600_000);
      await Promise.all(Array.from({ length: N }, () => h.services.storageBilling.billTeam(u.teamId)));
      await h.services.storageBilling.billTeam(alone.teamId);
      const storage = async (teamId: string) => (await ledgerReads.allForTeam(h.services.db, teamId)).filter((t) => t.category === 'STORAGE').reduce((s, t) => s + t.amountMicros, 0);
      const charged = await storage(u.teamId);
      assert.ok(charged < 0, 'storage was charged');
      assert.equal(charged, await storage(alone.teamId), 'the overlapping runs charged what one run charges');
    });
  });

  describe('limits', () => {
    const keys = () => basic(u.email, u.password);
    // Basic sign-ins at once, fewer than the sign-in lock's 5 password checks between two
    // successful sign-ins (docs/security.md): more simultaneous sign-ins would lock the e-mail.
    const K = 4;

    it(`at most 2 active API keys per user: ${K} concurrent creations of active keys leave exactly 2 active`, async () => {
      const answers = await Promise.all(
        Array.from({ length: K }, (_, i) =>
          h.request
            .post('/api/v1/api-keys')
            .set('Authorization', keys())
            .send({ name: `key ${i}`, active: true }),
        ),
      );
      // The user already holds one active key (the harness's).
      assert.deepEqual(statuses(answers), { 201: 1, 409: K - 1 });
      for (const r of answers.filter((a) => a.status === 409)) expectError(r, 409, 'MAXIMUM_AMOUNT_OF_ACTIVE_API_KEYS_REACHED');
      const all = (await h.request.get('/api/v1/api-keys?pageSize=100').set('Authorization', keys())).body.items;
      assert.equal(all.filter((k: any) => k.active).length, 2);
    });

    it(`at most 2 active API keys per user: ${K} concurrent activations of inactive keys leave exactly 2 active`, async () => {
      const ids: string[] = [];
      for (let i = 0; i < K; i++)
        ids.push(
          (
            await h.request
              .post('/api/v1/api-keys')
              .set('Authorization', keys())
              .send({ name: `key ${i}`, active: false })
          ).body.id,
        );
      const answers = await Promise.all(ids.map((id) => h.request.post(`/api/v1/api-keys/${id}/activate`).set('Authorization', keys())));
      assert.deepEqual(statuses(answers), { 200: 1, 409: K - 1 });
      const all = (await h.request.get('/api/v1/api-keys?pageSize=100').set('Authorization', keys())).body.items;
      assert.equal(all.filter((k: any) => k.active).length, 2);
    });

    it('an active API key cannot be deleted: an activation and a deletion at once never leave an active key deleted', async () => {
      for (let round = 0; round < K; round++) {
        const id = (
          await h.request
            .post('/api/v1/api-keys')
            .set('Authorization', keys())
            .send({ name: `key ${round}`, active: false })
        ).body.id;
        const [activated, deleted] = await Promise.all([
          h.request.post(`/api/v1/api-keys/${id}/activate`).set('Authorization', keys()),
          h.request.delete(`/api/v1/api-keys/${id}`).set('Authorization', keys()),
        ]);
        // Either order is fine; both succeeding is not (the key was active when it was deleted).
        assert.ok(
          (activated.status === 200 && deleted.status === 409) || (deleted.status === 204 && activated.status === 404),
          `round ${round}: activate ${activated.status}, delete ${deleted.status}`,
        );
        if (activated.status === 200) {
          await h.request.post(`/api/v1/api-keys/${id}/deactivate`).set('Authorization', keys());
          await h.request.delete(`/api/v1/api-keys/${id}`).set('Authorization', keys());
        }
      }
    });

    it(`at most ${MAX_ACTIVE_WEBHOOKS} active webhooks per team: ${MAX_ACTIVE_WEBHOOKS + 4} concurrent creations of active webhooks make exactly ${MAX_ACTIVE_WEBHOOKS}`, async () => {
      const body = { name: 'hook', url: PUBLIC_URL, eventTypes: ['video_processing.done'], active: true };
      const answers = await Promise.all(Array.from({ length: MAX_ACTIVE_WEBHOOKS + 4 }, () => post('/v1/webhooks', body)));
      assert.deepEqual(statuses(answers), { 201: MAX_ACTIVE_WEBHOOKS, 409: 4 });
      for (const r of answers.filter((a) => a.status === 409)) expectError(r, 409, 'MAXIMUM_AMOUNT_OF_ACTIVE_WEBHOOKS_REACHED');
      const all = (await get('/v1/webhooks?pageSize=100')).body.items;
      assert.equal(all.filter((w: any) => w.active).length, MAX_ACTIVE_WEBHOOKS);
    });

    it(`at most ${MAX_ACTIVE_WEBHOOKS} active webhooks per team: concurrent activations of inactive webhooks stop at ${MAX_ACTIVE_WEBHOOKS}`, async () => {
      const body = { name: 'hook', url: PUBLIC_URL, eventTypes: ['video_processing.done'], active: false };
      const ids: string[] = [];
      for (let i = 0; i < MAX_ACTIVE_WEBHOOKS + 4; i++) ids.push((await post('/v1/webhooks', body)).body.id);
      const answers = await Promise.all(ids.map((id) => post(`/v1/webhooks/${id}/activate`)));
      assert.deepEqual(statuses(answers), { 200: MAX_ACTIVE_WEBHOOKS, 409: 4 });
      const all = (await get('/v1/webhooks?pageSize=100')).body.items;
      assert.equal(all.filter((w: any) => w.active).length, MAX_ACTIVE_WEBHOOKS);
    });

    it(`at most ${MAX_LISTENERS_PER_TEAM} webhook listeners per team: ${N + 3} concurrent creations make exactly ${MAX_LISTENERS_PER_TEAM}`, async () => {
      const answers = await Promise.all(Array.from({ length: N + 3 }, () => post('/v1/webhooks/listeners', { eventTypes: ['video_out.done'] })));
      assert.deepEqual(statuses(answers), { 201: MAX_LISTENERS_PER_TEAM, 409: N + 3 - MAX_LISTENERS_PER_TEAM });
      for (const r of answers.filter((a) => a.status === 409)) expectError(r, 409, 'MAXIMUM_AMOUNT_OF_WEBHOOK_LISTENERS_REACHED');
    });
  });
});
