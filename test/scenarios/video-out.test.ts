/**
 * Video out end to end: copies of stored videos to the local S3-compatible server (a bucket given
 * with its credentials, and a saved output location) read back byte for byte, every documented
 * 4xx, restart after a refused copy (resumes the same multipart upload), abandon (aborts it),
 * a copy whose worker died after completing it, the give-up of a lost worker, download URLs
 * (ranges, expiry, tampering) and the billing rows of both kinds of download.
 *
 * Stored videos are written directly (test/helpers/stored-video.ts), as video in and processing
 * leave them.
 */
import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { GetObjectCommand, ListMultipartUploadsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { crc32c } from '../../src/net/crc32c';
import { choosePartSize, MIB } from '../../src/storage/blob-store';
import { S3BlobStore, S3Upload } from '../../src/storage/s3-blob-store';
import { classify, lanesFor, objectKeyFor } from '../../src/features/video-out/testing';
import { findVideo, OperationStatus } from '../../src/features/videos';
import { CopyFailedError } from '../../src/storage/copy-engine';
import { TEST_DIALECT } from '../helpers/database';
import { assertStageError, createHarness, deliveryPayloads, expectError, Harness, subscribeWebhook, TestUser, withTamperedSignature } from '../helpers/harness';
import { apiRequests, waitFor } from '../helpers/scenario';
import { LocalS3, randomKeyPair, S3KeyPair, startLocalS3 } from '../helpers/s3-server';
import { storedVideo as storeVideo, StoredVideoOptions } from '../helpers/stored-video';
import { scaled } from '../helpers/timeouts';

const BUCKET = 'deliveries';
/** Three parts of 8 MiB (the last one short). */
const DATA = randomBytes(20 * MIB + 123);

describe(`Video out (${TEST_DIALECT})`, function () {
  this.timeout(scaled(60_000));
  let s3: LocalS3;
  let keys: S3KeyPair;
  let rotated: S3KeyPair;
  let h: Harness;
  let u: TestUser;

  const db = () => h.database.db;
  const { get, post, del } = apiRequests(
    () => h,
    () => u,
  );
  const bucket = (overrides: Record<string, unknown> = {}) => ({
    bucket: BUCKET,
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    accessKey: keys.accessKey,
    secretAccessKey: keys.secretAccessKey,
    ...overrides,
  });
  const copy = (videoId: string, objectKeyPrefix: string, user: TestUser = u, s3Bucket: object = bucket()) => post(`/v1/videos/${videoId}/out/bucket`, { s3Bucket, objectKeyPrefix }, user);
  const outputStatus = async (videoId: string) => (await findVideo(db(), videoId))?.output?.status;
  const waitOutput = (videoId: string, want: OperationStatus[]) =>
    waitFor(`output ${want.join('/')}`, async () => {
      const s = await outputStatus(videoId);
      return s && want.includes(s) ? s : undefined;
    });
  const events = async (videoId: string) =>
    (
      await db()('webhook_events')
        .orderBy([{ column: 'occurred_at' }, { column: 'created_at' }])
        .select('event_type', 'data')
    )
      .filter((r: any) => JSON.parse(r.data).videoId === videoId)
      .map((r: any) => r.event_type as string);
  const readObject = async (key: string) => {
    const client = s3.client();
    try {
      const out = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      return { data: Buffer.from(await out.Body!.transformToByteArray()), contentType: out.ContentType };
    } finally {
      client.destroy();
    }
  };
  const putObject = async (key: string, data: Buffer) => {
    const client = s3.client();
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: data }));
    client.destroy();
  };
  const openUploads = async (prefix = '') => {
    const client = s3.client();
    try {
      const out = await client.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: prefix }));
      return (out.Uploads ?? []).map((x) => x.Key);
    } finally {
      client.destroy();
    }
  };
  /** UploadPart requests the store accepted (or refused) for keys under `prefix`, as part numbers. */
  const uploadParts = (prefix: string, from = 0) =>
    s3.requests
      .slice(from)
      .filter((r) => r.method === 'PUT' && r.url.startsWith(`/${BUCKET}/${prefix}`) && /[?&]uploadId=/.test(r.url))
      .map((r) => ({ part: Number(/partNumber=(\d+)/.exec(r.url)?.[1]), refused: r.refusedWith }));
  const jobsDone = (kind: string, n = 1) => waitFor(`${n} ${kind} job(s) done`, async () => (await db()('jobs').where({ kind, status: 'done' })).length >= n);

  /** A stored video of the user (default: `u`, DATA): a master copied in (upload DONE), or a clip whose processing is `stage`. */
  const storedVideo = ({ user, ...opts }: StoredVideoOptions & { user?: TestUser } = {}) => storeVideo(h, user ?? u, { data: DATA, ...opts });

  before(async () => {
    keys = randomKeyPair();
    rotated = randomKeyPair();
    s3 = await startLocalS3({ buckets: [BUCKET, 'platform'], keyPairs: [keys, rotated] });
  });
  after(async () => {
    await s3.close();
  });
  /** Platform storage of the harness: local disk, or S3 (the local S3 server's `platform` bucket) for tests that say so. */
  const s3Platform = () => new S3BlobStore({ bucket: 'platform', endpoint: s3.endpoint, region: s3.region, accessKey: keys.accessKey, secretKey: keys.secretAccessKey, forcePathStyle: true });
  beforeEach(async function () {
    s3.refuse = undefined;
    // The local S3 server is on 127.0.0.1: private addresses allowed (test/scenarios/outbound-guard.test.ts covers the default).
    h = await createHarness({ allowPrivateUrls: true }, { blobs: /\[S3 platform storage\]/.test(this.currentTest?.title ?? '') ? s3Platform() : undefined });
    u = await h.user();
  });
  afterEach(async () => {
    await h.close();
  });

  describe('copyVideoDataToBucket', () => {
    it('answers 202 INITIAL, then copies the stored master by multipart upload, byte for byte, with events and a DOWNLOAD_S3 billing row', async () => {
      const videoId = await storedVideo();
      const prefix = `copies/${randomUUID()}`;
      const res = await copy(videoId, prefix);
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.deepEqual(res.body.videoId, videoId);
      assert.equal(res.body.output.state.status, 'INITIAL');
      assert.equal(res.body.output.state.progressPercentage, 0);
      assert.equal((await get(`/v1/videos/${videoId}`)).body.output.state.status, 'INITIAL');

      const op = await db()('video_out_operations').where({ video_id: videoId }).first();
      assert.equal(op.object_key, `${prefix}/beach.mp4`);
      assert.ok(!String(op.sealed_bucket).includes(keys.secretAccessKey), 'credentials are sealed at rest');
      assert.equal((await db()('jobs').where({ kind: 'video-out.copy' })).length, 1);

      h.startWorker();
      await waitOutput(videoId, ['DONE']);
      const object = await readObject(`${prefix}/beach.mp4`);
      assert.ok(object.data.equals(DATA), 'the object is the stored file');
      assert.equal(object.contentType, 'video/mp4');
      const status = await get(`/v1/videos/${videoId}/out/status`);
      assert.equal(status.status, 200);
      assert.deepEqual({ ...status.body.output.state, updatedAt: undefined }, { status: 'DONE', progressPercentage: 100, etaSeconds: 0, updatedAt: undefined });
      assert.equal((await get(`/v1/videos/${videoId}`)).body.output.state.status, 'DONE');
      assert.deepEqual(await events(videoId), ['video_out.started', 'video_out.done']);
      assert.deepEqual(
        uploadParts(prefix)
          .map((p) => p.part)
          .sort(),
        [1, 2, 3],
        'three 8 MiB parts',
      );
      assert.deepEqual(await openUploads(prefix), [], 'no unfinished upload is left');
      assert.equal((await db()('video_out_parts').where({ video_id: videoId })).length, 0);

      await jobsDone('video-out.bill');
      const rows = await db()('ledger_transactions').where({ team_id: u.teamId, category: 'DOWNLOAD_S3' });
      assert.equal(rows.length, 1);
      assert.equal(rows[0].job_id, `video-out:${op.id}`);
      assert.equal(rows[0].video_id, videoId);
      assert.equal(JSON.parse(rows[0].products)[0].amount, DATA.length / 1e9);
    });

    it('names the object prefix + "/" + file name, without a doubled "/" and without a prefix when it is empty', async () => {
      assert.equal(objectKeyFor('myoutputs', 'myvideo.mp4'), 'myoutputs/myvideo.mp4');
      assert.equal(objectKeyFor('myoutputs/', 'myvideo.mp4'), 'myoutputs/myvideo.mp4');
      assert.equal(objectKeyFor('', 'myvideo.mp4'), 'myvideo.mp4');
      const small = randomBytes(1000);
      const name = `root-${randomUUID()}.mov`;
      const videoId = await storedVideo({ data: small, fileName: name });
      assert.equal((await copy(videoId, '')).status, 202);
      const other = await storedVideo({ data: small, fileName: 'x.mov' });
      const prefix = `slash-${randomUUID()}/`;
      assert.equal((await copy(other, prefix)).status, 202);
      h.startWorker();
      await waitOutput(videoId, ['DONE']);
      await waitOutput(other, ['DONE']);
      assert.ok((await readObject(name)).data.equals(small));
      assert.ok((await readObject(`${prefix}x.mov`)).data.equals(small));
    });

    it('copies a clip whose processing is DONE, and a second time once the first copy is DONE', async () => {
      const clip = await storedVideo({ kind: 'CLIP', data: randomBytes(5000) });
      const prefix = `clips/${randomUUID()}`;
      assert.equal((await copy(clip, prefix)).status, 202);
      h.startWorker();
      await waitOutput(clip, ['DONE']);
      const again = await copy(clip, `${prefix}/again`);
      assert.equal(again.status, 202, JSON.stringify(again.body));
      await waitFor('second copy done', async () => (await events(clip)).length === 4);
      assert.deepEqual(await events(clip), ['video_out.started', 'video_out.done', 'video_out.started', 'video_out.done']);
      assert.equal((await readObject(`${prefix}/again/beach.mp4`)).data.length, 5000);
    });

    it('[S3 platform storage] copies a file stored on S3 (ranged GetObject) and serves its download URL', async () => {
      assert.equal(h.services.blobs.kind, 's3');
      const videoId = await storedVideo();
      const prefix = `from-s3/${randomUUID()}`;
      assert.equal((await copy(videoId, prefix)).status, 202);
      h.startWorker();
      await waitOutput(videoId, ['DONE']);
      assert.ok((await readObject(`${prefix}/beach.mp4`)).data.equals(DATA));
      const ranged = s3.requests.filter((r) => r.method === 'GET' && r.url.startsWith(`/platform/videos/${videoId}/file`));
      assert.equal(ranged.length, 3, 'one ranged GetObject per part');
      const link = new URL((await post(`/v1/videos/${videoId}/out/https`)).body.presignedUrl);
      const part = await h.request
        .get(link.pathname + link.search)
        .set('Range', 'bytes=8388600-8388615')
        .buffer(true);
      assert.equal(part.status, 206);
      assert.equal(part.headers['content-range'], `bytes 8388600-8388615/${DATA.length}`);
    });

    it('a bucket endpoint that cannot be reached is VIDEO_OUT_BUCKET_UNREACHABLE (retried first); other failures COPY_FAILED', () => {
      const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:9000'), { code: 'ECONNREFUSED' });
      const failure = classify(new CopyFailedError('part 2 failed after 5 attempts', refused));
      assert.deepEqual([failure.error.code, failure.transient], ['VIDEO_OUT_BUCKET_UNREACHABLE', true]);
      assertStageError({ errorCode: failure.error.code, message: failure.error.message }, 'VIDEO_OUT_BUCKET_UNREACHABLE');
      assert.doesNotMatch(failure.error.message, /10\.0\.0\.7|ECONNREFUSED/);
      const lookup = new AggregateError([Object.assign(new Error('getaddrinfo ENOTFOUND s3.internal'), { code: 'ENOTFOUND' })]);
      assert.equal(classify(lookup).error.code, 'VIDEO_OUT_BUCKET_UNREACHABLE');
      assert.equal(classify(new Error('InternalError: We encountered an internal error')).error.code, 'COPY_FAILED');
    });

    it('parts in flight are bounded by a memory budget', () => {
      assert.equal(lanesFor(choosePartSize(DATA.length)), 8);
      assert.equal(lanesFor(64 * MIB), 2);
      assert.equal(lanesFor(5 * 1024 * MIB), 1);
    });
  });

  describe('copyVideoDataToBucketOutputLocationId', () => {
    it('copies to the bucket of a saved output location with its stored credentials', async () => {
      const loc = await post('/v1/output-locations/bucket', { name: 'Deliveries', ...bucket() });
      assert.equal(loc.status, 201, JSON.stringify(loc.body));
      const videoId = await storedVideo();
      const prefix = `loc/${randomUUID()}`;
      const res = await post(`/v1/videos/${videoId}/out/bucket/${loc.body.id}`, { objectKeyPrefix: prefix });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      h.startWorker();
      await waitOutput(videoId, ['DONE']);
      assert.ok((await readObject(`${prefix}/beach.mp4`)).data.equals(DATA));
      const op = await db()('video_out_operations').where({ video_id: videoId }).first();
      assert.equal(op.target_kind, 'OUTPUT_LOCATION');
      assert.equal(op.output_location_id, loc.body.id);
    });

    it('an unknown output location, or one of another team, is 404', async () => {
      const videoId = await storedVideo();
      expectError(await post(`/v1/videos/${videoId}/out/bucket/${randomUUID()}`, { objectKeyPrefix: 'x' }), 404, 'RESOURCE_NOT_FOUND');
      const other = await h.user();
      const theirs = await post('/v1/output-locations/bucket', { name: 'Theirs', ...bucket() }, other);
      assert.equal(theirs.status, 201);
      expectError(await post(`/v1/videos/${videoId}/out/bucket/${theirs.body.id}`, { objectKeyPrefix: 'x' }), 404, 'RESOURCE_NOT_FOUND');
      expectError(await post(`/v1/videos/${videoId}/out/bucket/${theirs.body.id}`, { objectKeyPrefix: 'x' }, other), 404, 'RESOURCE_NOT_FOUND');
    });
  });

  describe('answers before anything is written', () => {
    const noOperation = async (videoId: string) => {
      assert.equal(await db()('video_out_operations').where({ video_id: videoId }).first(), undefined);
      assert.equal((await db()('jobs').where({ kind: 'video-out.copy' })).length, 0);
    };

    it('404 for an unknown video and for a video of another team', async () => {
      expectError(await copy(randomUUID(), 'x'), 404, 'RESOURCE_NOT_FOUND');
      const other = await h.user();
      const theirs = await storedVideo({ user: other });
      expectError(await copy(theirs, 'x'), 404, 'RESOURCE_NOT_FOUND');
      expectError(await get(`/v1/videos/${theirs}/out/status`), 404, 'RESOURCE_NOT_FOUND');
      expectError(await post(`/v1/videos/${theirs}/out/restart`), 404, 'RESOURCE_NOT_FOUND');
      expectError(await del(`/v1/videos/${theirs}/out/abandon`), 404, 'RESOURCE_NOT_FOUND');
      expectError(await post(`/v1/videos/${theirs}/out/https`), 404, 'RESOURCE_NOT_FOUND');
      await noOperation(theirs);
    });

    it('409 VIDEO_PROCESSING_NOT_DONE for a master still being copied in and a clip still being cut (copy and download URL)', async () => {
      const copying = await storedVideo({ stage: 'IN_PROGRESS' });
      expectError(await copy(copying, 'x'), 409, 'VIDEO_PROCESSING_NOT_DONE');
      expectError(await post(`/v1/videos/${copying}/out/https`), 409, 'VIDEO_PROCESSING_NOT_DONE');
      const failed = await storedVideo({ stage: 'FAILED' });
      expectError(await copy(failed, 'x'), 409, 'VIDEO_PROCESSING_NOT_DONE');
      const cutting = await storedVideo({ kind: 'CLIP', stage: 'IN_PROGRESS' });
      expectError(await copy(cutting, 'x'), 409, 'VIDEO_PROCESSING_NOT_DONE');
      expectError(await post(`/v1/videos/${cutting}/out/https`), 409, 'VIDEO_PROCESSING_NOT_DONE');
      await noOperation(copying);
      await noOperation(cutting);
    });

    it('409 VIDEO_ALREADY_BEING_COPIED_TO_OUTPUT_LOCATION while another copy of the video runs', async () => {
      const videoId = await storedVideo();
      assert.equal((await copy(videoId, `a/${randomUUID()}`)).status, 202);
      expectError(await copy(videoId, `b/${randomUUID()}`), 409, 'VIDEO_ALREADY_BEING_COPIED_TO_OUTPUT_LOCATION');
      await db()('videos').where({ id: videoId }).update({ output_status: 'IN_PROGRESS' });
      expectError(await copy(videoId, `b/${randomUUID()}`), 409, 'VIDEO_ALREADY_BEING_COPIED_TO_OUTPUT_LOCATION');
      assert.equal((await db()('jobs').where({ kind: 'video-out.copy' })).length, 1);
    });

    it('409 OBJECT_ALREADY_EXISTS when the target key holds an object', async () => {
      const videoId = await storedVideo();
      const prefix = `taken/${randomUUID()}`;
      await putObject(`${prefix}/beach.mp4`, Buffer.from('someone else'));
      expectError(await copy(videoId, prefix), 409, 'OBJECT_ALREADY_EXISTS');
      assert.equal((await readObject(`${prefix}/beach.mp4`)).data.toString(), 'someone else');
      await noOperation(videoId);
    });

    it('404 BUCKET_NOT_FOUND, 400 HEAD_BUCKET_ERROR for refused credentials, 400 HEAD_OBJECT_ERROR when HeadObject is refused', async () => {
      const videoId = await storedVideo();
      expectError(await copy(videoId, 'x', u, bucket({ bucket: 'no-such-bucket' })), 404, 'BUCKET_NOT_FOUND');
      const wrong = await copy(videoId, 'x', u, bucket({ secretAccessKey: 'wrong-secret-key' }));
      expectError(wrong, 400, 'HEAD_BUCKET_ERROR');
      assert.doesNotMatch(wrong.text, /wrong-secret-key/);
      s3.refuse = (r) => r.method === 'HEAD' && r.url.includes('/refused/');
      expectError(await copy(videoId, 'refused', u), 400, 'HEAD_OBJECT_ERROR');
      await noOperation(videoId);
    });

    it('400 for an object key over 1024 bytes and for a body that breaks the contract', async () => {
      const videoId = await storedVideo();
      expectError(await copy(videoId, 'p'.repeat(1020)), 400, 'INVALID_INPUT');
      expectError(await post(`/v1/videos/${videoId}/out/bucket`, { objectKeyPrefix: 'x' }), 400, 'VALIDATION_ERROR');
      expectError(await post(`/v1/videos/${videoId}/out/bucket`, { s3Bucket: bucket(), objectKeyPrefix: 'x', fileName: 'y.mp4' }), 400, 'VALIDATION_ERROR');
      await noOperation(videoId);
    });
  });

  describe('failure, restart and abandon', () => {
    /** Refuses UploadPart of part `n` under `prefix` (signed with `accessKey`, when given). */
    const refusePart = (prefix: string, n: number, accessKey?: string) => {
      s3.refuse = (r) => r.method === 'PUT' && r.url.startsWith(`/${BUCKET}/${prefix}`) && new RegExp(`[?&]partNumber=${n}(&|$)`).test(r.url) && (!accessKey || r.accessKey === accessKey);
    };

    it('a bucket that refuses a part fails the copy (FAILED, error, video_out.failed with the error); a restart resumes the same upload and sends only that part', async () => {
      await subscribeWebhook(h, u, ['video_out.failed', 'video_out.done']);
      const videoId = await storedVideo();
      const prefix = `restart/${randomUUID()}`;
      refusePart(prefix, 2);
      assert.equal((await copy(videoId, prefix)).status, 202);
      h.startWorker();
      await waitOutput(videoId, ['FAILED']);
      const failed = (await get(`/v1/videos/${videoId}/out/status`)).body.output.state;
      assert.equal(failed.status, 'FAILED');
      assertStageError(failed.error, 'OUTPUT_ACCESS_DENIED');
      assert.doesNotMatch(failed.error.message, /127\.0\.0\.1|localhost|https?:|AccessDenied/, 'no endpoint or S3 error text in the message');
      assert.equal(failed.errorMessage, `OUTPUT_ACCESS_DENIED: ${failed.error.message}`);
      assert.match(failed.errorMessage, /^OUTPUT_ACCESS_DENIED: .*refused/);
      assert.deepEqual((await get(`/v1/videos/${videoId}`)).body.output.state.error, failed.error);
      assert.deepEqual(await events(videoId), ['video_out.started', 'video_out.failed']);
      const [payload] = await deliveryPayloads(h, videoId);
      assert.equal(payload.eventType, 'video_out.failed');
      assert.deepEqual(payload.data.error, failed.error);
      assert.deepEqual(await openUploads(prefix), [`${prefix}/beach.mp4`], 'the upload is kept for a restart');
      const sent = uploadParts(prefix)
        .filter((p) => !p.refused)
        .map((p) => p.part)
        .sort();
      assert.deepEqual(sent, [1, 3]);

      expectError(await copy(videoId, `other/${randomUUID()}`), 409, 'ONGOING_COPY_TO_OUTPUT_NEEDS_TO_BE_RESTARTED_OR_ABANDONED');

      s3.refuse = undefined;
      const mark = s3.requests.length;
      const restarted = await post(`/v1/videos/${videoId}/out/restart`);
      assert.equal(restarted.status, 202, JSON.stringify(restarted.body));
      assert.equal(restarted.body.output.state.status, 'IN_PROGRESS');
      assert.ok(!('errorMessage' in restarted.body.output.state) && !('error' in restarted.body.output.state));
      await waitOutput(videoId, ['DONE']);
      assert.deepEqual(
        uploadParts(prefix, mark).map((p) => p.part),
        [2],
        'only the missing part is sent again',
      );
      assert.ok(
        s3.requests.slice(mark).some((r) => r.method === 'GET' && /[?&]uploadId=/.test(r.url)),
        'ListParts asked what was stored',
      );
      assert.ok((await readObject(`${prefix}/beach.mp4`)).data.equals(DATA));
      assert.deepEqual(await events(videoId), ['video_out.started', 'video_out.failed', 'video_out.done']);
      assert.deepEqual(await openUploads(prefix), []);
    });

    it('a copy to an output location whose credentials were revoked is repaired by patching the location and restarting', async () => {
      const loc = await post('/v1/output-locations/bucket', { name: 'Deliveries', ...bucket() });
      const videoId = await storedVideo();
      const prefix = `rotate/${randomUUID()}`;
      refusePart(prefix, 3, keys.accessKey);
      assert.equal((await post(`/v1/videos/${videoId}/out/bucket/${loc.body.id}`, { objectKeyPrefix: prefix })).status, 202);
      h.startWorker();
      await waitOutput(videoId, ['FAILED']);
      const patched = await h.request
        .patch(`/api/v1/output-locations/bucket/${loc.body.id}`)
        .set('X-API-Key', u.apiKey)
        .send({ accessKey: rotated.accessKey, secretAccessKey: rotated.secretAccessKey });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      const mark = s3.requests.length;
      assert.equal((await post(`/v1/videos/${videoId}/out/restart`)).status, 202);
      await waitOutput(videoId, ['DONE']);
      assert.deepEqual(
        uploadParts(prefix, mark).map((p) => p.part),
        [3],
      );
      assert.ok((await readObject(`${prefix}/beach.mp4`)).data.equals(DATA));
    });

    it('restart and abandon are 409 VIDEO_OUT_OPERATION_NOT_FAILED unless the copy FAILED', async () => {
      const videoId = await storedVideo({ data: randomBytes(100) });
      expectError(await post(`/v1/videos/${videoId}/out/restart`), 409, 'VIDEO_OUT_OPERATION_NOT_FAILED');
      expectError(await del(`/v1/videos/${videoId}/out/abandon`), 409, 'VIDEO_OUT_OPERATION_NOT_FAILED');
      const none = await get(`/v1/videos/${videoId}/out/status`);
      assert.deepEqual(none.body, { videoId, output: {} }, 'a video never copied out has an empty output');
      assert.ok(!('output' in (await get(`/v1/videos/${videoId}`)).body));
      assert.equal((await copy(videoId, `fine/${randomUUID()}`)).status, 202);
      expectError(await post(`/v1/videos/${videoId}/out/restart`), 409, 'VIDEO_OUT_OPERATION_NOT_FAILED');
      expectError(await del(`/v1/videos/${videoId}/out/abandon`), 409, 'VIDEO_OUT_OPERATION_NOT_FAILED');
      h.startWorker();
      await waitOutput(videoId, ['DONE']);
      expectError(await post(`/v1/videos/${videoId}/out/restart`), 409, 'VIDEO_OUT_OPERATION_NOT_FAILED');
      expectError(await del(`/v1/videos/${videoId}/out/abandon`), 409, 'VIDEO_OUT_OPERATION_NOT_FAILED');
    });

    it('abandon of a FAILED copy aborts its multipart upload (the bucket keeps no parts) and clears the output state', async () => {
      const videoId = await storedVideo();
      const prefix = `abandon/${randomUUID()}`;
      refusePart(prefix, 1);
      assert.equal((await copy(videoId, prefix)).status, 202);
      h.startWorker();
      await waitOutput(videoId, ['FAILED']);
      assert.deepEqual(await openUploads(prefix), [`${prefix}/beach.mp4`]);

      const res = await del(`/v1/videos/${videoId}/out/abandon`);
      assert.equal(res.status, 204);
      assert.deepEqual((await get(`/v1/videos/${videoId}/out/status`)).body, { videoId, output: {} });
      assert.ok(!('output' in (await get(`/v1/videos/${videoId}`)).body));
      assert.equal(await db()('video_out_operations').where({ video_id: videoId }).first(), undefined);
      await jobsDone('video-out.abort-upload');
      assert.deepEqual(await openUploads(prefix), [], 'ListMultipartUploads shows none');
      expectError(await post(`/v1/videos/${videoId}/out/restart`), 409, 'VIDEO_OUT_OPERATION_NOT_FAILED');

      s3.refuse = undefined;
      assert.equal((await copy(videoId, prefix)).status, 202, 'a new copy may start');
      await waitOutput(videoId, ['DONE']);
      assert.ok((await readObject(`${prefix}/beach.mp4`)).data.equals(DATA));
    });

    it("deleting a video whose copy failed aborts the copy's multipart upload too", async () => {
      const videoId = await storedVideo();
      const prefix = `deleted/${randomUUID()}`;
      refusePart(prefix, 2);
      await copy(videoId, prefix);
      h.startWorker();
      await waitOutput(videoId, ['FAILED']);
      assert.equal((await del(`/v1/videos/${videoId}`)).status, 200);
      await jobsDone('video-out.abort-upload');
      assert.deepEqual(await openUploads(prefix), []);
      assert.equal(await db()('video_out_operations').where({ video_id: videoId }).first(), undefined);
    });

    it('a CRC-32C that differs from the stored one fails with CHECKSUM_MISMATCH and completes nothing in the bucket', async () => {
      const videoId = await storedVideo({ crc: (crc32c(DATA) + 1) >>> 0 });
      const prefix = `crc/${randomUUID()}`;
      await copy(videoId, prefix);
      h.startWorker();
      await waitOutput(videoId, ['FAILED']);
      assert.match((await get(`/v1/videos/${videoId}/out/status`)).body.output.state.errorMessage, /^CHECKSUM_MISMATCH/);
      const client = s3.client();
      await assert.rejects(client.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${prefix}/beach.mp4` })), (e: any) => e.name === 'NoSuchKey');
      client.destroy();
    });

    it('a copy whose worker is lost on its last attempt is FAILED (COPY_FAILED), never left IN_PROGRESS, and a restart finishes it', async () => {
      const videoId = await storedVideo({ data: randomBytes(2000) });
      const prefix = `orphan/${randomUUID()}`;
      await copy(videoId, prefix);
      await db()('videos').where({ id: videoId }).update({ output_status: 'IN_PROGRESS' });
      await db()('jobs')
        .where({ kind: 'video-out.copy' })
        .update({
          status: 'running',
          attempts: db().ref('max_attempts'),
          lease_owner: 'dead-worker#1',
          lease_expires_at: new Date(h.clock.now().getTime() - 1000),
        });
      h.startWorker();
      await waitOutput(videoId, ['FAILED']);
      assert.match((await get(`/v1/videos/${videoId}/out/status`)).body.output.state.errorMessage, /^COPY_FAILED: .*lost/);
      assert.deepEqual(await events(videoId), ['video_out.failed']);
      assert.equal((await post(`/v1/videos/${videoId}/out/restart`)).status, 202);
      await waitOutput(videoId, ['DONE']);
      assert.equal((await readObject(`${prefix}/beach.mp4`)).data.length, 2000);
    });

    it('a worker that died after CompleteMultipartUpload leaves a job that finds the object complete and records DONE without sending anything', async () => {
      const data = randomBytes(11 * MIB);
      const videoId = await storedVideo({ data });
      const prefix = `completed/${randomUUID()}`;
      await copy(videoId, prefix);
      const op = await db()('video_out_operations').where({ video_id: videoId }).first();
      // What the dead run left: the upload recorded, every part's CRC recorded, the upload completed.
      const client = s3.client();
      const partSize = choosePartSize(data.length);
      const { CreateMultipartUploadCommand } = await import('@aws-sdk/client-s3');
      const created = await client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: op.object_key }));
      const descriptor = { store: 's3' as const, id: created.UploadId!, key: op.object_key, size: data.length, partSize };
      const upload = new S3Upload({ client, bucket: BUCKET }, descriptor);
      for (let n = 1; n <= upload.partCount; n++) {
        const { start, end } = upload.partRange(n);
        await upload.writePart(n, data.subarray(start, end));
        await db()('video_out_parts').insert({ video_id: videoId, part_number: n, crc32c: crc32c(data.subarray(start, end)) });
      }
      await upload.complete();
      client.destroy();
      await db()('video_out_operations')
        .where({ video_id: videoId })
        .update({ upload_json: JSON.stringify(descriptor) });
      await db()('videos').where({ id: videoId }).update({ output_status: 'IN_PROGRESS' });

      const mark = s3.requests.length;
      h.startWorker();
      await waitOutput(videoId, ['DONE']);
      assert.deepEqual(uploadParts(prefix, mark), [], 'no part is sent again');
      assert.ok((await readObject(op.object_key)).data.equals(data));
      assert.deepEqual(await events(videoId), ['video_out.done']);
    });
  });

  describe('generateVideoDownloadUrl', () => {
    const fetchLink = (url: string, headers: Record<string, string> = {}, method: 'get' | 'head' = 'get') => {
      const u = new URL(url);
      let req = h.request[method](u.pathname + u.search)
        .buffer(true)
        .parse((res, done) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const body = Buffer.concat(chunks);
            done(null, /json/.test(String(res.headers['content-type'])) ? JSON.parse(body.toString() || 'null') : body);
          });
        });
      for (const [k, v] of Object.entries(headers)) req = req.set(k, v);
      return req;
    };

    it('answers a signed URL with size, MIME type, extension, file name and CRC-32C; the URL serves the file with ranges and no API key', async () => {
      const videoId = await storedVideo({ fileName: 'Beach Sunset.mp4' });
      const res = await post(`/v1/videos/${videoId}/out/https`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const expiresAt = new Date(Math.floor((h.clock.now().getTime() + 15 * 60_000) / 1000) * 1000).toISOString();
      assert.deepEqual(
        { ...res.body, presignedUrl: undefined },
        {
          videoId,
          presignedUrl: undefined,
          expiresAt,
          fileSize: DATA.length,
          mimeType: 'video/mp4',
          fileExtension: 'mp4',
          suggestedFileName: 'Beach Sunset.mp4',
          crc32cChecksum: crc32c(DATA),
        },
      );
      assert.match(res.body.presignedUrl, new RegExp(`/media/v1/videos/${videoId}/download\\?expires=\\d+&signature=`));

      const whole = await fetchLink(res.body.presignedUrl);
      assert.equal(whole.status, 200);
      assert.ok((whole.body as Buffer).equals(DATA));
      assert.equal(whole.headers['content-type'], 'video/mp4');
      assert.equal(whole.headers['accept-ranges'], 'bytes');
      assert.equal(whole.headers['content-disposition'], 'attachment; filename="Beach Sunset.mp4"');
      assert.ok(whole.headers.etag);

      const part = await fetchLink(res.body.presignedUrl, { Range: 'bytes=1000-1999' });
      assert.equal(part.status, 206);
      assert.equal(part.headers['content-range'], `bytes 1000-1999/${DATA.length}`);
      assert.ok((part.body as Buffer).equals(DATA.subarray(1000, 2000)));
      const tail = await fetchLink(res.body.presignedUrl, { Range: 'bytes=-10' });
      assert.equal(tail.status, 206);
      assert.ok((tail.body as Buffer).equals(DATA.subarray(DATA.length - 10)));
      assert.equal((await fetchLink(res.body.presignedUrl, { Range: `bytes=${DATA.length}-` })).status, 416);
      const head = await fetchLink(res.body.presignedUrl, {}, 'head');
      assert.equal(head.status, 200);
      assert.equal(head.headers['content-length'], String(DATA.length));
    });

    it('expires after durationMinutes (by the injected clock), and rejects a tampered signature, expiry or video id', async () => {
      const videoId = await storedVideo({ data: randomBytes(500) });
      const res = await post(`/v1/videos/${videoId}/out/https?durationMinutes=1`);
      assert.equal(res.status, 200);
      assert.equal(Date.parse(res.body.expiresAt), Math.floor((h.clock.now().getTime() + 60_000) / 1000) * 1000);
      const url = new URL(res.body.presignedUrl);
      assert.equal((await fetchLink(url.href)).status, 200);

      expectError(await fetchLink(withTamperedSignature(url.href)), 403, 'ACCESS_DENIED');
      const later = new URL(url.href);
      later.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
      expectError(await fetchLink(later.href), 403, 'ACCESS_DENIED');
      const other = await storedVideo({ data: randomBytes(500) });
      expectError(await fetchLink(url.href.replace(videoId, other)), 403, 'ACCESS_DENIED');
      expectError(await fetchLink(url.href.replace(/signature=[^&]*/, '')), 403, 'ACCESS_DENIED');

      h.clock.advance(61_000);
      const expired = await fetchLink(url.href);
      expectError(expired, 403, 'ACCESS_DENIED');
      assert.match(expired.body.message, /expired/);
    });

    it('durationMinutes outside 1..60 is 400; a URL of a deleted video is 404', async () => {
      const videoId = await storedVideo({ data: randomBytes(500) });
      expectError(await post(`/v1/videos/${videoId}/out/https?durationMinutes=0`), 400, 'VALIDATION_ERROR');
      expectError(await post(`/v1/videos/${videoId}/out/https?durationMinutes=61`), 400, 'VALIDATION_ERROR');
      const res = await post(`/v1/videos/${videoId}/out/https?durationMinutes=60`);
      assert.equal(res.status, 200);
      assert.equal((await del(`/v1/videos/${videoId}`)).status, 200);
      expectError(await fetchLink(res.body.presignedUrl), 404, 'NOT_FOUND');
    });

    it('bytes served accrue as DOWNLOAD_HTTPS: recorded per response by bytes sent, billed once per batch', async () => {
      const videoId = await storedVideo();
      const url = (await post(`/v1/videos/${videoId}/out/https`)).body.presignedUrl;
      await fetchLink(url);
      await fetchLink(url, { Range: 'bytes=0-999' });
      await fetchLink(url, {}, 'head');
      // The row is written once the response has gone out, so the client may see the end first.
      const usage = await waitFor('usage rows', async () => {
        const rows = await db()('video_download_usage').where({ video_id: videoId }).orderBy('bytes', 'desc');
        return rows.length >= 2 && rows;
      });
      assert.deepEqual(
        usage.map((r: any) => Number(r.bytes)),
        [DATA.length, 1000],
        'one row per response with a body',
      );

      assert.deepEqual(await h.services.videoOut.billDownloads(), { batches: 1, bytes: DATA.length + 1000 });
      const rows = await db()('ledger_transactions').where({ team_id: u.teamId, category: 'DOWNLOAD_HTTPS' });
      assert.equal(rows.length, 1);
      assert.equal(rows[0].video_id, videoId);
      assert.equal(JSON.parse(rows[0].products)[0].amount, (DATA.length + 1000) / 1e9);
      assert.deepEqual(await h.services.videoOut.billDownloads(), { batches: 0, bytes: 0 }, 'nothing is billed twice');

      // A run that died between the ledger entry and marking its batch bills nothing twice either.
      await db()('video_download_usage').where({ video_id: videoId }).update({ billed_at: null });
      await h.services.videoOut.billDownloads();
      assert.equal((await db()('ledger_transactions').where({ team_id: u.teamId, category: 'DOWNLOAD_HTTPS' })).length, 1);

      await fetchLink(url, { Range: 'bytes=0-99' });
      await waitFor('third usage row', async () => (await db()('video_download_usage').where({ video_id: videoId })).length === 3);
      assert.deepEqual(await h.services.videoOut.billDownloads(), { batches: 1, bytes: 100 });
      assert.equal((await db()('ledger_transactions').where({ team_id: u.teamId, category: 'DOWNLOAD_HTTPS' })).length, 2);
    });
  });
});
