/**
 * Direct resumable uploads (tus 1.0, docs/uploads.md) end to end, on local-disk platform storage
 * and on S3 storage (the local S3-compatible server): the session, tus-js-client sending the
 * bytes to the app on a real port, resumption from a second client, the finishing job turning
 * the upload into the master video, checksums, limits, expiry and termination.
 */
import { strict as assert } from 'node:assert';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Upload } from 'tus-js-client';
import { answerClientErrors } from '../../src/http/client-errors';
import { crc32c } from '../../src/net/crc32c';
import { expireUploads } from '../../src/features/video-in';
import { findVideo } from '../../src/features/videos';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { S3BlobStore } from '../../src/storage/s3-blob-store';
import { TEST_DIALECT } from '../helpers/database';
import { assertStageError, createHarness, expectError, Harness, TestUser } from '../helpers/harness';
import { fixtureBytes } from '../helpers/media-fixtures';
import { apiRequests, waitFor } from '../helpers/scenario';
import { LocalS3, startLocalS3 } from '../helpers/s3-server';
import { scaled } from '../helpers/timeouts';

type Storage = 'disk' | 's3';

describe(`Direct resumable uploads (${TEST_DIALECT})`, function () {
  this.timeout(scaled(90_000));
  let s3: LocalS3;
  let video: Buffer;

  before(async () => {
    s3 = await startLocalS3({ buckets: ['platform'] });
    video = fixtureBytes({ seconds: 4, width: 320, height: 240 });
  });
  after(async () => {
    await s3.close();
  });

  it('a size over 500 GB is refused with 400 VIDEO_TOO_LARGE', async () => {
    const h = await createHarness();
    try {
      const u = await h.user();
      const res = await h.request
        .post('/api/v1/videos/in/uploads')
        .set('X-API-Key', u.apiKey)
        .send({ name: 'Huge', size: 500 * 1000 ** 3 + 1 });
      expectError(res, 400, 'VIDEO_TOO_LARGE');
    } finally {
      await h.close();
    }
  });

  it("the tus creation extension counts against the API key's rate limit (one budget with the API): 429 TOO_MANY_REQUESTS with Retry-After", async () => {
    const h = await createHarness({ rateLimitPerMinute: 3 });
    try {
      const u = await h.user();
      const create = () =>
        h.request
          .post('/tus/uploads')
          .set('X-API-Key', u.apiKey)
          .set('Tus-Resumable', '1.0.0')
          .set('Upload-Length', '100')
          .set('Upload-Metadata', `name ${Buffer.from('x').toString('base64')}`);
      assert.equal((await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey)).status, 200);
      assert.equal((await create()).status, 201);
      const last = await create();
      assert.equal(last.status, 201);
      assert.equal(last.headers['x-ratelimit-remaining'], '0');
      const refused = await create();
      assert.equal(refused.status, 429);
      assert.equal(refused.body.errorCode, 'TOO_MANY_REQUESTS');
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      expectError(await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey), 429, 'TOO_MANY_REQUESTS');
    } finally {
      await h.close();
    }
  });

  for (const storage of ['disk', 's3'] as Storage[]) {
    describe(`on ${storage} storage`, () => {
      let h: Harness;
      let u: TestUser;
      let server: http.Server;
      let origin: string;
      const { get, post } = apiRequests(
        () => h,
        () => u,
      );

      beforeEach(async () => {
        const blobs =
          storage === 's3'
            ? new S3BlobStore({ bucket: 'platform', endpoint: s3.endpoint, region: s3.region, accessKey: s3.credentials.accessKey, secretKey: s3.credentials.secretAccessKey, forcePathStyle: true })
            : undefined;
        // The app on a port of its own, which is also its public URL (upload URLs are built on it).
        server = answerClientErrors(http.createServer((req, res) => h.app(req, res))); // as main.ts serves it
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        h = await createHarness({ publicUrl: origin, publicUrlConfigured: true }, { blobs });
        u = await h.user();
        await setFreeClipEnabled(h.database.db, u.teamId, false);
      });
      afterEach(async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        await h.close();
      });

      /** A session; its uploadUrl moved to this test's server (the token signs the path only). */
      const session = async (body: Record<string, unknown>, query = '') => {
        const res = await post(`/v1/videos/in/uploads${query}`, { name: 'Upload', ...body });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        const url = new URL(res.body.uploadUrl);
        const local = new URL(url.pathname + url.search, origin).toString();
        return { ...res.body, url: local } as { videoId: string; uploadUrl: string; url: string; size: number; expiresAt: string };
      };
      /** tus-js-client sending `data` to `url`; resolves when done (or when `stopAt` bytes are acknowledged: aborted there). */
      const send = (url: string, data: Buffer, opts: { chunkSize?: number; stopAt?: number } = {}) =>
        new Promise<{ finished: boolean; offset: number }>((resolve, reject) => {
          const upload: Upload = new Upload(data, {
            uploadUrl: url,
            chunkSize: opts.chunkSize ?? Infinity,
            retryDelays: [],
            storeFingerprintForResuming: false,
            onChunkComplete: (_n, accepted) => {
              if (opts.stopAt !== undefined && accepted >= opts.stopAt) void upload.abort().then(() => resolve({ finished: false, offset: accepted }));
            },
            onSuccess: () => resolve({ finished: true, offset: data.length }),
            onError: reject,
          });
          upload.start();
        });
      const uploadState = async (videoId: string) => (await get(`/v1/videos/${videoId}/in/status`)).body.upload.uploadState;
      const waitUpload = (videoId: string, want: string[]) =>
        waitFor(`upload ${want.join('/')}`, async () => {
          const s = (await findVideo(h.database.db, videoId))?.upload?.status;
          return s && want.includes(s) ? s : undefined;
        });
      const tusBytes = (videoId: string) => h.services.videoIn.uploads.offset(h.services.videoIn.uploadStoreId(videoId));
      const tus = (method: string, url: string) => {
        const u2 = new URL(url);
        return fetch(u2, { method, headers: { 'Tus-Resumable': '1.0.0' } });
      };
      const stored = async (videoId: string) => {
        const chunks: Buffer[] = [];
        for await (const c of await h.services.blobs.read(`videos/${videoId}/file`)) chunks.push(Buffer.from(c));
        return Buffer.concat(chunks);
      };

      it('an upload interrupted and resumed from a second client becomes the master video with its CRC-32C, and ingestion starts', async () => {
        const s = await session({ size: video.length, fileName: 'clip.mp4' }, '?fullIngestion=false');
        assert.equal(s.uploadUrl, s.url, 'absolute, on the public URL');
        assert.match(s.uploadUrl, /^http:\/\/127\.0\.0\.1:\d+\/tus\/uploads\/[0-9a-f]{32}\?token=\d+\.[\w-]+$/);
        assert.equal(new URL(s.uploadUrl).pathname, `/tus/uploads/${s.videoId.replace(/-/g, '')}`);
        assert.equal(s.size, video.length);
        assert.equal((await uploadState(s.videoId)).uploadStatus, 'INITIAL');
        h.startWorker();
        const options = await fetch(`${origin}/tus/uploads`, { method: 'OPTIONS' });
        assert.equal(options.status, 204);
        assert.equal(options.headers.get('tus-version'), '1.0.0');
        assert.equal(options.headers.get('tus-extension'), 'creation,termination,expiration');
        const first = await send(s.url, video, { chunkSize: 16 * 1024, stopAt: 32 * 1024 });
        assert.equal(first.finished, false);
        const head = await tus('HEAD', s.url);
        assert.equal(head.status, 200);
        assert.equal(Number(head.headers.get('upload-offset')), first.offset);
        assert.equal(Number(head.headers.get('upload-length')), video.length);
        assert.equal(head.headers.get('upload-expires'), new Date(s.expiresAt).toUTCString());
        // Another client instance, with the URL alone.
        const second = await send(s.url, video);
        assert.equal(second.finished, true);
        await waitUpload(s.videoId, ['DONE']);
        assert.ok((await stored(s.videoId)).equals(video));
        const v = await findVideo(h.database.db, s.videoId);
        assert.equal(v?.crc32c, crc32c(video));
        assert.ok(v?.ingestion, 'ingestion has begun');
        const state = await uploadState(s.videoId);
        assert.equal(state.progressPercentage, 100);
        assert.equal(state.bytesTransferred, video.length);
        await waitFor('tus bytes removed', async () => ((await tusBytes(s.videoId)) === undefined ? true : undefined));
        // The finished upload still answers HEAD with its full offset (a client resuming it is done).
        const after = await tus('HEAD', s.url);
        assert.equal(after.status, 200);
        assert.equal(Number(after.headers.get('upload-offset')), video.length);
      });

      it('the last byte is recorded with its finishing job before the answer, and a finish run again after a crash completes it once', async () => {
        const s = await session({ size: video.length });
        await send(s.url, video); // no worker yet: only the receipt and the job exist
        const state = await uploadState(s.videoId);
        assert.equal(state.uploadStatus, 'IN_PROGRESS');
        assert.equal(state.bytesTransferred, video.length);
        const jobs = await h.database.db('jobs').where({ kind: 'video-in.upload-finish' }).select('payload');
        assert.equal(jobs.filter((j: any) => JSON.parse(j.payload).videoId === s.videoId).length, 1);
        // A first run that died right after moving the bytes into platform storage.
        await h.services.videoIn.uploads.adopt(h.services.videoIn.uploadStoreId(s.videoId), `videos/${s.videoId}/file`, video.length);
        h.startWorker();
        await waitUpload(s.videoId, ['DONE']);
        assert.equal((await findVideo(h.database.db, s.videoId))?.crc32c, crc32c(video));
        assert.ok((await stored(s.videoId)).equals(video));
        const events = (await h.database.db('webhook_events').select('event_type', 'data')).filter((r: any) => JSON.parse(r.data).videoId === s.videoId).map((r: any) => r.event_type);
        assert.deepEqual(
          events.filter((e: string) => e.startsWith('video_in.')),
          ['video_in.started', 'video_in.done'],
        );
      });

      it('a finish run again after a crash between CHECKSUM_MISMATCH and the removal of the file removes the mismatched file', async () => {
        const s = await session({ size: video.length }, `?crc32c=${(crc32c(video) + 1) >>> 0}`);
        h.startWorker();
        await send(s.url, video);
        await waitUpload(s.videoId, ['FAILED']);
        await waitFor('the mismatched file removed', async () => (await h.services.blobs.stat(`videos/${s.videoId}/file`)) === undefined);
        // What the crash left: the failure recorded, the file still there, the job run again.
        await h.services.blobs.put(`videos/${s.videoId}/file`, video);
        await h.services.jobs.enqueue(h.database.db, { kind: 'video-in.upload-finish', payload: { videoId: s.videoId } });
        await waitFor('the leftover file removed', async () => (await h.services.blobs.stat(`videos/${s.videoId}/file`)) === undefined);
        assertStageError((await uploadState(s.videoId)).error, 'CHECKSUM_MISMATCH');
      });

      it('an upload continues on another API process of the same installation', async () => {
        const s = await session({ size: video.length });
        await send(s.url, video, { chunkSize: 16 * 1024, stopAt: 32 * 1024 });
        const other = h.anotherProcess();
        const second = http.createServer((req, res) => other.app(req, res));
        await new Promise<void>((resolve) => second.listen(0, '127.0.0.1', resolve));
        try {
          const there = new URL(s.url);
          there.port = String((second.address() as AddressInfo).port);
          assert.equal((await send(there.toString(), video)).finished, true);
        } finally {
          second.closeAllConnections();
          await new Promise((resolve) => second.close(resolve));
        }
        h.startWorker();
        await waitUpload(s.videoId, ['DONE']);
        assert.ok((await stored(s.videoId)).equals(video));
      });

      if (storage === 's3') {
        it('a storage failure during a PATCH is a 500 with the JSON Error body and no internals, and the upload resumes after it', async () => {
          const big = Buffer.concat([video, Buffer.alloc(6 * 1024 * 1024 - video.length, 9)]);
          const s = await session({ size: big.length });
          s3.refuse = (r) => r.method === 'PUT' && r.url.includes('partNumber=');
          try {
            const res = await fetch(s.url, {
              method: 'PATCH',
              headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
              body: big,
            });
            assert.equal(res.status, 500);
            assert.match(String(res.headers.get('content-type')), /application\/json/);
            const body = (await res.json()) as any;
            assert.equal(body.errorCode, 'INTERNAL_SERVER_ERROR');
            assert.doesNotMatch(JSON.stringify(body), /AccessDenied|amazonaws|127\.0\.0\.1|at \w+ \(|\/work\//);
          } finally {
            s3.refuse = undefined;
          }
          h.startWorker();
          assert.equal((await send(s.url, big)).finished, true);
          await waitUpload(s.videoId, ['DONE']);
          assert.equal((await findVideo(h.database.db, s.videoId))?.crc32c, crc32c(big));
        });
      }

      it('a completed upload read between its last byte and its finish leaves nothing behind in the tus store (no cached info)', async () => {
        const s = await session({ size: video.length });
        await send(s.url, video); // no worker yet: received, not finished
        assert.equal(await tusBytes(s.videoId), video.length); // a read of the tus store before the finish
        h.startWorker();
        await waitUpload(s.videoId, ['DONE']);
        await waitFor('tus bytes and info removed', async () => ((await tusBytes(s.videoId)) === undefined ? true : undefined), { timeoutMs: 5000 });
      });

      it('two uploads in parallel each become their own master video', async () => {
        const other = Buffer.concat([video, Buffer.from('trailing bytes of a second file')]);
        const a = await session({ size: video.length });
        const b = await session({ size: other.length });
        h.startWorker();
        await Promise.all([send(a.url, video, { chunkSize: 20 * 1024 }), send(b.url, other, { chunkSize: 20 * 1024 })]);
        await Promise.all([waitUpload(a.videoId, ['DONE']), waitUpload(b.videoId, ['DONE'])]);
        assert.ok((await stored(a.videoId)).equals(video));
        assert.ok((await stored(b.videoId)).equals(other));
        assert.equal((await findVideo(h.database.db, b.videoId))?.crc32c, crc32c(other));
      });

      it('the tus creation extension (POST /tus/uploads with X-API-Key and Upload-Metadata) makes the same session, and a tus client uploads through it', async () => {
        h.startWorker();
        let location = '';
        await new Promise<void>((resolve, reject) => {
          const upload: Upload = new Upload(video, {
            endpoint: `${origin}/tus/uploads`,
            headers: { 'X-API-Key': u.apiKey },
            metadata: { name: 'From tus', filename: 'tus.mp4', fullIngestion: 'false' },
            retryDelays: [],
            storeFingerprintForResuming: false,
            onUploadUrlAvailable: () => {
              location = upload.url ?? '';
            },
            onSuccess: () => resolve(),
            onError: reject,
          });
          upload.start();
        });
        const uploadId = /\/tus\/uploads\/([0-9a-f]{32})\?token=/.exec(location)?.[1];
        assert.ok(uploadId, location);
        const videoId = uploadId.replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');
        await waitUpload(videoId, ['DONE']);
        const v = (await get(`/v1/videos/${videoId}`)).body;
        assert.equal(v.name, 'From tus');
        assert.equal((await findVideo(h.database.db, videoId))?.crc32c, crc32c(video));
        assert.equal((await uploadState(videoId)).uploadStatus, 'DONE');
        // Without a key, or with a bad one, or without a name.
        const create = (headers: Record<string, string>) => fetch(`${origin}/tus/uploads`, { method: 'POST', headers: { 'Tus-Resumable': '1.0.0', 'Upload-Length': '100', ...headers } });
        assert.equal((await create({ 'Upload-Metadata': `name ${Buffer.from('x').toString('base64')}` })).status, 401);
        assert.equal((await create({ 'X-API-Key': 'vmk_wrong', 'Upload-Metadata': `name ${Buffer.from('x').toString('base64')}` })).status, 401);
        const noName = await create({ 'X-API-Key': u.apiKey });
        assert.equal(noName.status, 400);
        assert.equal(((await noName.json()) as any).errorCode, 'VALIDATION_ERROR');
        const tooLarge = await create({ 'X-API-Key': u.apiKey, 'Upload-Length': String(500 * 1000 ** 3 + 1), 'Upload-Metadata': `name ${Buffer.from('x').toString('base64')}` });
        assert.equal(((await tooLarge.json()) as any).errorCode, 'VIDEO_TOO_LARGE');
      });

      it('a file that does not match crc32c fails the video-in with CHECKSUM_MISMATCH', async () => {
        const s = await session({ size: video.length }, `?crc32c=${(crc32c(video) + 1) >>> 0}`);
        h.startWorker();
        await send(s.url, video);
        await waitUpload(s.videoId, ['FAILED']);
        const error = (await uploadState(s.videoId)).error;
        assertStageError(error, 'CHECKSUM_MISMATCH');
        // The advice is one that works for an upload: a new upload, not a restart (409 below).
        assert.match(error.message, /create a new upload/i);
        assert.doesNotMatch(error.message, /skipChecksumValidation|restart with/i);
        // removed right after the failure is recorded (the job's next step), or by its rerun after a crash
        await waitFor('the mismatched file removed', async () => (await h.services.blobs.stat(`videos/${s.videoId}/file`)) === undefined);
        const res = await post(`/v1/videos/${s.videoId}/in/restart`);
        expectError(res, 409, 'VIDEO_IN_UPLOAD_NOT_RESTARTABLE');
      });

      it('a file whose crc32c matches is recorded DONE', async () => {
        const s = await session({ size: video.length }, `?crc32c=${crc32c(video)}`);
        h.startWorker();
        await send(s.url, video);
        await waitUpload(s.videoId, ['DONE']);
      });

      it('bytes past the upload size are refused with 413 and nothing is stored', async () => {
        const s = await session({ size: 1000 });
        const res = await fetch(s.url, {
          method: 'PATCH',
          headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
          body: Buffer.alloc(1001, 1),
        });
        assert.equal(res.status, 413);
        const body = (await res.json()) as any;
        assert.equal(body.errorCode, 'PAYLOAD_TOO_LARGE');
        assert.equal(await tusBytes(s.videoId), 0);
        // A body without Content-Length (chunked) is cut where it passes the size.
        const chunked = await fetch(s.url, {
          method: 'PATCH',
          headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
          body: new ReadableStream({
            start(c) {
              c.enqueue(new Uint8Array(1001).fill(2));
              c.close();
            },
          }),
          duplex: 'half',
        });
        assert.equal(chunked.status, 413);
        assert.equal(((await chunked.json()) as any).errorCode, 'PAYLOAD_TOO_LARGE');
        assert.equal(await tusBytes(s.videoId), 0);
      });

      it('a PATCH that sends Upload-Length (a deferred-length declaration) is refused with 400 BAD_REQUEST, not 501, and nothing is stored', async () => {
        const s = await session({ size: 1000 });
        for (const length of ['1000', '999', 'x']) {
          const res = await fetch(s.url, {
            method: 'PATCH',
            headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Upload-Length': length, 'Content-Type': 'application/offset+octet-stream' },
            body: Buffer.alloc(10, 1),
          });
          assert.equal(res.status, 400, length);
          assert.equal(((await res.json()) as any).errorCode, 'BAD_REQUEST');
        }
        assert.equal(await tusBytes(s.videoId), 0);
      });

      it('a PATCH followed by bytes that are not HTTP (a body longer than its Content-Length) gets its own 204 with the offset stored, not a 400', async () => {
        const s = await session({ size: 1000 });
        const url = new URL(s.url);
        const raw = await new Promise<string>((resolve) => {
          const socket = net.connect(Number(url.port), url.hostname);
          const got: Buffer[] = [];
          socket.on('data', (c) => got.push(c));
          socket.on('close', () => resolve(Buffer.concat(got).toString('latin1')));
          socket.on('error', () => undefined);
          socket.write(
            `PATCH ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\n` +
              `Content-Type: application/offset+octet-stream\r\nContent-Length: 100\r\n\r\n`,
          );
          socket.write(Buffer.concat([Buffer.alloc(100, 7), Buffer.alloc(100, 0)]));
        });
        assert.match(raw, /^HTTP\/1\.1 204 /, raw.slice(0, 300));
        assert.match(raw, /\r\nUpload-Offset: 100\r\n/i);
        assert.equal(await tusBytes(s.videoId), 100);
      });

      it('a PATCH whose Content-Type is not application/offset+octet-stream (or is missing) is 415 UNSUPPORTED_CONTENT_TYPE with the Error body, as tus 1.0 says, and nothing is stored', async () => {
        const s = await session({ size: 1000 });
        for (const type of ['application/octet-stream', 'application/json', 'text/plain', 'application/offset+octet-stream-x', undefined]) {
          const res = await fetch(s.url, {
            method: 'PATCH',
            headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', ...(type === undefined ? {} : { 'Content-Type': type }) },
            body: Buffer.alloc(10, 1),
          });
          assert.equal(res.status, 415, String(type));
          assert.match(String(res.headers.get('content-type')), /application\/json/);
          const body = (await res.json()) as any;
          assert.equal(body.errorCode, 'UNSUPPORTED_CONTENT_TYPE', String(type));
          assert.equal(body.statusCode, 415);
          assert.equal(body.requestId, res.headers.get('x-request-id'));
        }
        assert.equal(await tusBytes(s.videoId), 0);
        // The tus type, in any letter case, is accepted.
        const ok = await fetch(s.url, { method: 'PATCH', headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'Application/Offset+Octet-Stream' }, body: Buffer.alloc(10, 1) });
        assert.equal(ok.status, 204);
        assert.equal(await tusBytes(s.videoId), 10);
      });

      it('the upload URL with a trailing slash is 404 NOT_FOUND for every method (HEAD, PATCH, DELETE alike): only the Location URL is the upload, and it is not terminated', async () => {
        const s = await session({ size: 1000 });
        const url = new URL(s.url);
        const slashed = `${url.origin}${url.pathname}/${url.search}`;
        for (const method of ['HEAD', 'PATCH', 'DELETE']) {
          const res = await fetch(slashed, {
            method,
            headers: { 'Tus-Resumable': '1.0.0', ...(method === 'PATCH' ? { 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' } : {}) },
            ...(method === 'PATCH' ? { body: Buffer.alloc(10, 1) } : {}),
          });
          assert.equal(res.status, 404, method);
          if (method !== 'HEAD') assert.equal(((await res.json()) as any).errorCode, 'NOT_FOUND', method);
        }
        assert.equal((await uploadState(s.videoId)).uploadStatus, 'INITIAL');
        const head = await tus('HEAD', s.url);
        assert.equal(head.status, 200);
        assert.equal(head.headers.get('upload-offset'), '0');
      });

      it('a missing or wrong token is refused with 403 ACCESS_DENIED', async () => {
        const s = await session({ size: video.length });
        const bare = s.url.split('?')[0]!;
        for (const url of [bare, `${bare}?token=1.abc`, `${bare}?token=${new URL(s.url).searchParams.get('token')}x`]) {
          const res = await tus('HEAD', url);
          assert.equal(res.status, 403, url);
        }
        // Another upload's token does not open this one.
        const other = await session({ size: 10 });
        const crossed = `${bare}?${new URL(other.url).search.slice(1)}`;
        const res = await fetch(crossed, {
          method: 'PATCH',
          headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
          body: video.subarray(0, 100),
        });
        assert.equal(res.status, 403);
        assert.equal(((await res.json()) as any).errorCode, 'ACCESS_DENIED');
        assert.equal(await tusBytes(s.videoId), 0);
      });

      it('bytesTransferred shows the bytes received while the upload runs', async () => {
        const s = await session({ size: video.length });
        const part = await send(s.url, video, { chunkSize: 16 * 1024, stopAt: 16 * 1024 });
        const state = await waitFor('progress written', async () => {
          const st = await uploadState(s.videoId);
          return st.bytesTransferred === part.offset ? st : undefined;
        });
        assert.equal(state.uploadStatus, 'IN_PROGRESS');
        assert.equal(state.progressPercentage, Math.floor((part.offset / video.length) * 100));
      });

      it('an upload past its session end fails with UPLOAD_EXPIRED, its URL answers 410 and its bytes are removed', async () => {
        const swept = await session({ size: video.length });
        const asked = await session({ size: video.length });
        await send(swept.url, video, { chunkSize: 16 * 1024, stopAt: 16 * 1024 });
        await send(asked.url, video, { chunkSize: 16 * 1024, stopAt: 16 * 1024 });
        h.clock.advance(24 * 3600_000 + 1000);
        // A request after the end ends it on the spot ...
        const res = await tus('HEAD', asked.url);
        assert.equal(res.status, 410);
        assertStageError((await uploadState(asked.videoId)).error, 'UPLOAD_EXPIRED');
        assert.equal(await tusBytes(asked.videoId), undefined);
        // ... and the periodic sweep ends the others.
        assert.equal(await expireUploads(h.services.videoIn), 1);
        assert.equal((await uploadState(swept.videoId)).uploadStatus, 'FAILED');
        assertStageError((await uploadState(swept.videoId)).error, 'UPLOAD_EXPIRED');
        assert.equal(await tusBytes(swept.videoId), undefined);
        assert.equal((await tus('HEAD', swept.url)).status, 410);
      });

      it('deleting the video while its upload runs removes the upload and its bytes', async () => {
        const s = await session({ size: video.length });
        await send(s.url, video, { chunkSize: 16 * 1024, stopAt: 16 * 1024 });
        assert.equal(await tusBytes(s.videoId), 16 * 1024);
        const del = await h.request.delete(`/api/v1/videos/${s.videoId}`).set('X-API-Key', u.apiKey);
        assert.equal(del.status, 200, JSON.stringify(del.body));
        h.startWorker();
        await waitFor('upload bytes removed', async () => ((await tusBytes(s.videoId)) === undefined ? true : undefined));
        assert.equal((await tus('HEAD', s.url)).status, 404);
      });

      it('termination (DELETE) fails the video-in with UPLOAD_ABANDONED, removes the bytes, and the URL then answers 410', async () => {
        const s = await session({ size: video.length });
        await send(s.url, video, { chunkSize: 16 * 1024, stopAt: 16 * 1024 });
        const del = await tus('DELETE', s.url);
        assert.equal(del.status, 204);
        assertStageError((await uploadState(s.videoId)).error, 'UPLOAD_ABANDONED');
        assert.equal(await tusBytes(s.videoId), undefined);
        const again = await fetch(s.url, {
          method: 'PATCH',
          headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '16384', 'Content-Type': 'application/offset+octet-stream' },
          body: video.subarray(16384, 20000),
        });
        assert.equal(again.status, 410);
        assert.equal(((await again.json()) as any).errorCode, 'UPLOAD_ABANDONED');
        // The failed video can be abandoned like any failed video-in.
        const gone = await h.request.delete(`/api/v1/videos/${s.videoId}/in/abandon`).set('X-API-Key', u.apiKey);
        assert.equal(gone.status, 204);
      });
    });
  }
});
