/**
 * The tus upload storage (src/storage/tus-storage.ts) on local disk and on an S3-compatible
 * store: what `offset` reports while an upload is being discarded.
 *
 * Regression of the tus fuzzer's seed 1218098378 (PostgreSQL, S3 storage): a request that ended
 * an expired upload was cut off by its client; while the server still removed the upload, the
 * next request read the offset and saw the whole file. @tus/s3-store reports an upload whose
 * info object it can read but whose multipart upload is gone as complete (offset = size), which
 * is exactly the state between aborting the multipart upload and deleting the info.
 */
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { LocalDiskStore } from '../../src/storage/local-disk-store';
import { S3BlobStore } from '../../src/storage/s3-blob-store';
import { createTusStorage, type TusStorage } from '../../src/storage/tus-storage';
import { startLocalS3, type LocalS3 } from '../helpers/s3-server';
import { scaled } from '../helpers/timeouts';

const SIZE = 300_000;

for (const kind of ['disk', 's3'] as const) {
  describe(`tus upload storage on ${kind}`, function () {
    this.timeout(scaled(60_000));
    let s3: LocalS3 | undefined;
    let root: string;
    let storage: TusStorage;
    let blobs: LocalDiskStore | S3BlobStore;
    let n = 0;

    before(async () => {
      root = mkdtempSync(path.join(os.tmpdir(), 'vidmill-tus-storage-'));
      if (kind === 's3') {
        s3 = await startLocalS3({ buckets: ['platform'] });
        blobs = new S3BlobStore({ bucket: 'platform', endpoint: s3.endpoint, region: s3.region, accessKey: s3.credentials.accessKey, secretKey: s3.credentials.secretAccessKey, forcePathStyle: true });
      } else {
        blobs = new LocalDiskStore(path.join(root, 'blobs'));
      }
      storage = createTusStorage(blobs, { directory: path.join(root, 'uploads') });
    });
    after(async () => {
      await (blobs as S3BlobStore).close?.();
      await s3?.close();
      rmSync(root, { recursive: true, force: true });
    });

    const newUpload = async (stored: number): Promise<string> => {
      const id = storage.storeId(`${String(++n).padStart(32, '0')}`, `videos/v${n}/master`);
      await storage.create(id, SIZE, {}, new Date());
      if (stored > 0) await storage.datastore.write(Readable.from([Buffer.alloc(stored, 7)]), id, 0);
      return id;
    };

    it('an upload being discarded never reads as complete: every offset read during the discard is the stored bytes or gone', async () => {
      for (const stored of [0, 1000]) {
        for (let round = 0; round < 5; round++) {
          const id = await newUpload(stored);
          assert.equal(await storage.offset(id), stored);
          const seen: (number | undefined)[] = [];
          let discarding = true;
          const reads = (async () => {
            while (discarding) seen.push(await storage.offset(id));
          })();
          await storage.discard(id, false);
          discarding = false;
          await reads;
          seen.push(await storage.offset(id));
          assert.ok(
            seen.every((o) => o === undefined || o === stored),
            `offsets read while discarding an upload holding ${stored} bytes: ${[...new Set(seen)].join(', ')}`,
          );
          assert.equal(seen.at(-1), undefined, 'a discarded upload is gone');
        }
      }
    });

    it('a complete upload reads as complete until it is adopted', async () => {
      const id = await newUpload(0);
      await storage.datastore.write(Readable.from([Buffer.alloc(SIZE, 1)]), id, 0);
      assert.equal(await storage.offset(id), SIZE);
    });
  });
}
