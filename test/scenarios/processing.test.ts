/**
 * Processing end to end with real ffmpeg: configurations (saved and built-in), appraisals and
 * their rules, accepting (charge once, 409s), the processing job and the ingestion of its
 * result, refunds, what is booked. Their subject is the SQL of processing and billing: both
 * databases. The media-heavy scenarios (fidelity, progress, 1080p HEVC end to end) are in
 * processing-media.test.ts, on one.
 */
import { strict as assert } from 'node:assert';
import { priceStorage } from '../../src/features/billing';
import { findVideo } from '../../src/features/videos';
import { TEST_DIALECT } from '../helpers/database';
import { assertStageError, expectError, Harness, TestUser, linkTestAgreement } from '../helpers/harness';
import { processingScenario } from './processing-scenario';
import { fixtureBytes } from '../helpers/media-fixtures';
import { recordStatements, type RecordedStatement } from '../helpers/statements';
import { scaled } from '../helpers/timeouts';

const H264_MP4 = { container: 'MP4', encodingConfiguration: { codec: 'H264' } };
/**
 * The SQL statements of one start (POST .../processing/start, a wallet team): the source's read,
 * then one transaction: the charge (a savepoint: the team read once under its lock, the job's
 * earlier charge, the balance, the period, the ledger rows), the appraisal, the video, the job.
 * PostgreSQL adds the team's row lock and the job notice (pg_notify). Before issue 26 a start was
 * 24 statements on SQLite, 27 on PostgreSQL (the appraisal path, then the accept path in full).
 */
const START_STATEMENTS = TEST_DIALECT === 'postgres' ? 20 : 18;
/**
 * Reads of a video row by id in one processing run and the ingestion of its result (issue 26):
 * the processing job's of its video and source, the ingestion job's of its video, and the locked
 * read of each of the 4 stage moves (processing started and done, ingestion started and done).
 * 49 when issue 26 was filed; 8 before the output's finish reused the source the job had read.
 */
const RUN_VIDEO_READS = 7;
/** Quoted as the dialect quotes names. */
const q = (name: string) => (TEST_DIALECT === 'postgres' ? `"${name}"` : `\`${name}\``);
const sqlOf = (statements: RecordedStatement[]) => statements.map((x) => x.sql);

/** Priced above zero even for a 3-second source (output gigapixels of a 4K upscale). */
const UPSCALE_4K = { container: 'MP4', encodingConfiguration: { codec: 'H264' }, filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'UHD_4K' } } };

describe(`Processing (${TEST_DIALECT})`, function () {
  this.timeout(scaled(180_000));
  const s = processingScenario();
  let h: Harness;
  let u: TestUser;
  beforeEach(() => ({ h, u } = s));
  const { get, post, del, eventsOf, waitStage, ingested, processingCharges } = s;

  describe('processing configurations', () => {
    it("lists the built-ins with the team's own (builtInMode INCLUDE, ONLY, EXCLUDE)", async () => {
      const created = await post('/v1/processing-configurations', { name: 'My H.264', options: H264_MP4 });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.builtin, false);
      assert.equal(created.body.teamId, u.teamId);
      const all = (await get('/v1/processing-configurations?pageSize=100')).body;
      const only = (await get('/v1/processing-configurations?pageSize=100&builtInMode=ONLY')).body;
      const own = (await get('/v1/processing-configurations?pageSize=100&builtInMode=EXCLUDE')).body;
      assert.ok(only.totalElements >= 7, 'seven built-ins at least');
      assert.ok(only.items.every((c: any) => c.builtin));
      assert.deepEqual(
        own.items.map((c: any) => c.id),
        [created.body.id],
      );
      assert.equal(all.totalElements, only.totalElements + 1);
      const names = only.items.map((c: any) => c.name).join(' | ');
      for (const want of [/Full HD/i, /4K/i, /HEVC/i, /H\.264/i, /ProRes 422 HQ/i, /DNxHR HQ/i, /deinterlace/i]) assert.match(names, want);
    });

    it('a codec the container cannot hold is 400 CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC; unknown options 400 VALIDATION_ERROR', async () => {
      expectError(
        await post('/v1/processing-configurations', { name: 'Bad', options: { container: 'MP4', encodingConfiguration: { codec: 'MPEG2' } } }),
        400,
        'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC',
      );
      expectError(await post('/v1/processing-configurations', { name: 'Bad', options: { sharpen: true } }), 400, 'VALIDATION_ERROR');
    });

    it('an option this installation cannot apply is 400 UNSUPPORTED_PROCESSING_OPTION naming the field', async () => {
      const res = await post('/v1/processing-configurations', { name: 'DNxHD 444', options: { container: 'MOV', encodingProfile: 'DNXHD_350X_444' } });
      expectError(res, 400, 'UNSUPPORTED_PROCESSING_OPTION');
      assert.equal(res.body.validationErrors[0].field, 'body.options.encodingProfile');
    });

    it("get and delete: own 200/204, another team's 404, a built-in cannot be deleted (409)", async () => {
      const mine = (await post('/v1/processing-configurations', { name: 'Mine', options: H264_MP4 })).body;
      const other = await h.user();
      expectError(await get(`/v1/processing-configurations/${mine.id}`, other), 404, 'RESOURCE_NOT_FOUND');
      assert.equal((await get(`/v1/processing-configurations/${mine.id}`)).body.name, 'Mine');
      const builtIn = (await get('/v1/processing-configurations?builtInMode=ONLY')).body.items[0];
      assert.equal((await get(`/v1/processing-configurations/${builtIn.id}`, other)).status, 200, "built-ins are everyone's");
      expectError(await del(`/v1/processing-configurations/${builtIn.id}`), 409, 'BUILT_IN_CONFIGURATION_CANNOT_BE_DELETED');
      expectError(await del(`/v1/processing-configurations/${mine.id}`, other), 404, 'RESOURCE_NOT_FOUND');
      assert.equal((await del(`/v1/processing-configurations/${mine.id}`)).status, 204);
      expectError(await get(`/v1/processing-configurations/${mine.id}`), 404, 'RESOURCE_NOT_FOUND');
    });
  });

  describe('appraisals and accepting them', () => {
    let source: string;
    beforeEach(async () => {
      source = await ingested(fixtureBytes({ seconds: 3, audio: true }));
    });

    it('an appraisal prices the job in USD for a wallet team and expires after 15 minutes', async () => {
      const res = await post(`/v1/videos/${source}/processing/appraisals/create`, UPSCALE_4K);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(Date.parse(res.body.expiresAt) - h.clock.now().getTime(), 15 * 60_000);
      const a = res.body.video.processingJobAppraisal;
      assert.equal(a.billingType, 'WALLET');
      assert.ok(a.estimation.fileSize > 0 && a.estimation.totalComputeTimeSeconds >= 1);
      assert.equal(a.outputDurationMillis, 3000);
      assert.ok(
        a.jobItems.some((i: any) => i.category === 'ENCODER' && i.productName === 'H.264 / AVC'),
        JSON.stringify(a),
      );
      assert.ok(a.cost.totalProcessingCostUsd > 0);
      assert.equal(res.body.video.masterVideo.id, source);
    });

    it('the appraisal estimates storage at the price storage billing charges: the output kept one month, rounded up', async () => {
      const wallet = (await post(`/v1/videos/${source}/processing/appraisals/create`, UPSCALE_4K)).body.video.processingJobAppraisal;
      const month = priceStorage(h.config.priceList, wallet.estimation.fileSize / 1e9);
      assert.equal(wallet.cost.estimatedStorageCostUsd, month.costMicros / 1e6);
      assert.ok(wallet.cost.estimatedStorageCostUsd > 0, 'any stored output costs at least a mill');
      await h.services.ledger.switchBillingType(u.teamId, 'CLOUD_MARKETPLACE', 'test');
      const credits = (await post(`/v1/videos/${source}/processing/appraisals/create`, UPSCALE_4K)).body.video.processingJobAppraisal;
      assert.equal(credits.cost.estimatedStorageCostCredits, priceStorage(h.config.priceList, credits.estimation.fileSize / 1e9).costCredits);
    });

    it('startPosMs and endPosMs rules: INVALID_START_POSITION, INVALID_END_POSITION, end clamped to the duration', async () => {
      expectError(await post(`/v1/videos/${source}/processing/appraisals/create?startPosMs=2500`, H264_MP4), 400, 'INVALID_START_POSITION');
      expectError(await post(`/v1/videos/${source}/processing/appraisals/create?startPosMs=1000&endPosMs=1500`, H264_MP4), 400, 'INVALID_END_POSITION');
      expectError(await post(`/v1/videos/${source}/processing/appraisals/create?startPosMs=-1`, H264_MP4), 400, 'VALIDATION_ERROR');
      const clamped = await post(`/v1/videos/${source}/processing/appraisals/create?startPosMs=1000&endPosMs=60000`, H264_MP4);
      assert.equal(clamped.body.video.processingJobAppraisal.outputDurationMillis, 2000);
    });

    it('accepting needs money in the wallet (409 INSUFFICIENT_PROJECTED_BALANCE_ERROR), expires (409 APPRAISAL_EXPIRED) and follows the billing type (409 APPRAISAL_BILLING_OUT_DATED)', async () => {
      const a1 = (await post(`/v1/videos/${source}/processing/appraisals/create`, UPSCALE_4K)).body;
      expectError(await post(`/v1/videos/${source}/processing/appraisals/${a1.appraisalId}/accept`), 409, 'INSUFFICIENT_PROJECTED_BALANCE_ERROR');
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      h.clock.advance(15 * 60_000 + 1);
      expectError(await post(`/v1/videos/${source}/processing/appraisals/${a1.appraisalId}/accept`), 409, 'APPRAISAL_EXPIRED');
      const a2 = (await post(`/v1/videos/${source}/processing/appraisals/create`, UPSCALE_4K)).body;
      await h.services.ledger.switchBillingType(u.teamId, 'CLOUD_MARKETPLACE', 'test');
      expectError(await post(`/v1/videos/${source}/processing/appraisals/${a2.appraisalId}/accept`), 409, 'APPRAISAL_BILLING_OUT_DATED');
      const credits = (await post(`/v1/videos/${source}/processing/appraisals/create`, UPSCALE_4K)).body;
      assert.equal(credits.video.processingJobAppraisal.billingType, 'CLOUD_MARKETPLACE');
      assert.ok(credits.video.processingJobAppraisal.cost.totalProcessingCostCredits > 0);
      expectError(await post(`/v1/videos/${source}/processing/appraisals/3fa85f64-5717-4562-b3fc-2c963f66afa6/accept`), 404, 'RESOURCE_NOT_FOUND');
    });

    it('accepting for a marketplace team with no current agreement is 409 CLOUD_MARKETPLACE_ACCESS_NOT_AVAILABLE and creates nothing', async () => {
      await h.services.ledger.switchBillingType(u.teamId, 'CLOUD_MARKETPLACE', 'test');
      const a = (await post(`/v1/videos/${source}/processing/appraisals/create`, UPSCALE_4K)).body;
      expectError(await post(`/v1/videos/${source}/processing/appraisals/${a.appraisalId}/accept`), 409, 'CLOUD_MARKETPLACE_ACCESS_NOT_AVAILABLE');
      expectError(await post(`/v1/videos/${source}/processing/start`, UPSCALE_4K), 409, 'CLOUD_MARKETPLACE_ACCESS_NOT_AVAILABLE');
      expectError(await get(`/v1/videos/${a.video.id}`), 404, 'RESOURCE_NOT_FOUND');
      assert.equal((await h.services.billing.creditsUsage(u.userId, undefined, {}, { pageNumber: 0, pageSize: 10, sortDirection: 'ASC' })).totalElements, 0);
    });

    it('accepting creates the processed video, charges once, processes and ingests it with their events', async () => {
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const a = (await post(`/v1/videos/${source}/processing/appraisals/create`, { ...H264_MP4, encodingConfiguration: { codec: 'H264', bitrate: 500000 } })).body;
      const accepted = await post(`/v1/videos/${source}/processing/appraisals/${a.appraisalId}/accept?videoName=Processed%20one&videoDescription=test`);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const videoId = accepted.body.videoId;
      assert.equal(videoId, a.video.id, 'the video the appraisal described');
      expectError(await post(`/v1/videos/${source}/processing/appraisals/${a.appraisalId}/accept`), 409, 'APPRAISAL_ALREADY_ACCEPTED');
      const processing = await waitStage(videoId, 'processing');
      assert.equal(processing.status, 'DONE', JSON.stringify(processing.error));
      const ingestion = await waitStage(videoId, 'ingestion');
      assert.equal(ingestion.status, 'DONE', JSON.stringify(ingestion.error));
      const video = (await get(`/v1/videos/${videoId}`)).body;
      assert.equal(video.name, 'Processed one');
      assert.equal(video.masterVideo.id, source);
      assert.equal(video.flags.isProcessed, true);
      assert.equal(video.processing.processingState.processingStatus, 'DONE');
      assert.equal(video.processing.sourceVideo.videoId, source);
      assert.equal(video.processingJobAppraisal.billingType, 'WALLET');
      assert.equal(video.ingestion.metadata.codecName, 'h264');
      assert.deepEqual(await eventsOf(videoId), ['video_processing.started', 'video_processing.done', 'video_processing_ingestion.started', 'video_processing_ingestion.done']);
      const status = (await get(`/v1/videos/${videoId}/processing/status`)).body;
      assert.equal(status.processingState.processingStatus, 'DONE');
      const charges = await processingCharges();
      assert.equal(charges.length, 1, JSON.stringify(charges));
      assert.equal(charges[0].videoId, videoId);
      assert.ok((await get(`/v1/videos/${source}/derived`)).body.items.some((v: any) => v.id === videoId));
    });

    it('processing.options is the request unchanged (no contract defaults filled in), by appraisal, start and configuration; the applied values are in appliedOptions (issue 24)', async () => {
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      // Every object here has properties with a contract default that the client left out:
      // pixelFormat.yuv, processingSettings.outputScanning, outputColorSpaceConversion.metadataOnly.
      const sent = {
        container: 'MP4',
        encodingConfiguration: { codec: 'H264', pixelFormat: { bitDepth: 8 } },
        processingSettings: { outputColorSpaceConversion: { mappingMode: 'RESOLUTION_ONLY' } },
      };
      const appraisal = (await post(`/v1/videos/${source}/processing/appraisals/create`, sent)).body;
      assert.deepEqual(appraisal.video.processing.options, sent, 'the appraisal');
      const accepted = await post(`/v1/videos/${source}/processing/appraisals/${appraisal.appraisalId}/accept`);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const started = await post(`/v1/videos/${source}/processing/start`, sent);
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const conf = (await post('/v1/processing-configurations', { name: 'As sent', options: sent })).body;
      assert.deepEqual(conf.options, sent, 'the configuration');
      assert.deepEqual((await get(`/v1/processing-configurations/${conf.id}`)).body.options, sent);
      const byConf = await post(`/v1/videos/${source}/processing/start/${conf.id}`);
      assert.equal(byConf.status, 202, JSON.stringify(byConf.body));
      for (const videoId of [accepted.body.videoId, started.body.videoId, byConf.body.videoId]) {
        assert.equal((await waitStage(videoId, 'processing')).status, 'DONE');
        const video = (await get(`/v1/videos/${videoId}`)).body;
        assert.deepEqual(video.processing.options, sent, 'as sent');
        const applied = video.processing.appliedOptions.options;
        assert.deepEqual(
          [applied.encodingConfiguration.pixelFormat.yuv, applied.processingSettings.outputScanning, applied.processingSettings.outputColorSpaceConversion.metadataOnly],
          ['4:2:0', 'PROGRESSIVE', false],
          'applied: the values used',
        );
      }
    });

    it('a job that fails is refunded once and ends FAILED with video_processing.failed', async () => {
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const master = await findVideo(h.database.db, source);
      await h.services.blobs.delete(master!.blobKey!);
      const started = await post(`/v1/videos/${source}/processing/start`, H264_MP4);
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const processing = await waitStage(started.body.videoId, 'processing');
      assert.equal(processing.status, 'FAILED');
      assertStageError((await get(`/v1/videos/${started.body.videoId}`)).body.processing.processingState.error, 'SOURCE_VIDEO_NOT_AVAILABLE');
      assert.deepEqual(await eventsOf(started.body.videoId), ['video_processing.started', 'video_processing.failed']);
      const balance = await h.services.ledger.processingBalance(u.teamId);
      assert.equal(balance, 100_000_000, 'the charge was given back');
      // The refund names what failed: processing, not the ingestion of its result.
      const refunds = (await processingCharges()).filter((t: any) => t.accountAdjustment);
      assert.equal(refunds.length, 1, JSON.stringify(refunds));
      assert.equal(refunds[0].accountAdjustment.type, 'OTHER');
      assert.match(refunds[0].accountAdjustment.reason, /^Refund: processing failed: SOURCE_VIDEO_NOT_AVAILABLE/);
    });

    it(`a start plans once and is one transaction after the source's read (appraisal, charge, video, job), the team read once: at most ${START_STATEMENTS} statements`, async () => {
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const recorder = recordStatements(h.database.db);
      const { result: started, statements } = await recorder.during(async () => await post(`/v1/videos/${source}/processing/start`, H264_MP4)).finally(() => recorder.stop());
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const sql = sqlOf(statements);
      const listed = `${sql.length} statements:\n${sql.join('\n')}`;
      assert.ok(sql.length <= START_STATEMENTS, listed);
      assert.equal(sql.filter((x) => x.startsWith(`select * from ${q('teams')}`)).length, 1, `the team read once; ${listed}`);
      assert.equal(sql.filter((x) => x === 'BEGIN;').length, 1, `one transaction; ${listed}`);
      const [begin, commit] = [sql.indexOf('BEGIN;'), sql.lastIndexOf('COMMIT;')];
      for (const table of ['processing_appraisals', 'ledger_transactions', 'videos', 'jobs']) {
        const at = sql.findIndex((x) => x.startsWith(`insert into ${q(table)}`));
        assert.ok(begin < at && at < commit, `the ${table} row is written in the transaction; ${listed}`);
      }
      const appraisal = await h.database.db('processing_appraisals').where({ source_video_id: source }).first();
      assert.equal(appraisal.accepted_video_id, started.body.videoId, 'the appraisal is written accepted');
      assert.equal((await waitStage(started.body.videoId, 'processing')).status, 'DONE');
    });

    it(`one processing run with the ingestion of its result reads video rows ${RUN_VIDEO_READS} times (each job's read of its video and source, each stage move's locked read) and writes the output's file in one statement`, async () => {
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const recorder = recordStatements(h.database.db);
      try {
        const started = await recorder.unrecorded(async () => await post(`/v1/videos/${source}/processing/start`, H264_MP4));
        assert.equal(started.status, 202, JSON.stringify(started.body));
        await recorder.unrecorded(async () => {
          assert.equal((await waitStage(started.body.videoId, 'processing')).status, 'DONE');
          assert.equal((await waitStage(started.body.videoId, 'ingestion')).status, 'DONE');
        });
      } finally {
        recorder.stop();
      }
      // What the worker sent (its polls of the queue aside): reads of a video row by id, locked or not.
      const sql = sqlOf(recorder.outside);
      const reads = sql.filter((x) => x.startsWith(`select * from ${q('videos')} where ${q('id')} =`));
      assert.equal(reads.length, RUN_VIDEO_READS, reads.join('\n'));
      const fileWrites = sql.filter((x) => x.startsWith(`update ${q('videos')} set`) && x.includes(q('blob_key')));
      assert.equal(fileWrites.length, 1, fileWrites.join('\n'));
      assert.match(fileWrites[0]!, new RegExp(`${q('file_name')}.*${q('blob_key')}`), 'the description and the stored file together');
    });

    it('a start is all or nothing: a failure after the appraisal is written (the job cannot be enqueued) leaves no appraisal, video, charge or job', async () => {
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const jobs = h.services.jobs;
      const enqueue = jobs.enqueue.bind(jobs);
      jobs.enqueue = () => Promise.reject(new Error('the queue refused the job'));
      const recorder = recordStatements(h.database.db);
      const { result: failed, statements } = await recorder
        .during(() =>
          h.services.processing.start(u.userId, source, { options: H264_MP4 }, {}).then(
            () => undefined,
            (err: Error) => err,
          ),
        )
        .finally(() => {
          jobs.enqueue = enqueue;
          recorder.stop();
        });
      assert.match(String(failed?.message), /the queue refused the job/);
      const sql = sqlOf(statements);
      assert.ok(
        sql.findIndex((x) => x.startsWith(`insert into ${q('processing_appraisals')}`)) > sql.indexOf('BEGIN;'),
        `the appraisal was written in the transaction before the failure: ${sql.join('\n')}`,
      );
      assert.deepEqual(await h.database.db('processing_appraisals').where({ source_video_id: source }).select('id'), [], 'no appraisal');
      assert.deepEqual(await h.database.db('videos').where({ source_video_id: source }).select('id'), [], 'no processed video');
      assert.deepEqual(await h.database.db('jobs').where({ kind: 'video.process' }).select('id'), [], 'no job');
      assert.deepEqual(await processingCharges(), [], 'no charge');
      assert.equal(await h.services.ledger.processingBalance(u.teamId), 100_000_000);
    });

    it("a video not yet ingested is 409 VIDEO_NOT_FULLY_INGESTED; another team's video 404", async () => {
      const other = await h.user();
      expectError(await post(`/v1/videos/${source}/processing/start`, H264_MP4, other), 404, 'RESOURCE_NOT_FOUND');
      await h.database.db('videos').where({ id: source }).update({ ingestion_status: 'IN_PROGRESS', metadata_available: false });
      expectError(await post(`/v1/videos/${source}/processing/start`, H264_MP4), 409, 'VIDEO_NOT_FULLY_INGESTED');
    });
  });

  describe('the appraisal is what is booked (one price)', () => {
    let source: string;
    beforeEach(async () => {
      source = await ingested(fixtureBytes({ seconds: 4, width: 640, height: 480 }));
    });
    const usdItem = (i: any) => ({
      productName: i.productName,
      category: i.category,
      amount: i.amount,
      amountUnit: i.amountUnit,
      discountPercentage: i.discountPercentage,
      unitPriceUsd: i.unitPriceUsd,
      costUsd: i.costUsd,
    });
    const creditsItem = (i: any) => ({
      productName: i.productName,
      category: i.category,
      amount: i.amount,
      amountUnit: i.amountUnit,
      unitPriceCredits: i.unitPriceCredits,
      costCredits: i.costCredits,
    });
    const mills = (usd: number) => Math.round(usd * 1000);

    it("wallet: appraise and accept, or start: the transaction books the appraisal's total and items (a 640x480 4 s job costs 0.001, not 0; 3 s of Full HD 0.002, not 0.001)", async () => {
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const appraised = (await post(`/v1/videos/${source}/processing/appraisals/create`, H264_MP4)).body;
      const small = appraised.video.processingJobAppraisal;
      assert.equal(small.cost.totalProcessingCostUsd, 0.001, JSON.stringify(small));
      assert.equal(small.jobItems.find((i: any) => i.productName === 'H.264 / AVC').unitPriceUsd, 0.0075);
      const accepted = await post(`/v1/videos/${source}/processing/appraisals/${appraised.appraisalId}/accept`);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const started = await post(`/v1/videos/${source}/processing/start?startPosMs=1000`, { ...H264_MP4, filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'FULL_HD' } } });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const fullHd = (await get(`/v1/videos/${started.body.videoId}`)).body.processingJobAppraisal;
      assert.equal(fullHd.cost.totalProcessingCostUsd, 0.002, '1920x1080 x 75 frames: 0.0014774 USD exact, rounded up once (0.001 when each product was rounded)');

      const charges = await processingCharges();
      assert.equal(charges.length, 2, JSON.stringify(charges));
      for (const [videoId, appraisal] of [
        [accepted.body.videoId, small],
        [started.body.videoId, fullHd],
      ]) {
        const t = charges.find((c: any) => c.videoId === videoId);
        assert.equal(t.amountUsd, -appraisal.cost.totalProcessingCostUsd);
        assert.deepEqual(t.details.products.map(usdItem), appraisal.jobItems.map(usdItem));
        assert.equal(t.details.discountPercentage, appraisal.cost.discountPercentage);
        assert.equal(
          t.details.products.reduce((s: number, p: any) => s + mills(p.costUsd), 0),
          -mills(t.amountUsd),
          'the items add up to the amount',
        );
      }
      assert.equal(await h.services.ledger.processingBalance(u.teamId), 100_000_000 - 3_000);
      for (const id of [accepted.body.videoId, started.body.videoId]) assert.equal((await waitStage(id, 'processing')).status, 'DONE');

      // The processed file keeps its readable name, and downloads under it.
      const sourceName = (await get(`/v1/videos/${source}`)).body.name;
      const url = (await post(`/v1/videos/${accepted.body.videoId}/out/https`)).body;
      assert.equal(url.suggestedFileName, `${sourceName} (processed).mp4`);
      const link = new URL(url.presignedUrl);
      const download = await h.request.head(link.pathname + link.search);
      assert.equal(download.status, 200);
      assert.equal(download.headers['content-disposition'], `attachment; filename="${sourceName} (processed).mp4"`);
    });

    it('when the price list changed since the appraisal (a restart with another price list), accepting is 409 APPRAISAL_BILLING_OUT_DATED and books nothing', async () => {
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const appraised = (await post(`/v1/videos/${source}/processing/appraisals/create`, H264_MP4)).body;
      const prices = h.services.ledger.prices;
      const before = prices.encoders['H.264 / AVC'];
      prices.encoders['H.264 / AVC'] = { ...before!, usd: 0.5 };
      try {
        expectError(await post(`/v1/videos/${source}/processing/appraisals/${appraised.appraisalId}/accept`), 409, 'APPRAISAL_BILLING_OUT_DATED');
      } finally {
        prices.encoders['H.264 / AVC'] = before!;
      }
      assert.deepEqual(await processingCharges(), []);
      assert.equal(await h.services.ledger.processingBalance(u.teamId), 100_000_000);
    });

    it("cloud marketplace: the credits usage books the appraisal's credits and items", async () => {
      await h.services.ledger.switchBillingType(u.teamId, 'CLOUD_MARKETPLACE', 'test');
      await linkTestAgreement(h, u.teamId, `agmt-${u.teamId}`);
      h.clock.advance(1000);
      const appraised = (await post(`/v1/videos/${source}/processing/appraisals/create`, { ...H264_MP4, filters: { denoiser: 'HQDN3D' } })).body;
      const appraisal = appraised.video.processingJobAppraisal;
      assert.equal(appraisal.billingType, 'CLOUD_MARKETPLACE');
      assert.equal(appraisal.cost.totalProcessingCostCredits, 1, 'never free in credits either');
      const accepted = await post(`/v1/videos/${source}/processing/appraisals/${appraised.appraisalId}/accept`);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const usage = (await get('/v2/cloud-marketplace/credits-usage?pageSize=100')).body;
      const item = usage.items.find((i: any) => i.videoId === accepted.body.videoId);
      assert.ok(item, JSON.stringify(usage));
      assert.equal(item.credits, appraisal.cost.totalProcessingCostCredits);
      assert.deepEqual(item.details.products.map(creditsItem), appraisal.jobItems.map(creditsItem));
      assert.equal((await waitStage(accepted.body.videoId, 'processing')).status, 'DONE');
    });
  });
});
