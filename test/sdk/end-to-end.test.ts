// test-databases: one
// (SQLite only: its subject is the SDK against the app; the API's SQL is tested on PostgreSQL by the scenario files.)
/**
 * One whole flow through the SDK only, against the real app served on a port with its worker and
 * real ffmpeg: a file on disk uploaded with `uploadFile` (tus) -> ingestion -> appraisal -> accept
 * -> processing -> a download link -> the downloaded file, checked against the size and CRC-32C
 * the API announced. (Setup that is not an API call, a user and a wallet top-up, goes through the
 * services.)
 */
import { strict as assert } from 'node:assert';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createVidmillClient, listAll, unwrap, uploadFile, waitFor, type StageProgress, type VidmillClient } from '../../sdk/src';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { crc32c } from '../../src/net/crc32c';
import { TEST_DIALECT } from '../helpers/database';
import { startCliServer, type CliServer } from '../helpers/cli';
import type { TestUser } from '../helpers/harness';
import { fixtureBytes } from '../helpers/media-fixtures';
import { scaled } from '../helpers/timeouts';

describe(`SDK end to end (${TEST_DIALECT})`, function () {
  this.timeout(scaled(180_000));
  let s: CliServer;
  let u: TestUser;
  let client: VidmillClient;

  beforeEach(async () => {
    // served on a port that is also its public URL, so upload and download links lead back to it
    s = await startCliServer();
    const h = s.h;
    await h.services.configurations.ensureBuiltIns();
    u = await h.user();
    await setFreeClipEnabled(h.database.db, u.teamId, false);
    await h.services.ledger.topUp(u.teamId, 100_000_000);
    h.startWorker({ concurrency: 2 });
    client = createVidmillClient({ baseUrl: s.url, apiKey: u.apiKey });
  });
  afterEach(() => s.close());

  it('upload a file (tus) -> ingestion -> appraise -> accept -> processing -> download link -> the bytes announced', async () => {
    const wait = { intervalMs: 100, timeoutMs: scaled(150_000) };
    const source = fixtureBytes({ seconds: 3, audio: true });
    const file = path.join(s.home, 'beach.mp4');
    writeFileSync(file, source);
    const sent: number[] = [];
    const { videoId: master } = await uploadFile(client, file, { name: 'Beach', chunkSize: 64 * 1024, onProgress: (bytes) => sent.push(bytes) });
    assert.equal(sent.at(-1), source.length, 'progress reported up to the last byte');
    const copied = await waitFor(client, master, 'videoIn', wait);
    assert.equal(copied.video.upload?.uploadState?.bytesTransferred, source.length);
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
    const download = await fetch(link.presignedUrl);
    assert.equal(download.status, 200);
    const bytes = Buffer.from(await download.arrayBuffer());
    assert.equal(bytes.length, link.fileSize);
    assert.equal(crc32c(bytes), link.crc32cChecksum);
    assert.equal(bytes.subarray(4, 8).toString('latin1'), 'ftyp', 'an MP4 file');
  });
});
