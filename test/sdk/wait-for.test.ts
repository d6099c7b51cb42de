// test-databases: one
// (SQLite only: its subject is the SDK's waiting helpers.)
/**
 * `waitFor` (sdk/src/wait-for.ts) on real stages: a real copy in and ingestion with ffmpeg
 * reach DONE with progress reported on each change; a failed video in throws its StageError code.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { unwrap, VidmillApiError, VidmillStageFailedError, VidmillWaitTimeoutError, waitFor, type StageProgress, type VidmillClient } from '../../sdk/src';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { crc32c } from '../../src/net/crc32c';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { fixtureBytes } from '../helpers/media-fixtures';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { sdkClient } from './sdk-harness';
import { scaled } from '../helpers/timeouts';

describe(`SDK waitFor (${TEST_DIALECT})`, function () {
  this.timeout(scaled(120_000));
  let server: RangeServer;
  let h: Harness;
  let u: TestUser;
  let client: VidmillClient;
  let n = 0;
  const serve = (data: Buffer) => {
    const p = `/media/sdk-wait-${++n}.mp4`;
    server.serve(p, data);
    return server.origin + p;
  };

  before(async () => {
    server = await startRangeServer();
  });
  after(() => server.close());
  beforeEach(async () => {
    h = await createHarness({ allowPrivateUrls: true, extraCa: [server.ca] });
    u = await h.user();
    await setFreeClipEnabled(h.database.db, u.teamId, false);
    h.startWorker({ concurrency: 2 });
    client = await sdkClient(h, u);
  });
  afterEach(() => h.close());

  it('waits through video in and ingestion to DONE, reporting progress on each change', async () => {
    const data = fixtureBytes({ seconds: 2 });
    const { videoId } = unwrap(await client.api.POST('/v1/videos/in/https', { body: { name: 'Waited', url: serve(data) } }));
    const seen: StageProgress[] = [];
    const copied = await waitFor(client, videoId, 'videoIn', { intervalMs: 50, timeoutMs: 60_000 });
    assert.equal(copied.status, 'DONE');
    assert.equal(copied.progressPercentage, 100);
    const ingested = await waitFor(client, videoId, 'ingestion', { intervalMs: 50, timeoutMs: 90_000, onProgress: (p) => seen.push(p) });
    assert.equal(ingested.stage, 'ingestion');
    assert.equal(ingested.status, 'DONE');
    assert.equal(ingested.progressPercentage, 100);
    assert.equal(ingested.video.id, videoId);
    assert.equal(ingested.video.ingestion?.ingestionState?.ingestionStatus, 'DONE');
    assert.ok(seen.length >= 1);
    assert.deepEqual(seen.at(-1), { stage: 'ingestion', status: 'DONE', progressPercentage: 100, ...(seen.at(-1)!.etaSeconds !== undefined ? { etaSeconds: seen.at(-1)!.etaSeconds } : {}) });
    for (let i = 1; i < seen.length; i++) assert.notDeepEqual(seen[i], seen[i - 1], 'reported only on a change');
    // an already finished stage answers at once
    const again: StageProgress[] = [];
    assert.equal((await waitFor(client, videoId, 'ingestion', { onProgress: (p) => again.push(p) })).status, 'DONE');
    assert.equal(again.length, 1);
  });

  it('a failed video in throws VidmillStageFailedError with its code, also to a wait for ingestion', async () => {
    const data = fixtureBytes({ seconds: 1 });
    const wrong = (crc32c(data) + 1) >>> 0;
    const { videoId } = unwrap(await client.api.POST('/v1/videos/in/https', { params: { query: { crc32c: wrong } }, body: { name: 'Bad sum', url: serve(data) } }));
    for (const stage of ['videoIn', 'ingestion'] as const) {
      await assert.rejects(waitFor(client, videoId, stage, { intervalMs: 50, timeoutMs: 60_000 }), (e: unknown) => {
        assert.ok(e instanceof VidmillStageFailedError, String(e));
        assert.equal(e.stage, 'videoIn');
        assert.equal(e.errorCode, 'CHECKSUM_MISMATCH');
        assert.equal(e.videoId, videoId);
        assert.equal(e.video.upload?.uploadState?.uploadStatus, 'FAILED');
        return true;
      });
    }
  });

  it('gives up after timeoutMs with VidmillWaitTimeoutError; a signal stops it; an unknown video is the API error', async () => {
    const data = fixtureBytes({ seconds: 1 });
    const { videoId } = unwrap(await client.api.POST('/v1/videos/in/https', { body: { name: 'Never processed', url: serve(data) } }));
    await assert.rejects(
      waitFor(client, videoId, 'videoOut', { intervalMs: 20, timeoutMs: 100 }),
      (e: unknown) => e instanceof VidmillWaitTimeoutError && e.stage === 'videoOut' && e.last.status === 'INITIAL',
    );
    const controller = new AbortController();
    const waiting = waitFor(client, videoId, 'videoOut', { intervalMs: 10_000, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('cancelled by the user')), 50);
    await assert.rejects(waiting, /cancelled by the user/);
    await assert.rejects(waitFor(client, randomUUID(), 'ingestion'), (e: unknown) => e instanceof VidmillApiError && e.errorCode === 'RESOURCE_NOT_FOUND');
  });
});
