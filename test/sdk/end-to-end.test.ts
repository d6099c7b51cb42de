/**
 * One whole flow through the SDK only, against the real app with its worker and real ffmpeg:
 * a video from an HTTPS source -> ingestion -> appraisal -> accept -> processing -> a download
 * link -> the downloaded file, checked against the size and CRC-32C the API announced.
 * (Setup that is not an API call, a user and a wallet top-up, goes through the services.)
 */
import { strict as assert } from 'node:assert';
import { listAll, unwrap, waitFor, type StageProgress, type VidmillClient } from '../../sdk/src';
import { ingestionStore } from '../../src/features/ingestion/ingestion.store';
import { crc32c } from '../../src/net/crc32c';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { fixtureBytes } from '../helpers/media-fixtures';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { appBaseUrl, sdkClient } from './sdk-harness';

describe(`SDK end to end (${TEST_DIALECT})`, function () {
  this.timeout(180_000);
  let server: RangeServer;
  let h: Harness;
  let u: TestUser;
  let client: VidmillClient;

  before(async () => {
    server = await startRangeServer();
  });
  after(() => server.close());
  beforeEach(async () => {
    h = await createHarness({ allowPrivateUrls: true, extraCa: [server.ca] });
    await h.services.configurations.ensureBuiltIns();
    u = await h.user();
    await ingestionStore.setFreeClipEnabled(h.database.db, u.teamId, false);
    await h.services.ledger.topUp(u.teamId, 100_000_000);
    h.startWorker({ concurrency: 2 });
    client = await sdkClient(h, u);
  });
  afterEach(() => h.close());

  it('HTTPS source -> ingestion -> appraise -> accept -> processing -> download link -> the bytes announced', async () => {
    const wait = { intervalMs: 100, timeoutMs: 150_000 };
    server.serve('/media/sdk-e2e.mp4', fixtureBytes({ seconds: 3, audio: true }));
    const created = unwrap(await client.api.POST('/v1/videos/in/https', { body: { name: 'Beach', url: `${server.origin}/media/sdk-e2e.mp4` } }));
    const master = created.videoId;
    const ingested = await waitFor(client, master, 'ingestion', wait);
    assert.ok(ingested.video.ingestion?.metadata?.durationInMillis, 'metadata read');

    const appraisal = unwrap(
      await client.api.POST('/v1/videos/{videoId}/processing/appraisals/create', {
        params: { path: { videoId: master } },
        body: { container: 'MP4', encodingConfiguration: { codec: 'H264', bitrate: 500_000 } },
      }),
    );
    assert.ok(appraisal.video.processingJobAppraisal, 'priced');
    const accepted = unwrap(
      await client.api.POST('/v1/videos/{videoId}/processing/appraisals/{appraisalId}/accept', {
        params: { path: { videoId: master, appraisalId: appraisal.appraisalId }, query: { videoName: 'Beach 500k' } },
      }),
    );
    const processed = accepted.videoId;
    assert.equal(processed, appraisal.video.id);

    const progress: StageProgress[] = [];
    const done = await waitFor(client, processed, 'processing', { ...wait, onProgress: (p) => progress.push(p) });
    assert.equal(done.status, 'DONE');
    assert.equal(progress.at(-1)?.status, 'DONE');
    assert.equal(done.video.processing?.sourceVideo?.videoId, master);

    const derived: string[] = [];
    for await (const v of listAll(client, '/v1/videos/{videoId}/derived', { path: { videoId: master } })) derived.push(v.id);
    assert.deepEqual(derived, [processed]);

    const link = unwrap(await client.api.POST('/v1/videos/{videoId}/out/https', { params: { path: { videoId: processed } } }));
    assert.equal(link.mimeType, 'video/mp4');
    assert.equal(link.suggestedFileName, 'Beach 500k.mp4');
    // the link names the configured public address; the test's app listens elsewhere
    const url = new URL(link.presignedUrl);
    const download = await fetch(`${await appBaseUrl(h)}${url.pathname}${url.search}`);
    assert.equal(download.status, 200);
    const bytes = Buffer.from(await download.arrayBuffer());
    assert.equal(bytes.length, link.fileSize);
    assert.equal(crc32c(bytes), link.crc32cChecksum);
    assert.equal(bytes.subarray(4, 8).toString('latin1'), 'ftyp', 'an MP4 file');
  });
});
