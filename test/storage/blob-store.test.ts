import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { BlobNotFoundError, BlobStore, choosePartSize, MAX_PARTS, MIB } from '../../src/storage/blob-store';
import { LocalDiskStore } from '../../src/storage/local-disk-store';
import { S3BlobStore } from '../../src/storage/s3-blob-store';
import { LocalS3, startLocalS3 } from '../helpers/s3-server';
import { scaled } from '../helpers/timeouts';

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

const PART = 5 * MIB; // S3's smallest part
const SIZE = 2 * PART + 12_345; // three parts, the last short

interface StoreUnderTest {
  name: string;
  setup(): Promise<void>;
  /** A new store object over the same storage (another process after a crash). */
  open(): BlobStore;
  teardown(): Promise<void>;
}

function diskStores(): StoreUnderTest {
  let root: string;
  return {
    name: 'LocalDiskStore',
    async setup() {
      root = mkdtempSync(path.join(os.tmpdir(), 'vidmill-blobs-'));
    },
    open: () => new LocalDiskStore(root),
    async teardown() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function s3Stores(): StoreUnderTest {
  let s3: LocalS3;
  const opened: BlobStore[] = [];
  return {
    name: 'S3BlobStore (local S3-compatible server)',
    async setup() {
      s3 = await startLocalS3({ buckets: ['platform'] });
    },
    open() {
      const store = new S3BlobStore({
        bucket: 'platform',
        endpoint: s3.endpoint,
        region: s3.region,
        accessKey: s3.credentials.accessKey,
        secretKey: s3.credentials.secretAccessKey,
        forcePathStyle: true,
      });
      opened.push(store);
      return store;
    },
    async teardown() {
      await Promise.all(opened.map((s) => s.close()));
      await s3.close();
    },
  };
}

for (const sut of [diskStores(), s3Stores()]) {
  describe(`BlobStore: ${sut.name}`, function () {
    this.timeout(scaled(60_000));
    let store: BlobStore;
    const content = randomBytes(SIZE);
    let n = 0;
    const freshKey = () => `videos/v${++n}/master`;

    before(async () => {
      await sut.setup();
      store = sut.open();
    });
    after(async () => {
      await sut.teardown();
    });

    it('writes parts in parallel and out of order; nothing is visible until complete()', async () => {
      const key = freshKey();
      const upload = await store.createUpload(key, SIZE, { partSize: PART });
      assert.equal(upload.partCount, 3);
      assert.deepEqual(upload.partRange(3), { start: 2 * PART, end: SIZE });
      await Promise.all(
        [3, 1, 2].map(async (p, i) => {
          await new Promise((r) => setTimeout(r, i * 5));
          const { start, end } = upload.partRange(p);
          await upload.writePart(p, content.subarray(start, end));
        }),
      );
      assert.deepEqual(await upload.completedParts(), [1, 2, 3]);
      assert.equal(await store.stat(key), undefined, 'not visible before complete');
      await upload.complete();
      const st = await store.stat(key);
      assert.equal(st?.size, SIZE);
      assert.ok(st?.lastModified instanceof Date);
      assert.ok(content.equals(await readAll(await store.read(key))));
    });

    it('reads byte ranges (inclusive end, open end)', async () => {
      const key = freshKey();
      await store.put(key, content.subarray(0, 100_000));
      assert.ok(content.subarray(10, 20).equals(await readAll(await store.read(key, { start: 10, end: 19 }))));
      assert.ok(content.subarray(99_990, 100_000).equals(await readAll(await store.read(key, { start: 99_990 }))));
      assert.ok(content.subarray(1, 2).equals(await readAll(await store.read(key, { start: 1, end: 1 }))));
      if (sut.name.startsWith('S3')) {
        // s3rver answers `bytes=0-0` with the whole object (it reads end 0 as "no end"); real S3
        // answers one byte. The store refuses bytes it did not ask for rather than pass them on.
        await assert.rejects(store.read(key, { start: 0, end: 0 }), /answered bytes 0-99999\/100000 for a request of bytes=0-0/);
      } else {
        assert.ok(content.subarray(0, 1).equals(await readAll(await store.read(key, { start: 0, end: 0 }))));
      }
      await assert.rejects(store.read(key, { start: 5, end: 4 }), RangeError);
    });

    it('resumes an upload from its descriptor in a new store object: only missing parts are written', async () => {
      const key = freshKey();
      const first = await store.createUpload(key, SIZE, { partSize: PART });
      await first.writePart(2, content.subarray(PART, 2 * PART));
      const descriptor = JSON.parse(JSON.stringify(first.descriptor)); // as kept in a job payload

      const resumed = await sut.open().resumeUpload(descriptor);
      assert.deepEqual(await resumed.completedParts(), [2]);
      for (const p of [1, 3]) {
        const { start, end } = resumed.partRange(p);
        // Streamed in small chunks, as a download delivers them.
        await resumed.writePart(p, Readable.from(chunksOf(content.subarray(start, end), 64 * 1024)));
      }
      await resumed.complete();
      assert.ok(content.equals(await readAll(await store.read(key))));
    });

    it('refuses a part of the wrong length, a part number out of range, and completing with parts missing', async () => {
      const upload = await store.createUpload(freshKey(), SIZE, { partSize: PART });
      await assert.rejects(upload.writePart(1, content.subarray(0, PART - 1)), /length|expected/);
      await assert.rejects(upload.writePart(1, Readable.from(chunksOf(content.subarray(0, PART + 1), 1 * MIB))), /long|length/);
      await assert.rejects(upload.writePart(4, Buffer.alloc(1)), RangeError);
      await assert.rejects(upload.writePart(0, Buffer.alloc(1)), RangeError);
      await upload.writePart(3, content.subarray(2 * PART));
      await assert.rejects(upload.complete(), /missing 2 of 3 parts/);
      await upload.abort();
    });

    it('abort discards the parts; the upload cannot be resumed', async () => {
      const key = freshKey();
      const upload = await store.createUpload(key, SIZE, { partSize: PART });
      await upload.writePart(1, content.subarray(0, PART));
      await upload.abort();
      await assert.rejects(store.resumeUpload(upload.descriptor));
      assert.equal(await store.stat(key), undefined);
    });

    it('put, stat, read and delete small objects; absent keys are reported, deletes are idempotent', async () => {
      const key = `thumbnails/v1/${n++}.jpg`;
      await store.put(key, Buffer.from('jpeg bytes'), { contentType: 'image/jpeg' });
      assert.equal((await store.stat(key))?.size, 10);
      assert.equal((await readAll(await store.read(key))).toString(), 'jpeg bytes');
      await store.put(key, Buffer.from('replaced'));
      assert.equal((await readAll(await store.read(key))).toString(), 'replaced');
      await store.delete(key);
      await store.delete(key);
      assert.equal(await store.stat(key), undefined);
      await assert.rejects(store.read(key), BlobNotFoundError);
      await assert.rejects(store.read('never/was'), BlobNotFoundError);
    });

    it('refuses keys that could escape or confuse the store', async () => {
      for (const bad of ['', '../etc/passwd', '/abs', 'a//b', 'a/./b', 'a/../b', '.uploads/x', 'a/b/', 'a\\b', 'x'.repeat(513)]) {
        await assert.rejects(store.put(bad, Buffer.from('x')), /invalid blob key/, JSON.stringify(bad));
        await assert.rejects(store.createUpload(bad, 1), /invalid blob key/, JSON.stringify(bad));
      }
    });
  });
}

describe('BlobStore: LocalDiskStore specifics', () => {
  let root: string;
  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'vidmill-blobs-'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('stores a zero-byte object through an upload of one empty part', async () => {
    const store = new LocalDiskStore(root);
    const upload = await store.createUpload('empty/file', 0);
    assert.equal(upload.partCount, 1);
    await upload.writePart(1, Buffer.alloc(0));
    await upload.complete();
    assert.equal((await store.stat('empty/file'))?.size, 0);
  });

  it('leaves no staging files behind and prunes emptied folders on delete', async () => {
    const store = new LocalDiskStore(root);
    const upload = await store.createUpload('videos/x/master', 10, { partSize: 4 });
    await Promise.all([1, 2, 3].map((p) => upload.writePart(p, Buffer.alloc(upload.partRange(p).end - upload.partRange(p).start, p))));
    await upload.complete();
    assert.deepEqual(readdirSync(path.join(root, '.uploads')), []);
    assert.deepEqual([...(await readAll(await store.read('videos/x/master')))], [1, 1, 1, 1, 2, 2, 2, 2, 3, 3]);
    await store.delete('videos/x/master');
    assert.equal(existsSync(path.join(root, 'videos')), false);
  });

  it('streams parts of many small, uneven and empty chunks (batched writes) in parallel, each logged once', async () => {
    const store = new LocalDiskStore(root);
    const size = 3 * MIB + 777;
    const data = randomBytes(size);
    const upload = await store.createUpload('videos/chunks/master', size, { partSize: MIB });
    // Chunks of 1..300 bytes with empty ones between: thousands per part, more than one writev each.
    async function* unevenChunks(buf: Buffer) {
      for (let off = 0, i = 0; off < buf.length; i++) {
        if (i % 97 === 0) yield Buffer.alloc(0);
        const len = 1 + ((i * 7919) % 300);
        yield buf.subarray(off, Math.min(buf.length, off + len));
        off += len;
      }
    }
    await Promise.all(
      [4, 2, 1, 3].map((p) => {
        const { start, end } = upload.partRange(p);
        return upload.writePart(p, unevenChunks(data.subarray(start, end)));
      }),
    );
    assert.deepEqual(await upload.completedParts(), [1, 2, 3, 4]);
    await assert.rejects(upload.writePart(1, unevenChunks(Buffer.concat([data.subarray(0, MIB), Buffer.alloc(1)]))), /long/);
    const logged = readFileSync(path.join(root, '.uploads', upload.descriptor.id, 'parts'), 'utf8');
    assert.deepEqual(logged.trim().split('\n').map(Number).sort(), [1, 2, 3, 4]);
    await upload.complete();
    assert.ok(data.equals(await readAll(await store.read('videos/chunks/master'))));
  });
});

describe('choosePartSize', () => {
  it('keeps the wanted size while it fits in 10,000 parts and grows it in whole MiB beyond', () => {
    assert.equal(choosePartSize(1_000_000), 8 * MIB);
    assert.equal(choosePartSize(80_000 * MIB), 8 * MIB);
    const huge = 500e9;
    const size = choosePartSize(huge);
    assert.equal(size % MIB, 0);
    assert.ok(Math.ceil(huge / size) <= MAX_PARTS);
  });
});

function* chunksOf(buf: Buffer, size: number): Generator<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}
