import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { crc32c } from '../../src/net/crc32c';
import { HttpsRangeSource, RangeNotSupportedError, SourceChangedError } from '../../src/net/https-range-source';
import { BlobStore, MIB } from '../../src/storage/blob-store';
import { LocalDiskStore } from '../../src/storage/local-disk-store';
import { createBucketClient } from '../../src/storage/bucket-access';
import { BucketRangeSource } from '../../src/storage/bucket-range-source';
import { S3BlobStore } from '../../src/storage/s3-blob-store';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { ChecksumMismatchError, CopyProgress, copyRanges } from '../../src/storage/copy-engine';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { LocalS3, startLocalS3 } from '../helpers/s3-server';
import { scaled } from '../helpers/timeouts';

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

describe('Ranged parallel copy engine (HTTPS source with a self-signed certificate)', function () {
  this.timeout(scaled(60_000));
  let server: RangeServer;
  let agent: https.Agent;
  let root: string;
  let disk: BlobStore;
  const file = randomBytes(12 * MIB + 321);
  const fileCrc = crc32c(file);
  let n = 0;
  const fresh = (data: Buffer = file) => {
    const p = `/media/video-${++n}.mp4`;
    server.serve(p, data);
    return new HttpsRangeSource(server.origin + p, { agent });
  };
  const rangedRequests = () => server.requests.filter((r) => r.range && r.range !== 'bytes=0-0');

  before(async () => {
    server = await startRangeServer();
    agent = new https.Agent({ ca: server.ca, keepAlive: true, maxSockets: 32 });
    root = mkdtempSync(path.join(os.tmpdir(), 'vidmill-copy-'));
    disk = new LocalDiskStore(root);
  });
  after(async () => {
    agent.destroy();
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });
  beforeEach(() => {
    server.requests.length = 0;
    server.modes.noRanges = false;
    server.modes.dropOnce.clear();
    server.modes.changeAfterRangedRequests = undefined;
  });

  it('refuses a source whose certificate is not trusted', async () => {
    server.serve('/x', file);
    await assert.rejects(new HttpsRangeSource(server.origin + '/x').probe(), /self-signed|certificate/i);
  });

  it('copies in parallel ranged parts pinned with If-Range, reports progress and computes the CRC-32C of the whole file', async () => {
    const source = fresh();
    const pinned = await source.probe();
    assert.equal(pinned.size, file.length);
    assert.match(pinned.validator ?? '', /^"/);
    const upload = await disk.createUpload('videos/a/master', pinned.size, { partSize: 1 * MIB });
    const progress: CopyProgress[] = [];
    const result = await copyRanges({ source, pinned, upload, concurrency: 4, expectedCrc32c: fileCrc, onProgress: (p) => progress.push(p) });
    assert.equal(result.crc32c, fileCrc);
    assert.equal(result.partsCopied, 13);
    assert.ok(file.equals(await readAll(await disk.read('videos/a/master'))));
    const ranged = rangedRequests();
    assert.equal(ranged.length, 13);
    assert.ok(ranged.every((r) => r.ifRange === pinned.validator && r.status === 206));
    assert.deepEqual(progress[0], { bytesDone: 0, size: file.length, partsDone: 0, partCount: 13, percentage: 0 });
    assert.equal(progress.at(-1)?.percentage, 100);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.bytesDone > progress[i - 1]!.bytesDone);
  });

  it('retries only the part whose connection dropped', async () => {
    const source = fresh();
    const pinned = await source.probe();
    server.modes.dropOnce.add(3 * MIB);
    const upload = await disk.createUpload('videos/b/master', pinned.size, { partSize: 1 * MIB });
    const result = await copyRanges({ source, pinned, upload, concurrency: 3, retryDelayMs: () => 10 });
    assert.equal(result.retries, 1);
    assert.equal(result.crc32c, fileCrc);
    assert.equal(rangedRequests().filter((r) => r.range === `bytes=${3 * MIB}-${4 * MIB - 1}`).length, 2);
    assert.ok(file.equals(await readAll(await disk.read('videos/b/master'))));
  });

  it('fails with SourceChangedError when the file changes during the copy, and publishes nothing', async () => {
    const source = fresh();
    const pinned = await source.probe();
    server.modes.changeAfterRangedRequests = 4;
    const upload = await disk.createUpload('videos/c/master', pinned.size, { partSize: 1 * MIB });
    await assert.rejects(copyRanges({ source, pinned, upload, concurrency: 2, retryDelayMs: () => 1 }), SourceChangedError);
    assert.equal(await disk.stat('videos/c/master'), undefined);
    assert.ok(
      rangedRequests().some((r) => r.status === 200),
      'the origin answered the stale If-Range with the whole new file',
    );
  });

  it('copies a file served from disk (serveFile, as the benchmark does): ranges, a dropped part, a throttled connection, a change', async () => {
    const onDisk = path.join(root, 'served-from-disk.bin');
    writeFileSync(onDisk, file);
    server.serveFile('/disk.mp4', onDisk);
    const source = new HttpsRangeSource(server.origin + '/disk.mp4', { agent });
    const pinned = await source.probe();
    assert.equal(pinned.size, file.length);
    server.modes.dropOnce.add(5 * MIB);
    const upload = await disk.createUpload('videos/disk/master', pinned.size, { partSize: 1 * MIB });
    const result = await copyRanges({ source, pinned, upload, concurrency: 4, retryDelayMs: () => 10 });
    assert.equal(result.crc32c, fileCrc);
    assert.equal(result.retries, 1);
    assert.ok(file.equals(await readAll(await disk.read('videos/disk/master'))));
    assert.ok(rangedRequests().every((r) => r.ifRange === pinned.validator && r.status === 206));

    // Throttled: 64 KiB at 256 KB/s is 6 slices of 12,800 bytes, each followed by a 50 ms pause.
    server.modes.bytesPerSecondPerConnection = 256_000;
    try {
      const body = await source.openRange(0, 64 * 1024 - 1, pinned);
      const chunks: Buffer[] = [];
      for await (const c of body) chunks.push(c);
      const got = Buffer.concat(chunks);
      assert.ok(got.equals(file.subarray(0, 64 * 1024)));
      assert.equal(rangedRequests().at(-1)!.throttledSlices, Math.ceil((64 * 1024) / (256_000 / 20)), 'the range came throttled');
    } finally {
      server.modes.bytesPerSecondPerConnection = undefined;
    }

    // A change (new ETag) answers the stale If-Range with the whole file.
    server.modes.changeAfterRangedRequests = 0;
    await assert.rejects(source.openRange(0, 99, pinned), SourceChangedError);
  });

  it('a source without range support is refused at the probe', async () => {
    const source = fresh();
    server.modes.noRanges = true;
    await assert.rejects(source.probe(), RangeNotSupportedError);
  });

  it('a checksum mismatch fails before completing; a restart that skips the check completes without copying again', async () => {
    const source = fresh();
    const pinned = await source.probe();
    const upload = await disk.createUpload('videos/d/master', pinned.size, { partSize: 1 * MIB });
    const kept = new Map<number, number>();
    await assert.rejects(
      copyRanges({ source, pinned, upload, concurrency: 4, expectedCrc32c: (fileCrc + 1) >>> 0, onPart: (p, crc) => void kept.set(p, crc) }),
      (err: unknown) => err instanceof ChecksumMismatchError && err.actual === fileCrc,
    );
    assert.equal(await disk.stat('videos/d/master'), undefined);
    const before = rangedRequests().length;
    const resumed = await disk.resumeUpload(upload.descriptor);
    const result = await copyRanges({ source, pinned, upload: resumed, concurrency: 4, knownParts: kept });
    assert.equal(result.partsCopied, 0);
    assert.equal(result.crc32c, fileCrc);
    assert.equal(rangedRequests().length, before);
    assert.ok(file.equals(await readAll(await disk.read('videos/d/master'))));
  });

  it('an interrupted copy resumes from the parts already stored and fetches only the rest', async () => {
    const source = fresh();
    const pinned = await source.probe();
    const upload = await disk.createUpload('videos/e/master', pinned.size, { partSize: 1 * MIB });
    const kept = new Map<number, number>();
    const stop = new AbortController();
    await assert.rejects(
      copyRanges({
        source,
        pinned,
        upload,
        concurrency: 2,
        signal: stop.signal,
        onPart: (p, crc) => {
          kept.set(p, crc);
          if (kept.size === 5) stop.abort(new Error('worker killed'));
        },
      }),
      /worker killed/,
    );
    const storedBefore = (await upload.completedParts()).length;
    assert.ok(storedBefore >= 5 && storedBefore < 13, `stored ${storedBefore}`);
    server.requests.length = 0;
    // A new worker: a new store object, the descriptor and part CRCs from the job's saved state.
    const resumed = await new LocalDiskStore(root).resumeUpload(JSON.parse(JSON.stringify(upload.descriptor)));
    const result = await copyRanges({ source, pinned, upload: resumed, concurrency: 4, knownParts: kept, expectedCrc32c: fileCrc });
    assert.equal(result.crc32c, fileCrc);
    assert.equal(result.partsCopied, 13 - kept.size);
    assert.equal(rangedRequests().length, 13 - kept.size);
    assert.ok(file.equals(await readAll(await disk.read('videos/e/master'))));
  });

  describe('with a local S3-compatible server (bucket sources, multipart upload)', () => {
    let s3: LocalS3;
    let store: S3BlobStore;
    before(async () => {
      s3 = await startLocalS3({ buckets: ['platform', 'customer'] });
      store = new S3BlobStore({ bucket: 'platform', endpoint: s3.endpoint, region: s3.region, accessKey: s3.credentials.accessKey, secretKey: s3.credentials.secretAccessKey, forcePathStyle: true });
    });
    after(async () => {
      clients.forEach((c) => c.destroy());
      await store.close();
      await s3.close();
    });

    const clients: Array<{ destroy(): void }> = [];
    const bucketSource = (key: string) => {
      const client = createBucketClient(
        {
          bucket: 'customer',
          endpoint: s3.endpoint,
          region: s3.region,
          forcePathStyle: true,
          credentials: { accessKey: s3.credentials.accessKey, secretAccessKey: s3.credentials.secretAccessKey },
        },
        { allowPrivateUrls: true },
      ); // the local S3 server is on 127.0.0.1
      clients.push(client);
      return new BucketRangeSource(client, 'customer', key);
    };
    const putCustomerObject = async (key: string, body: Buffer) => {
      const c = s3.client();
      await c.send(new PutObjectCommand({ Bucket: 'customer', Key: key, Body: body }));
      c.destroy();
    };

    it('copies from a bucket object (HeadObject, ranged GetObject pinned by ETag) to local disk', async () => {
      await putCustomerObject('in/video.mp4', file);
      const source = bucketSource('in/video.mp4');
      const pinned = await source.probe();
      assert.equal(pinned.size, file.length);
      const upload = await disk.createUpload('videos/from-bucket/master', pinned.size, { partSize: 1 * MIB });
      const result = await copyRanges({ source, pinned, upload, concurrency: 4, expectedCrc32c: fileCrc });
      assert.equal(result.crc32c, fileCrc);
      assert.ok(file.equals(await readAll(await disk.read('videos/from-bucket/master'))));
    });

    it('a bucket object replaced during the copy fails it with SourceChangedError', async () => {
      await putCustomerObject('in/changing.mp4', file);
      const source = bucketSource('in/changing.mp4');
      const pinned = await source.probe();
      const upload = await disk.createUpload('videos/from-bucket-changed/master', pinned.size, { partSize: 1 * MIB });
      let replaced = false;
      await assert.rejects(
        copyRanges({
          source,
          pinned,
          upload,
          concurrency: 1,
          retryDelayMs: () => 1,
          onPart: async () => {
            if (!replaced) {
              replaced = true;
              await putCustomerObject('in/changing.mp4', randomBytes(file.length));
            }
          },
        }),
        SourceChangedError,
      );
      assert.equal(await disk.stat('videos/from-bucket-changed/master'), undefined);
    });

    it('copies with parallel UploadPart calls and the same CRC-32C', async () => {
      const source = fresh();
      const pinned = await source.probe();
      const upload = await store.createUpload('videos/s3/master', pinned.size, { partSize: 5 * MIB });
      const result = await copyRanges({ source, pinned, upload, concurrency: 3, expectedCrc32c: fileCrc });
      assert.equal(result.partsCopied, 3);
      assert.equal((await store.stat('videos/s3/master'))?.size, file.length);
      assert.ok(file.equals(await readAll(await store.read('videos/s3/master'))));
    });
  });
});
