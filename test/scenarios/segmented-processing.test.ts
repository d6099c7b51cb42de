/**
 * Segmented processing end to end (docs/processing.md "Segmented processing"): a range longer
 * than the segment length is processed as segment jobs and an audio job that any worker claims,
 * then joined; on local disk and S3 platform storage. One charge, one started and one done event,
 * progress over the parts, the parts' files removed; a segment whose worker was lost is taken
 * over alone; a segment that gives up fails the processing once and refunds it once.
 */
import { strict as assert } from 'node:assert';
import pino from 'pino';
import { jobDefinitions } from '../../src/composition';
import { JOIN_JOB, PROCESS_JOB, SEGMENT_JOB } from '../../src/features/processing';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { findVideo } from '../../src/features/videos';
import { Worker } from '../../src/jobs/worker';
import { probeMedia, resolveMediaBinaries } from '../../src/media';
import { S3BlobStore } from '../../src/storage/s3-blob-store';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { fixtureBytes } from '../helpers/media-fixtures';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { LocalS3, startLocalS3 } from '../helpers/s3-server';
import { apiRequests, waitFor } from '../helpers/scenario';
import { withLocalFile } from '../../src/storage/blob-files';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { scaled } from '../helpers/timeouts';

/** 6 s with audio: three segments of 2 s, plus the audio pass. */
const SOURCE = () => fixtureBytes({ seconds: 6, audio: true, video: ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '250'] });
const OPTIONS = { container: 'MP4', encodingConfiguration: { codec: 'H264' }, filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'STANDARD_HD' } } };

for (const storage of ['disk', 's3'] as const) {
  describe(`Segmented processing (${TEST_DIALECT}, ${storage} storage)`, function () {
    this.timeout(scaled(180_000));
    let server: RangeServer;
    let s3: LocalS3;
    let h: Harness;
    let u: TestUser;
    let n = 0;
    const { get, post } = apiRequests(
      () => h,
      () => u,
    );

    const waitStage = (videoId: string, stage: 'ingestion' | 'processing') =>
      waitFor(
        `${stage} of ${videoId}`,
        async () => {
          const s = (await findVideo(h.database.db, videoId))?.[stage];
          return s && ['DONE', 'FAILED'].includes(s.status) ? s : undefined;
        },
        { timeoutMs: 150_000 },
      );
    const jobsOf = async (videoId: string) =>
      (await h.database.db<{ kind: string; payload: string | object; attempts: number; status: string }>('jobs').select('kind', 'payload', 'attempts', 'status'))
        .map((j) => ({ ...j, payload: (typeof j.payload === 'string' ? JSON.parse(j.payload) : j.payload) as { videoId: string; part?: number } }))
        .filter((j) => j.payload.videoId === videoId);
    const eventsOf = async (videoId: string) =>
      (await h.database.db<{ event_type: string; data: string }>('webhook_events').orderBy('occurred_at').select('event_type', 'data'))
        .filter((r) => (JSON.parse(r.data) as { videoId?: string }).videoId === videoId)
        .map((r) => r.event_type);

    /** A master copied in and ingested (by a worker stopped afterwards). */
    async function ingestedSource(): Promise<string> {
      const p = `/media/segmented-${++n}.mp4`;
      server.serve(p, SOURCE());
      const worker = h.startWorker();
      const res = await post('/v1/videos/in/https', { name: `Source ${n}`, url: server.origin + p });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.equal((await waitStage(res.body.videoId, 'ingestion')).status, 'DONE');
      await worker.stop();
      return res.body.videoId;
    }

    /** A worker running only `kinds` (the test plays the other workers). */
    function workerFor(kinds: string[]): Worker {
      const worker = new Worker(h.services.jobs, { workerId: `only-${kinds.join('+')}`, log: pino({ level: 'silent' }), pollMs: 50, scratchRoot: h.config.workDir });
      for (const job of jobDefinitions(h.services)) if (kinds.includes(job.kind)) worker.define({ kind: job.kind, run: job.run });
      worker.start();
      return worker;
    }

    /** Starts processing and runs only its first job: the split into parts. */
    async function split(source: string): Promise<string> {
      const started = await post(`/v1/videos/${source}/processing/start`, OPTIONS);
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const videoId = started.body.videoId as string;
      const w = workerFor([PROCESS_JOB.kind]);
      await waitFor('the split', async () => ((await h.database.db('processing_segments').where({ video_id: videoId })).length === 4 ? true : undefined));
      await w.stop();
      return videoId;
    }

    /** Claims a part's job as a worker that then disappears, and lets its lease run out. */
    async function loseWorkerOn(times: number): Promise<void> {
      let lostJob: string | undefined;
      const giveUps = new Map(jobDefinitions(h.services).map((j) => [j.kind, j.onGiveUp]));
      for (let i = 0; i < times; i++) {
        const claimed = await h.services.jobs.claim('lost-worker', [SEGMENT_JOB.kind], h.config.jobs.leaseMs);
        assert.ok(claimed);
        // The same part each time: first in line again after its back-off.
        if (i + 1 < times) lostJob = claimed.id;
        else assert.equal(claimed.id, lostJob ?? claimed.id);
        h.clock.advance(h.config.jobs.leaseMs + 1000);
        await h.services.jobs.sweepExpiredLeases(async (trx, jobs) => {
          for (const job of jobs) await giveUps.get(job.kind)?.(trx, job.payload, job);
        });
        await h.database
          .db('jobs')
          .where({ id: claimed.id, status: 'queued' })
          .update({ run_at: new Date(0) });
      }
    }

    before(async () => {
      server = await startRangeServer();
      if (storage === 's3') s3 = await startLocalS3({ buckets: ['platform'] });
    });
    after(async () => {
      await server.close();
      if (storage === 's3') await s3.close();
    });
    beforeEach(async () => {
      h = await createHarness(
        { allowPrivateUrls: true, extraCa: [server.ca], processing: { segmentSeconds: 2, threads: 0, encoderPreset: 'ultrafast' } },
        storage === 's3'
          ? {
              blobs: new S3BlobStore({
                bucket: 'platform',
                endpoint: s3.endpoint,
                region: s3.region,
                accessKey: s3.credentials.accessKey,
                secretKey: s3.credentials.secretAccessKey,
                forcePathStyle: true,
              }),
            }
          : {},
      );
      u = await h.user();
      await setFreeClipEnabled(h.database.db, u.teamId, false);
      await h.services.ledger.topUp(u.teamId, 100_000_000);
    });
    afterEach(() => h.close());

    it('a range longer than VIDMILL_SEGMENT_SECONDS is processed as segment jobs and a join: one output, one charge, one started and one done event, parts removed', async () => {
      const source = await ingestedSource();
      const appraisal = await post(`/v1/videos/${source}/processing/appraisals/create`, OPTIONS);
      assert.equal(appraisal.status, 201, JSON.stringify(appraisal.body));
      assert.ok(JSON.stringify(appraisal.body).includes('3 segments'), 'the appraisal says the job is split');
      h.startWorker({ concurrency: 2 });
      const started = await post(`/v1/videos/${source}/processing/start`, OPTIONS);
      const videoId = started.body.videoId as string;
      const progress: number[] = [];
      const done = await waitFor(
        'processing',
        async () => {
          const s = (await findVideo(h.database.db, videoId))?.processing;
          if (s?.status === 'IN_PROGRESS') progress.push(s.progress ?? 0);
          return s && ['DONE', 'FAILED'].includes(s.status) ? s : undefined;
        },
        { timeoutMs: 150_000, intervalMs: 50 },
      );
      assert.equal(done.status, 'DONE', JSON.stringify(done.error));
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i]! >= progress[i - 1]! - 1, `progress does not go back: ${progress.join(',')}`);
      const jobs = await jobsOf(videoId);
      assert.deepEqual(
        jobs
          .filter((j) => j.kind === SEGMENT_JOB.kind)
          .map((j) => j.payload.part)
          .sort(),
        [0, 1, 2, 3],
      );
      assert.equal(jobs.filter((j) => j.kind === JOIN_JOB.kind).length, 1);
      assert.ok(jobs.every((j) => j.status === 'done' || j.kind !== SEGMENT_JOB.kind));
      assert.deepEqual(
        (await eventsOf(videoId)).filter((e) => e.startsWith('video_processing.')),
        ['video_processing.started', 'video_processing.done'],
      );
      const charges = ((await get('/v2/wallet/billing-periods/latest/transactions?pageSize=100')).body.items ?? []).filter(
        (t: { type: string; videoId?: string }) => t.type === 'PROCESSING' && t.videoId === videoId,
      );
      assert.equal(charges.length, 1, 'charged once');
      // The join removes the parts right after the processing is DONE.
      await waitFor('the parts removed', async () => ((await h.database.db('processing_segments').where({ video_id: videoId })).length === 0 ? true : undefined));
      for (const part of [0, 1, 2]) assert.equal(await h.services.blobs.stat(`videos/${videoId}/segments/${part}.mp4`), undefined);
      assert.equal(await h.services.blobs.stat(`videos/${videoId}/segments/3.mov`), undefined);
      // The output: every frame of the 6 s at 25 frames/s, with its audio.
      const v = await findVideo(h.database.db, videoId);
      const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-segmented-'));
      try {
        const probe = await withLocalFile(h.services.blobs, v!.blobKey!, dir, async (file) => probeMedia(await resolveMediaBinaries({}), file));
        assert.equal(`${probe.width}x${probe.height}`, '960x720', '4:3 fitted into STANDARD_HD');
        assert.ok(probe.hasAudio);
        assert.ok(Math.abs(probe.durationMs - 6000) <= 40, `duration ${probe.durationMs}`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      const applied = (await get(`/v1/videos/${videoId}`)).body.processing.appliedOptions;
      assert.ok(applied, 'applied options are recorded');
    });

    it('a segment whose worker was lost is taken over alone; the other parts run once', async () => {
      const source = await ingestedSource();
      const videoId = await split(source);
      await loseWorkerOn(1);
      h.startWorker({ concurrency: 2 });
      const done = await waitStage(videoId, 'processing');
      assert.equal(done.status, 'DONE', JSON.stringify(done.error));
      const parts = (await jobsOf(videoId)).filter((j) => j.kind === SEGMENT_JOB.kind);
      assert.deepEqual(parts.map((j) => j.attempts).sort(), [1, 1, 1, 2], 'only the lost part ran twice');
    });

    it('a segment that gives up fails the processing once, refunds once, and its other parts are removed', async () => {
      const source = await ingestedSource();
      const balance = await h.services.ledger.processingBalance(u.teamId);
      const videoId = await split(source);
      assert.ok((await h.services.ledger.processingBalance(u.teamId)) < balance, 'charged');
      await loseWorkerOn(3);
      const failed = await waitStage(videoId, 'processing');
      assert.equal(failed.status, 'FAILED');
      assert.equal(failed.error?.code, 'PROCESSING_FAILED');
      assert.equal(await h.services.ledger.processingBalance(u.teamId), balance, 'refunded once');
      // The other parts find the processing ended and stop; the sweep removes what is left.
      h.startWorker({ concurrency: 2 });
      await waitFor('the other parts', async () => ((await jobsOf(videoId)).filter((j) => j.kind === SEGMENT_JOB.kind).every((j) => j.status === 'done' || j.status === 'failed') ? true : undefined));
      await h.services.processing.segmented.sweepLeftovers();
      assert.equal((await h.database.db('processing_segments').where({ video_id: videoId })).length, 0);
      assert.deepEqual(
        (await eventsOf(videoId)).filter((e) => e.startsWith('video_processing.')),
        ['video_processing.started', 'video_processing.failed'],
      );
      assert.equal(await h.services.ledger.processingBalance(u.teamId), balance, 'still refunded once');
      assert.equal((await jobsOf(videoId)).filter((j) => j.kind === JOIN_JOB.kind).length, 0, 'no join');
    });
  });
}
