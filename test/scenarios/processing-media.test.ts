// test-databases: one
/**
 * Processing scenarios whose subject is the media, through the API with real ffmpeg: fidelity
 * (a DNxHR built-in on an interlaced source, HDR10 kept), the progress and time left of a job of
 * a few seconds, and an interlaced SD clip to 1080p HEVC checked with ffprobe, copied out to a
 * bucket and charged once. The SQL they reach is processing.test.ts's, on both databases.
 */
import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { resolveMediaBinaries, probeMedia } from '../../src/media';
import { findVideo } from '../../src/features/videos';
import { expectError, Harness, TestUser } from '../helpers/harness';
import { waitFor } from '../helpers/scenario';
import { fixtureBytes } from '../helpers/media-fixtures';
import { processingScenario } from './processing-scenario';
import { scaled } from '../helpers/timeouts';

/** A widescreen PAL archive: 720x576 stored, anamorphic 16:9 (sample aspect 64:45), 50 fields/s top first, MPEG-2 in MPEG-TS. */
const palInterlaced = (seconds: number) =>
  fixtureBytes({
    seconds,
    width: 720,
    height: 576,
    fps: 50,
    ext: 'ts',
    video: ['-vf', 'setsar=64/45,interlace=scan=tff,setfield=tff', '-c:v', 'mpeg2video', '-flags', '+ilme+ildct', '-top', '1', '-b:v', '4M', '-g', '12'],
  });

describe('Processing: media end to end (one database)', function () {
  this.timeout(scaled(180_000));
  const s = processingScenario();
  let h: Harness;
  let u: TestUser;
  beforeEach(() => ({ h, u } = s));
  const { get, post, waitStage, ingested, processingCharges, etaRuns } = s;

  describe('fidelity (issue 17)', () => {
    it('DNxHR: an interlaced output is 400 UNSUPPORTED_PROCESSING_OPTION at appraisal; the DNxHR built-in deinterlaces and finishes, showing what it applied next to what was asked', async () => {
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const source = await ingested(palInterlaced(1), 'ts');
      const refused = await post(`/v1/videos/${source}/processing/appraisals/create`, {
        encodingProfile: 'DNXHR_SQ',
        container: 'MXF',
        processingSettings: { outputScanning: 'INTERLACED_TOP_FIRST' },
      });
      expectError(refused, 400, 'UNSUPPORTED_PROCESSING_OPTION');
      assert.equal(refused.body.validationErrors[0].field, 'body.processingSettings.outputScanning');
      const builtIn = (await get('/v1/processing-configurations?builtInMode=ONLY&pageSize=100')).body.items.find((c: any) => c.name === 'DNxHR HQ MXF');
      const started = await post(`/v1/videos/${source}/processing/start/${builtIn.id}`);
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const processing = await waitStage(started.body.videoId, 'processing');
      assert.equal(processing.status, 'DONE', JSON.stringify(processing.error));
      assert.equal((await waitStage(started.body.videoId, 'ingestion')).status, 'DONE');
      const video = (await get(`/v1/videos/${started.body.videoId}`)).body;
      assert.deepEqual(video.processing.options, builtIn.options, 'options: as requested');
      const applied = video.processing.appliedOptions;
      assert.equal(applied.options.processingSettings.outputScanning, 'PROGRESSIVE');
      assert.deepEqual(
        [
          applied.output.codec,
          applied.output.codecProfile,
          applied.output.pixelFormat.name,
          `${applied.output.width}x${applied.output.height}`,
          applied.output.sampleAspectRatio,
          applied.output.frameRate.rational,
          applied.output.scanning,
        ],
        ['DNXHR', 'DNXHR HQ', 'yuv422p', '720x576', '64:45', '50:1', 'PROGRESSIVE'],
      );
      assert.equal(video.ingestion.metadata.averageFrameRate.rational, '50:1');
      assert.ok(video.processing.appliedNotes.some((n: any) => n.field === 'processingSettings.outputScanning'));
    });

    it('an HDR10 source processed with {}: the result keeps its mastering display and light levels and ingests as HDR10; a start between frames is frame exact', async () => {
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const hdr10 = fixtureBytes({
        seconds: 2,
        width: 320,
        height: 180,
        video: [
          '-c:v',
          'libx265',
          '-preset',
          'ultrafast',
          '-pix_fmt',
          'yuv420p10le',
          '-color_primaries',
          'bt2020',
          '-color_trc',
          'smpte2084',
          '-colorspace',
          'bt2020nc',
          '-x265-params',
          'log-level=error:hdr10=1:master-display=G(8500,39850)B(6550,2300)R(35400,14600)WP(15635,16450)L(40000000,50):max-cll=4000,1000',
        ],
      });
      const source = await ingested(hdr10);
      const sourceVideo = (await get(`/v1/videos/${source}`)).body;
      assert.equal(sourceVideo.ingestion.metadata.hdrStandardName, 'HDR10');
      const appraisal = await post(`/v1/videos/${source}/processing/appraisals/create?startPosMs=500&endPosMs=2000`, {});
      assert.equal(appraisal.status, 201, JSON.stringify(appraisal.body));
      const planned = appraisal.body.video.processing.appliedOptions.output;
      assert.equal(planned.colorProfile.hdrFormat, 'HDR10', 'the appraisal shows what will be applied');
      assert.equal(planned.startPositionMilliseconds, 520); // frame 13 of 25 frames/s
      const accepted = await post(`/v1/videos/${source}/processing/appraisals/${appraisal.body.appraisalId}/accept`);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const videoId = accepted.body.videoId;
      assert.equal((await waitStage(videoId, 'processing')).status, 'DONE');
      const ingestion = await waitStage(videoId, 'ingestion');
      assert.equal(ingestion.status, 'DONE', JSON.stringify(ingestion.error));
      const video = (await get(`/v1/videos/${videoId}`)).body;
      assert.equal(video.ingestion.metadata.hdrStandardName, 'HDR10');
      assert.equal(video.ingestion.metadata.totalFrames, 37);
      assert.deepEqual(video.processing.options, {});
      const cp = video.processing.appliedOptions.output.colorProfile;
      assert.deepEqual([cp.hdrFormat, cp.maxCll, cp.maxFall, cp.masteringDisplay.maxLuminance, cp.masteringDisplay.red], ['HDR10', 4000, 1000, 4000, { x: 0.708, y: 0.292 }]);
      assert.equal(video.processing.appliedOptions.output.codecProfile, 'Main 10');
      const stored = await findVideo(h.database.db, videoId);
      const probe = await probeMedia(await resolveMediaBinaries({}), h.services.blobs.localPath!(stored!.blobKey!));
      assert.equal(probe.hdr10?.masteringDisplay?.maxLuminance, 4000);
      assert.equal(probe.hdr10?.maxCll, 4000);
    });
  });

  it('a job of a few seconds: the percentage only grows, no time left before 5 % and 2 s measured, then one from the measured rate', async () => {
    await h.services.ledger.topUp(u.teamId, 100_000_000);
    const source = await ingested(fixtureBytes({ seconds: 60, width: 320, height: 240 }));
    const options = { container: 'MP4', encodingConfiguration: { codec: 'H264' }, filters: { scaler: 'SCALE' }, filterSettings: { resolution: { width: 640, height: 360 } } };
    const started = await post(`/v1/videos/${source}/processing/start`, options);
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const videoId = started.body.videoId;
    const runsBefore = etaRuns.runs.length;
    const seen: Array<{ status: string; progress: number; eta?: number }> = [];
    await waitFor(
      'processing to end',
      async () => {
        const state = (await get(`/v1/videos/${videoId}/processing/status`)).body.processingState;
        seen.push({ status: state.processingStatus, progress: state.progressPercentage, eta: state.etaSeconds });
        return state.processingStatus === 'DONE' || state.processingStatus === 'FAILED';
      },
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    assert.equal(seen.at(-1)!.status, 'DONE');
    assert.equal(seen.at(-1)!.eta, 0);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.progress >= seen[i - 1]!.progress, 'never goes back');
    const running = seen.filter((x) => x.status === 'IN_PROGRESS');
    for (const x of running) if (x.eta !== undefined) assert.ok(x.progress >= 5, `an estimate at ${x.progress} %`);
    assert.ok(
      running.some((x) => x.eta !== undefined),
      'a job of seconds has an estimate',
    );
    // The time measured before the first estimate, on the estimator's own clock (its reports, not
    // this test's sampling): no estimate within the first second of the stage's reports.
    const run = await waitFor('the processing run of the estimator', () => etaRuns.runs.slice(runsBefore).find((r) => r.label === 'processing'));
    const firstAt = run.reports[0]!.at;
    for (const r of run.reports)
      if (r.etaSeconds !== undefined && r.fraction < 1)
        assert.ok(r.fraction >= 0.05 && r.at - firstAt >= 1000, `an estimate at ${(r.fraction * 100).toFixed(1)} % after ${(r.at - firstAt).toFixed(0)} ms`);
  });

  it('end to end: an interlaced SD clip processed to 1080p HEVC MP4 with deinterlace and denoise, checked with ffprobe, copied out to a bucket and fetched back identical, charged once', async () => {
    await h.services.ledger.topUp(u.teamId, 100_000_000);
    const sd = palInterlaced(2);
    const source = await ingested(sd, 'ts');
    const options = {
      container: 'MP4',
      encodingConfiguration: { codec: 'HEVC' },
      filters: { deinterlacer: 'BWDIF', denoiser: 'HQDN3D', scaler: 'SCALE' },
      filterSettings: { resolution: { tag: 'FULL_HD' } },
    };
    const a = await post(`/v1/videos/${source}/processing/appraisals/create`, options);
    assert.equal(a.status, 201, JSON.stringify(a.body));
    const accepted = await post(`/v1/videos/${source}/processing/appraisals/${a.body.appraisalId}/accept`);
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const videoId = accepted.body.videoId;
    const processing = await waitStage(videoId, 'processing');
    assert.equal(processing.status, 'DONE', JSON.stringify(processing.error));
    const video = await findVideo(h.database.db, videoId);
    const bins = await resolveMediaBinaries({});
    const local = h.services.blobs.localPath!(video!.blobKey!);
    const probe = await probeMedia(bins, local, { detectScanning: true });
    assert.equal(probe.metadata.codecName, 'hevc');
    assert.equal(probe.metadata.containerName, 'mp4');
    assert.deepEqual([probe.width, probe.height], [1920, 1080]);
    // Deinterlacing outputs one frame per field (docs/processing.md): 25 interlaced frames/s become 50 progressive.
    assert.equal(probe.metadata.averageFrameRate?.rational, '50:1');
    assert.ok(Math.abs(probe.durationMs - 2000) <= 40, `duration ${probe.durationMs} within one frame of 2000`);
    assert.notEqual(probe.metadata.scanning?.heuristics, 'INTERLACED_TOP_FIRST');
    const charges = await processingCharges();
    assert.equal(charges.length, 1, JSON.stringify(charges));
    assert.ok(charges[0].amountUsd < 0, 'a 1080p HEVC job costs something');

    // Video out to the local S3-compatible server, fetched back and compared.
    const out = await post(`/v1/videos/${videoId}/out/bucket`, {
      objectKeyPrefix: 'results',
      s3Bucket: { bucket: 'deliveries', accessKey: s.s3.credentials.accessKey, secretAccessKey: s.s3.credentials.secretAccessKey, endpoint: s.s3.endpoint, forcePathStyle: true },
    });
    assert.equal(out.status, 202, JSON.stringify(out.body));
    await waitFor('video out', async () => (await findVideo(h.database.db, videoId))?.output?.status === 'DONE', { timeoutMs: 60_000 });
    const client = s.s3.client();
    const got = await client.send(new GetObjectCommand({ Bucket: 'deliveries', Key: `results/${video!.file!.name}` }));
    const fetched = Buffer.from(await got.Body!.transformToByteArray());
    client.destroy();
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    assert.equal(sha(fetched), sha(readFileSync(local)), 'the object in the bucket is the processed file');
  });
});
