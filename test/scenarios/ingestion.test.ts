/**
 * Ingestion after video in, the free clip and the asset links, end to end with real ffmpeg on
 * small generated videos served by the local HTTPS range server.
 */
import { strict as assert } from 'node:assert';
import { storageReads } from '../../src/features/billing/testing';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { findVideo, videoAssetsOf } from '../../src/features/videos';
import { TEST_DIALECT } from '../helpers/database';
import { assertEtaQuality, assertStageError, createHarness, deliveryPayloads, expectError, Harness, recordEtaRuns, subscribeWebhook, TestUser, withTamperedSignature } from '../helpers/harness';
import { apiRequests, waitFor } from '../helpers/scenario';
import { fixtureBytes } from '../helpers/media-fixtures';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { scaled } from '../helpers/timeouts';

describe(`Ingestion and the free clip (${TEST_DIALECT})`, function () {
  this.timeout(scaled(120_000));
  let server: RangeServer;
  let h: Harness;
  let u: TestUser;
  let n = 0;

  const serve = (data: Buffer, ext = 'mp4') => {
    const p = `/media/ingest-${++n}.${ext}`;
    server.serve(p, data);
    return server.origin + p;
  };
  const { get, post } = apiRequests(
    () => h,
    () => u,
  );
  const ingestionOf = async (videoId: string) => (await findVideo(h.database.db, videoId))?.ingestion;
  const waitIngested = (videoId: string, want = ['DONE', 'FAILED']) =>
    waitFor(
      `ingestion of ${videoId}`,
      async () => {
        const i = await ingestionOf(videoId);
        return i && want.includes(i.status) ? i : undefined;
      },
      { timeoutMs: 90_000 },
    );
  const eventsOf = async (videoId: string) =>
    (
      await h.database
        .db('webhook_events')
        .orderBy([{ column: 'occurred_at' }, { column: 'created_at' }])
        .select('event_type', 'data')
    )
      .filter((r: any) => JSON.parse(r.data).videoId === videoId)
      .map((r: any) => r.event_type as string);

  // How good the time-left estimates of this file's stages were (src/shared/progress-eta.ts).
  const etaRuns = recordEtaRuns(['ingestion', 'clip', 'processing']);

  before(async () => {
    server = await startRangeServer();
  });
  after(async () => {
    await server.close();
    assertEtaQuality(etaRuns.stop());
  });
  beforeEach(async () => {
    h = await createHarness({ allowPrivateUrls: true, extraCa: [server.ca] });
    u = await h.user();
    h.startWorker({ concurrency: 2 });
  });
  afterEach(() => h.close());

  it('metadata-only ingestion (fullIngestion=false) reads the metadata with ffprobe and makes no assets', async () => {
    await setFreeClipEnabled(h.database.db, u.teamId, false);
    const res = await post('/v1/videos/in/https', { name: 'Meta', url: serve(fixtureBytes({ seconds: 3, audio: true })) });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const videoId = res.body.videoId;
    await waitIngested(videoId);
    const status = (await get(`/v1/videos/${videoId}/in/status`)).body;
    const state = status.ingestion.ingestionState;
    assert.equal(state.ingestionStatus, 'DONE');
    assert.equal(state.progressPercentage, 100);
    assert.deepEqual([state.videoMetadataAvailable, state.thumbnailsAvailable, state.fullFramesAvailable, state.webVideoAvailable], [true, false, false, false]);
    const m = status.ingestion.metadata;
    assert.equal(m.codecName, 'h264');
    assert.equal(m.pixelFormatName, 'yuv420p');
    assert.equal(m.primaryBitDepth, 8);
    assert.deepEqual([m.frameWidth, m.frameHeight], [320, 240]);
    assert.equal(m.averageFrameRate.rational, '25:1');
    assert.ok(Math.abs(m.durationInMillis - 3000) <= 100, `duration ${m.durationInMillis}`);
    assert.equal(m.scanning.heuristics, 'PROGRESSIVE');
    assert.deepEqual(await eventsOf(videoId), ['video_in.started', 'video_in.done', 'video_in_ingestion.started', 'video_in_ingestion.done']);
    const video = (await get(`/v1/videos/${videoId}`)).body;
    assert.deepEqual([video.flags.isIngesting, video.flags.isIngested], [false, true]);
    assert.equal((await get(`/v1/videos/${videoId}/derived`)).body.totalElements, 0, 'no clip when the team turned it off');
    const assets = (await get(`/v1/videos/${videoId}/assets`)).body;
    assert.deepEqual([assets.thumbnails, assets.fullFrames, assets.webVideo], [[], [], undefined]);
  });

  it('full ingestion makes thumbnails, frames, a web video and a quality assessment, and the free clip follows with its own events; the storage meter counts every stored byte', async () => {
    const res = await post('/v1/videos/in/https?fullIngestion=true', { name: 'Full', url: serve(fixtureBytes({ seconds: 30, width: 640, height: 360, audio: true })) });
    const videoId = res.body.videoId;
    const ingestion = await waitIngested(videoId);
    assert.equal(ingestion.status, 'DONE', JSON.stringify(ingestion.error));
    const state = (await get(`/v1/videos/${videoId}/in/status`)).body.ingestion;
    assert.deepEqual(
      [state.ingestionState.videoMetadataAvailable, state.ingestionState.thumbnailsAvailable, state.ingestionState.fullFramesAvailable, state.ingestionState.webVideoAvailable],
      [true, true, true, true],
    );
    assert.ok(state.qualityAssessment.metrics.length > 0);
    for (const metric of state.qualityAssessment.metrics) assert.equal(typeof metric.sampleMean, 'number', JSON.stringify(metric));

    // The links serve the assets, with ranges, until they expire.
    const assets = (await get(`/v1/videos/${videoId}/assets?expiresInMinutes=5`)).body;
    assert.ok(assets.thumbnails.length >= 3);
    assert.ok(assets.fullFrames.length >= 1);
    const local = (url: string) => url.replace(/^https?:\/\/[^/]+/, '');
    const thumb = await h.request
      .get(local(assets.thumbnails[0].url))
      .buffer(true)
      .parse((r, cb) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => cb(null, Buffer.concat(chunks)));
      });
    assert.equal(thumb.status, 200);
    assert.equal(thumb.headers['content-type'], 'image/jpeg');
    assert.deepEqual([...(thumb.body as Buffer).subarray(0, 3)], [0xff, 0xd8, 0xff]);
    assert.ok(assets.webVideo.height <= 720);
    const ranged = await h.request.get(local(assets.webVideo.url)).set('Range', 'bytes=0-99');
    assert.equal(ranged.status, 206);
    assert.equal(ranged.headers['content-range'], `bytes 0-99/${assets.webVideo.size}`);
    expectError(await h.request.get(local(withTamperedSignature(assets.webVideo.url))), 403, 'ACCESS_DENIED');
    h.clock.advance(6 * 60_000);
    expectError(await h.request.get(local(assets.webVideo.url)), 403, 'ACCESS_DENIED');

    // The free clip: a derived video of ten seconds, cut and ingested under its own id.
    const clipId = await waitFor('the clip', async () => (await get(`/v1/videos/${videoId}/derived`)).body.items[0]?.id as string | undefined);
    const clipIngestion = await waitIngested(clipId);
    assert.equal(clipIngestion.status, 'DONE', JSON.stringify(clipIngestion.error));
    const clip = (await get(`/v1/videos/${clipId}`)).body;
    assert.equal(clip.clipId, clipId);
    assert.equal(clip.flags.isClip, true);
    assert.equal(clip.flags.isMaster, false);
    assert.equal(clip.masterVideo.id, videoId);
    assert.equal(clip.processing.processingState.processingStatus, 'DONE');
    assert.equal(clip.processing.sourceVideo.videoId, videoId);
    // Ten seconds to the frame (frame count x frame duration), in the master's codec and container.
    const { totalFrames, averageFrameRate } = clip.ingestion.metadata;
    assert.ok(Math.abs(totalFrames / averageFrameRate.frameRate - 10) <= 1 / averageFrameRate.frameRate, `clip: ${totalFrames} frames at ${averageFrameRate.frameRate} fps`);
    assert.equal(clip.ingestion.metadata.codecName, 'h264');
    assert.equal(clip.ingestion.metadata.containerName, 'mp4');
    assert.deepEqual(await eventsOf(clipId), ['clip_processing.started', 'clip_processing.done', 'clip_ingestion.started', 'clip_ingestion.done']);

    // Storage billing: each stored file and asset was sampled when it landed.
    let stored = 0;
    for (const id of [videoId, clipId]) {
      stored += (await findVideo(h.database.db, id))!.file!.size;
      for (const a of await videoAssetsOf(h.database.db, id)) stored += a.size;
    }
    assert.equal((await storageReads.meter(h.database.db, u.teamId))?.bytes, stored);
  });

  it('a text file named .mp4 fails ingestion with INGESTION_UNREADABLE_MEDIA, said in the state and in the event, and no clip is made', async () => {
    await subscribeWebhook(h, u, ['video_in_ingestion.failed', 'video_in.done']);
    const text = Buffer.from('These are the minutes of the meeting, not a video.\n'.repeat(2000));
    const res = await post('/v1/videos/in/https', { name: 'Minutes', url: serve(text, 'mp4') });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const videoId = res.body.videoId;
    const ingestion = await waitIngested(videoId);
    assert.equal(ingestion.status, 'FAILED');
    const status = (await get(`/v1/videos/${videoId}/in/status`)).body;
    assert.equal(status.upload.uploadState.uploadStatus, 'DONE');
    assert.ok(!('error' in status.upload.uploadState));
    const state = status.ingestion.ingestionState;
    assert.equal(state.ingestionStatus, 'FAILED');
    assertStageError(state.error, 'INGESTION_UNREADABLE_MEDIA');
    assert.equal(state.error.message, 'The file is not a video ffmpeg can read (no readable video stream).');
    assert.deepEqual((await get(`/v1/videos/${videoId}`)).body.ingestion.ingestionState.error, state.error);
    assert.deepEqual((await eventsOf(videoId)).slice(2), ['video_in_ingestion.started', 'video_in_ingestion.failed']);
    const payloads = await deliveryPayloads(h, videoId);
    assert.deepEqual(
      payloads.map((p) => p.eventType),
      ['video_in.done', 'video_in_ingestion.failed'],
    );
    assert.ok(!('error' in payloads[0].data), 'no error on a success event');
    assert.deepEqual(payloads[1].data, { type: 'VIDEO', videoId, error: state.error });
    assert.equal((await get(`/v1/videos/${videoId}/derived`)).body.totalElements, 0);
  });

  it('an interlaced source is found interlaced by the scanning heuristics', async () => {
    await setFreeClipEnabled(h.database.db, u.teamId, false);
    const interlaced = fixtureBytes({
      seconds: 3,
      width: 352,
      height: 288,
      fps: 50,
      ext: 'ts',
      video: ['-vf', 'interlace=scan=tff,setfield=tff', '-c:v', 'mpeg2video', '-flags', '+ilme+ildct', '-top', '1', '-b:v', '2M', '-g', '12'],
    });
    const res = await post('/v1/videos/in/https', { name: 'SD', url: serve(interlaced, 'ts') });
    await waitIngested(res.body.videoId);
    const m = (await get(`/v1/videos/${res.body.videoId}/in/status`)).body.ingestion.metadata;
    assert.equal(m.codecName, 'mpeg2');
    assert.equal(m.scanning.heuristics, 'INTERLACED_TOP_FIRST');
  });
});
