/**
 * Video in end to end: the three create operations against a real local HTTPS range server and
 * a local S3-compatible store, the copy job on a worker, status, restart, abandon, and the
 * events written on the way. Ingestion of what was copied is covered in ingestion.test.ts.
 */
import { strict as assert } from 'node:assert';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { crc32c } from '../../src/net/crc32c';
import { findVideo } from '../../src/features/videos';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { TEST_DIALECT } from '../helpers/database';
import { assertStageError, createHarness, deliveryPayloads, expectError, Harness, subscribeWebhook, TestUser } from '../helpers/harness';
import { apiRequests, waitFor } from '../helpers/scenario';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { LocalS3, startLocalS3 } from '../helpers/s3-server';
import { scaled } from '../helpers/timeouts';

const MIB = 1024 * 1024;

describe(`Video in (${TEST_DIALECT})`, function () {
  this.timeout(scaled(60_000));
  let server: RangeServer;
  let s3: LocalS3;
  let h: Harness;
  let u: TestUser;
  let workDir: string;
  let n = 0;

  /** Serves `data` under a fresh path and returns its URL. */
  const serve = (data: Buffer, opts?: { contentType?: string; claimedSize?: number }) => {
    const p = `/media/source-${++n}.mp4`;
    server.serve(p, data, opts);
    return server.origin + p;
  };
  const { get, post } = apiRequests(
    () => h,
    () => u,
  );
  const status = async (videoId: string) => (await get(`/v1/videos/${videoId}/in/status`)).body;
  const uploadStatus = async (videoId: string) => (await findVideo(h.database.db, videoId))?.upload?.status;
  const waitUpload = (videoId: string, want: string[]) =>
    waitFor(`upload ${want.join('/')}`, async () => {
      const s = await uploadStatus(videoId);
      return s && want.includes(s) ? s : undefined;
    });
  const events = async (videoId: string) =>
    (
      await h.database
        .db('webhook_events')
        .orderBy([{ column: 'occurred_at' }, { column: 'created_at' }])
        .select('event_type', 'data')
    )
      .filter((r: any) => JSON.parse(r.data).videoId === videoId)
      .map((r: any) => r.event_type as string);
  const stored = async (videoId: string) => {
    const chunks: Buffer[] = [];
    for await (const c of await h.services.blobs.read(`videos/${videoId}/file`)) chunks.push(Buffer.from(c));
    return Buffer.concat(chunks);
  };
  const rangedRequests = (url: string) => server.requests.filter((r) => url.endsWith(r.path) && r.range && r.range !== 'bytes=0-0');

  before(async () => {
    server = await startRangeServer();
    s3 = await startLocalS3({ buckets: ['footage'] });
  });
  after(async () => {
    await server.close();
    await s3.close();
  });
  beforeEach(async () => {
    workDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-work-'));
    h = await createHarness({ allowPrivateUrls: true, extraCa: [server.ca], workDir });
    u = await h.user();
    // These tests are about the copy: no ingestion work beyond the metadata, no clip.
    await setFreeClipEnabled(h.database.db, u.teamId, false);
    server.modes.noRanges = false;
    server.modes.dropOnce.clear();
    server.modes.changeAfterRangedRequests = undefined;
    server.modes.bytesPerSecondPerConnection = undefined;
  });
  afterEach(async () => {
    await h.close();
    rmSync(workDir, { recursive: true, force: true });
  });

  describe('createMasterVideoFromHttps', () => {
    it('answers 202 with uploadStatus INITIAL and the probed file, then copies it byte for byte with its CRC-32C', async () => {
      const data = Buffer.alloc(3 * MIB + 123, 7).map((_, i) => (i * 31) & 255) as Buffer;
      const url = serve(data);
      const res = await post('/v1/videos/in/https?maxConcurrentConnections=4', { name: 'Beach', description: 'raw', url, fileName: 'beach.mp4' });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.equal(res.body.upload.uploadState.uploadStatus, 'INITIAL');
      assert.equal(res.body.upload.uploadState.progressPercentage, 0);
      assert.deepEqual({ ...res.body.upload.file, lastModified: undefined }, { name: 'beach.mp4', size: data.length, type: 'video/mp4', containerName: 'MPEG-4', lastModified: undefined });
      const videoId = res.body.videoId;
      const video = (await get(`/v1/videos/${videoId}`)).body;
      assert.equal(video.flags.isMaster, true);
      assert.equal(video.flags.isIngesting, true);
      assert.equal(video.projectId, (await get('/v1/projects/default')).body.id);

      h.startWorker();
      await waitUpload(videoId, ['DONE']);
      const s = await status(videoId);
      assert.equal(s.upload.uploadState.progressPercentage, 100);
      assert.equal(s.upload.uploadState.bytesTransferred, data.length);
      assert.ok(!('error' in s.upload.uploadState));
      assert.ok((await stored(videoId)).equals(data));
      assert.equal((await findVideo(h.database.db, videoId))?.crc32c, crc32c(data));
      assert.deepEqual((await events(videoId)).slice(0, 2), ['video_in.started', 'video_in.done']);
    });

    it('copies with several parallel ranged requests of at most maxConcurrentConnections at once', async () => {
      const data = Buffer.alloc(40 * MIB, 1);
      const url = serve(data);
      const res = await post('/v1/videos/in/https?maxConcurrentConnections=3', { name: 'Parallel', url });
      h.startWorker();
      await waitUpload(res.body.videoId, ['DONE']);
      const ranged = rangedRequests(url);
      assert.equal(ranged.length, 5, 'five 8 MiB parts');
      assert.ok((await stored(res.body.videoId)).equals(data));
    });

    it('survives a connection dropped in the middle of a part (the part is fetched again)', async () => {
      const data = Buffer.alloc(17 * MIB, 9);
      const url = serve(data);
      server.modes.dropOnce.add(8 * MIB);
      const res = await post('/v1/videos/in/https', { name: 'Dropped', url });
      h.startWorker();
      await waitUpload(res.body.videoId, ['DONE']);
      assert.ok((await stored(res.body.videoId)).equals(data));
    });

    it('follows a redirect to the file, checking the target', async () => {
      const data = Buffer.alloc(MIB, 3);
      const target = serve(data);
      server.redirect('/media/moved.mp4', target);
      const res = await post('/v1/videos/in/https', { name: 'Moved', url: `${server.origin}/media/moved.mp4` });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.equal(res.body.upload.file.size, MIB);
      h.startWorker();
      await waitUpload(res.body.videoId, ['DONE']);
      assert.ok((await stored(res.body.videoId)).equals(data));
    });

    it('uses the projectId given, and derives the file name from the URL when fileName is absent', async () => {
      const project = (await post('/v1/projects', { name: 'Footage' })).body.id;
      const res = await post('/v1/videos/in/https', { name: 'Named', url: serve(Buffer.alloc(1000, 1)), projectId: project });
      assert.equal(res.status, 202);
      assert.match(res.body.upload.file.name, /^source-\d+\.mp4$/);
      assert.equal((await get(`/v1/videos/${res.body.videoId}`)).body.projectId, project);
    });
  });

  describe('bad input to createMasterVideoFromHttps', () => {
    const rejects = async (body: object, status: number, code: string, query = '') => {
      const res = await post(`/v1/videos/in/https${query}`, { name: 'Bad', ...body });
      expectError(res, status, code);
      assert.equal(
        await h.database
          .db('videos')
          .count({ n: '*' })
          .first()
          .then((r: any) => Number(r.n)),
        0,
        'no video is created',
      );
    };
    it('ftp, file and data URLs are 400', async () => {
      await rejects({ url: 'ftp://example.com/v.mp4' }, 400, 'INVALID_HTTPS_URL');
      await rejects({ url: 'file:///etc/passwd' }, 400, 'INVALID_HTTPS_URL');
      await rejects({ url: 'data:video/mp4;base64,AAAA' }, 400, 'INVALID_HTTPS_URL');
    });
    it('a URL with user info is 400 INVALID_HTTPS_URL', async () => {
      await rejects({ url: server.origin.replace('https://', 'https://user:pw@') + '/media/x.mp4' }, 400, 'INVALID_HTTPS_URL');
    });
    it('a URL that is not a URL, or longer than 4096 characters, is 400 VALIDATION_ERROR', async () => {
      await rejects({ url: 'not a url' }, 400, 'VALIDATION_ERROR');
      await rejects({ url: `https://example.com/${'a'.repeat(4100)}` }, 400, 'VALIDATION_ERROR');
    });
    it('a source without range support is 400 CONTENT_NOT_PARTIAL_ERROR', async () => {
      const url = serve(Buffer.alloc(1000, 1));
      server.modes.noRanges = true;
      await rejects({ url }, 400, 'CONTENT_NOT_PARTIAL_ERROR');
    });
    it('a URL the server answers 404 to is 400 INVALID_HTTPS_URL', async () => {
      await rejects({ url: `${server.origin}/media/missing.mp4` }, 400, 'INVALID_HTTPS_URL');
    });
    it('an unreachable host is 400 INVALID_HTTPS_URL', async () => {
      await rejects({ url: 'https://127.0.0.1:1/video.mp4' }, 400, 'INVALID_HTTPS_URL');
    });
    it('a zero-byte source is 400 NO_CONTENT', async () => {
      await rejects({ url: serve(Buffer.alloc(0)) }, 400, 'NO_CONTENT');
    });
    it('a source over 500 GB is 400 VIDEO_TOO_LARGE', async () => {
      await rejects({ url: serve(Buffer.alloc(1, 1), { claimedSize: 500 * 1000 ** 3 + 1 }) }, 400, 'VIDEO_TOO_LARGE');
    });
    it('an HTML page is 400 UNSUPPORTED_CONTENT_TYPE', async () => {
      await rejects({ url: serve(Buffer.from('<html><body>Sign in</body></html>'), { contentType: 'text/html; charset=utf-8' }) }, 400, 'UNSUPPORTED_CONTENT_TYPE');
    });
    it('crc32c outside 0..4294967295 and maxConcurrentConnections outside 1..32 are 400 VALIDATION_ERROR', async () => {
      const url = serve(Buffer.alloc(10, 1));
      await rejects({ url }, 400, 'VALIDATION_ERROR', '?crc32c=4294967296');
      await rejects({ url }, 400, 'VALIDATION_ERROR', '?crc32c=-1');
      await rejects({ url }, 400, 'VALIDATION_ERROR', '?maxConcurrentConnections=0');
      await rejects({ url }, 400, 'VALIDATION_ERROR', '?maxConcurrentConnections=33');
    });
    it('a projectId of another team is 404', async () => {
      const other = await h.user();
      const theirs = (await get('/v1/projects/default', other)).body.id;
      await rejects({ url: serve(Buffer.alloc(10, 1)), projectId: theirs }, 404, 'RESOURCE_NOT_FOUND');
    });
    it('unknown properties and a missing url are 400 VALIDATION_ERROR', async () => {
      await rejects({ url: serve(Buffer.alloc(10, 1)), colour: 'red' }, 400, 'VALIDATION_ERROR');
      await rejects({}, 400, 'VALIDATION_ERROR');
    });
  });

  describe('private addresses when VIDMILL_ALLOW_PRIVATE_URLS is false (the default)', () => {
    let strict: Harness;
    let su: TestUser;
    before(async () => {
      strict = await createHarness({ extraCa: [server.ca] });
      su = await strict.user();
    });
    after(() => strict.close());
    for (const url of [
      'https://127.0.0.1/v.mp4',
      'https://10.1.2.3/v.mp4',
      'https://192.168.1.1/v.mp4',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/v.mp4',
      'https://[fd00::1]/v.mp4',
      'https://localhost/v.mp4',
      'http://example.com/v.mp4',
      'https://example.com:8443/v.mp4',
    ]) {
      it(`refuses ${url} with 400 INVALID_HTTPS_URL`, async () => {
        const res = await strict.request.post('/api/v1/videos/in/https').set('X-API-Key', su.apiKey).send({ name: 'x', url });
        expectError(res, 400, 'INVALID_HTTPS_URL');
      });
    }
  });

  describe('checksums, restart and abandon', () => {
    it('a crc32c that differs fails the copy with CHECKSUM_MISMATCH; a restart that skips the check completes it without copying again', async () => {
      const data = Buffer.alloc(9 * MIB, 5);
      const url = serve(data);
      const wrong = (crc32c(data) + 1) >>> 0;
      const res = await post(`/v1/videos/in/https?crc32c=${wrong}`, { name: 'Checked', url });
      const videoId = res.body.videoId;
      h.startWorker();
      await waitUpload(videoId, ['FAILED']);
      const failed = await status(videoId);
      assertStageError(failed.upload.uploadState.error, 'CHECKSUM_MISMATCH');
      assert.match(failed.upload.uploadState.error.message, /skipChecksumValidation/);
      assert.deepEqual(await events(videoId), ['video_in.started', 'video_in.failed']);
      assert.equal((await get(`/v1/videos/${videoId}`)).body.flags.isIngesting, false);

      const before = rangedRequests(url).length;
      const restarted = await post(`/v1/videos/${videoId}/in/restart?skipChecksumValidation=true`);
      assert.equal(restarted.status, 202, JSON.stringify(restarted.body));
      assert.equal(restarted.body.upload.uploadState.uploadStatus, 'IN_PROGRESS');
      assert.ok(!('error' in restarted.body.upload.uploadState));
      await waitUpload(videoId, ['DONE']);
      assert.equal(rangedRequests(url).length, before, 'the parts already copied are kept');
      assert.ok((await stored(videoId)).equals(data));
    });

    it('a restarted copy that still mismatches fails with VIDEO_IN_RESTART_CHECKSUM_MISMATCH', async () => {
      const data = Buffer.alloc(MIB, 5);
      const res = await post(`/v1/videos/in/https?crc32c=1`, { name: 'Checked', url: serve(data) });
      h.startWorker();
      await waitUpload(res.body.videoId, ['FAILED']);
      await post(`/v1/videos/${res.body.videoId}/in/restart`);
      await waitFor('second failure', async () => (await status(res.body.videoId)).upload.uploadState.error?.code === 'VIDEO_IN_RESTART_CHECKSUM_MISMATCH');
    });

    it('a source that changes during the copy fails it with SOURCE_CHANGED instead of mixing versions, said in the state and in video_in.failed', async () => {
      await subscribeWebhook(h, u, ['video_in.failed']);
      const url = serve(Buffer.alloc(24 * MIB, 2));
      server.modes.changeAfterRangedRequests = 1;
      const res = await post('/v1/videos/in/https?maxConcurrentConnections=1', { name: 'Changing', url });
      const videoId = res.body.videoId;
      h.startWorker();
      await waitUpload(videoId, ['FAILED']);
      const error = (await status(videoId)).upload.uploadState.error;
      assertStageError(error, 'SOURCE_CHANGED');
      assert.equal(error.code, 'SOURCE_CHANGED', '`code` repeats errorCode');
      assert.doesNotMatch(error.message, /127\.0\.0\.1|localhost|https?:/, 'no source address in the message');
      const [payload] = await deliveryPayloads(h, videoId);
      assert.equal(payload.eventType, 'video_in.failed');
      assert.deepEqual(payload.data.error, { errorCode: 'SOURCE_CHANGED', message: error.message });
    });

    it('a copy whose worker is lost on its last attempt is FAILED (COPY_FAILED), never left IN_PROGRESS, and a restart finishes it', async () => {
      const data = Buffer.alloc(MIB, 3);
      const res = await post('/v1/videos/in/https', { name: 'Orphan', url: serve(data) });
      const videoId = res.body.videoId;
      // As a worker that claimed the job for the last time and died: running, lease expired.
      await h.database.db('videos').where({ id: videoId }).update({ upload_status: 'IN_PROGRESS' });
      await h.database
        .db('jobs')
        .where({ kind: 'video-in.copy' })
        .update({
          status: 'running',
          attempts: h.database.db.ref('max_attempts'),
          lease_owner: 'dead-worker#1',
          lease_expires_at: new Date(h.clock.now().getTime() - 1000),
        });
      h.startWorker();
      await waitUpload(videoId, ['FAILED']);
      const failed = await status(videoId);
      assert.equal(failed.upload.uploadState.error.code, 'COPY_FAILED');
      assert.match(failed.upload.uploadState.error.message, /lost/);
      assert.deepEqual(await events(videoId), ['video_in.failed']);
      assert.equal((await h.database.db('jobs').where({ kind: 'video-in.copy' }).first()).status, 'failed');
      assert.equal((await post(`/v1/videos/${videoId}/in/restart`)).status, 202);
      await waitUpload(videoId, ['DONE']);
      assert.ok((await stored(videoId)).equals(data));
    });

    it('restart and abandon are 409 VIDEO_IN_OPERATION_NOT_FAILED unless the copy FAILED', async () => {
      const res = await post('/v1/videos/in/https', { name: 'Fine', url: serve(Buffer.alloc(100, 1)) });
      expectError(await post(`/v1/videos/${res.body.videoId}/in/restart`), 409, 'VIDEO_IN_OPERATION_NOT_FAILED');
      expectError(await h.request.delete(`/api/v1/videos/${res.body.videoId}/in/abandon`).set('X-API-Key', u.apiKey), 409, 'VIDEO_IN_OPERATION_NOT_FAILED');
      h.startWorker();
      await waitUpload(res.body.videoId, ['DONE']);
      expectError(await post(`/v1/videos/${res.body.videoId}/in/restart`), 409, 'VIDEO_IN_OPERATION_NOT_FAILED');
    });

    it('abandon of a FAILED copy deletes the video and the data copied so far (204)', async () => {
      const res = await post('/v1/videos/in/https?crc32c=7', { name: 'Doomed', url: serve(Buffer.alloc(9 * MIB, 4)) });
      const videoId = res.body.videoId;
      h.startWorker();
      await waitUpload(videoId, ['FAILED']);
      const del = await h.request.delete(`/api/v1/videos/${videoId}/in/abandon`).set('X-API-Key', u.apiKey);
      assert.equal(del.status, 204);
      expectError(await get(`/v1/videos/${videoId}`), 404, 'RESOURCE_NOT_FOUND');
      expectError(await get(`/v1/videos/${videoId}/in/status`), 404, 'RESOURCE_NOT_FOUND');
      assert.ok((await events(videoId)).includes('video.deleted'));
      await waitFor('purge', async () => (await h.database.db('jobs').where({ kind: 'video.purge-blobs', status: 'done' })).length === 1);
      assert.deepEqual(
        readdirDeep(path.join(h.blobDir)).filter((f) => f.includes(videoId)),
        [],
      );
    });

    it("status of another team's video, and of a video not made by video in, is 404", async () => {
      const res = await post('/v1/videos/in/https', { name: 'Mine', url: serve(Buffer.alloc(100, 1)) });
      const other = await h.user();
      expectError(await get(`/v1/videos/${res.body.videoId}/in/status`, other), 404, 'RESOURCE_NOT_FOUND');
      expectError(await post(`/v1/videos/${res.body.videoId}/in/restart`, undefined, other), 404, 'RESOURCE_NOT_FOUND');
    });
  });

  describe('createMasterVideoFromBucket and createMasterVideoFromBucketInputLocationId', () => {
    const bucket = () => ({ bucket: 'footage', accessKey: s3.credentials.accessKey, secretAccessKey: s3.credentials.secretAccessKey, endpoint: s3.endpoint, forcePathStyle: true });
    const putObject = async (key: string, data: Buffer) => {
      const client = s3.client();
      await client.send(new PutObjectCommand({ Bucket: 'footage', Key: key, Body: data }));
      client.destroy();
    };

    it('copies an object from a bucket given with its credentials', async () => {
      const data = Buffer.alloc(10 * MIB + 7, 6);
      await putObject('src/clip.mov', data);
      const res = await post('/v1/videos/in/bucket', { name: 'From bucket', objectKey: 'src/clip.mov', s3Bucket: bucket() });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.deepEqual([res.body.upload.file.name, res.body.upload.file.size, res.body.upload.file.containerName], ['clip.mov', data.length, 'QuickTime']);
      h.startWorker();
      await waitUpload(res.body.videoId, ['DONE']);
      assert.ok((await stored(res.body.videoId)).equals(data));
      const op = await h.database.db('video_in_operations').where({ video_id: res.body.videoId }).first();
      assert.ok(!String(op.sealed_bucket).includes(s3.credentials.secretAccessKey), 'credentials are sealed at rest');
    });

    it('copies an object through a saved input location', async () => {
      const data = Buffer.alloc(2 * MIB, 8);
      await putObject('in/loc.mp4', data);
      const loc = await post('/v1/input-locations/bucket', { name: 'Footage', ...bucket() });
      assert.equal(loc.status, 201, JSON.stringify(loc.body));
      const res = await post(`/v1/videos/in/bucket/${loc.body.id}`, { name: 'From location', objectKey: 'in/loc.mp4' });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      h.startWorker();
      await waitUpload(res.body.videoId, ['DONE']);
      assert.ok((await stored(res.body.videoId)).equals(data));
    });

    it('a missing bucket is 404 BUCKET_NOT_FOUND, a missing object 404 KEY_NOT_FOUND, wrong credentials 400 HEAD_BUCKET_ERROR', async () => {
      expectError(await post('/v1/videos/in/bucket', { name: 'x', objectKey: 'a.mp4', s3Bucket: { ...bucket(), bucket: 'nope-nope' } }), 404, 'BUCKET_NOT_FOUND');
      expectError(await post('/v1/videos/in/bucket', { name: 'x', objectKey: 'missing.mp4', s3Bucket: bucket() }), 404, 'KEY_NOT_FOUND');
      expectError(await post('/v1/videos/in/bucket', { name: 'x', objectKey: 'a.mp4', s3Bucket: { ...bucket(), secretAccessKey: 'wrong-secret' } }), 400, 'HEAD_BUCKET_ERROR');
    });

    it('an unknown input location is 404, an over-long object key 400', async () => {
      expectError(await post('/v1/videos/in/bucket/3fa85f64-5717-4562-b3fc-2c963f66afa6', { name: 'x', objectKey: 'a.mp4' }), 404, 'RESOURCE_NOT_FOUND');
      expectError(await post('/v1/videos/in/bucket', { name: 'x', objectKey: 'k'.repeat(1025), s3Bucket: bucket() }), 400, 'VALIDATION_ERROR');
    });
  });
});

function readdirDeep(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...readdirDeep(full).map((f) => path.join(name, f)));
    else out.push(full);
  }
  return out;
}
