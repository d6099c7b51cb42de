/**
 * Where the bytes of direct resumable uploads (tus 1.0, docs/uploads.md) wait until the last
 * one arrives, next to platform storage:
 * - local disk: @tus/file-store under `<data dir>/uploads` (a file per upload and its `.json`
 *   info); the finished file is renamed onto its blob key (same file system: one rename; else
 *   copied, then removed).
 * - S3: @tus/s3-store on the platform bucket and credentials. The upload is an S3 multipart
 *   upload created directly under the master's blob key, so completing it puts the object where
 *   it belongs and adopting it copies nothing; only its `<key>.info` (and any `<key>.part`)
 *   companion objects are removed afterwards.
 *
 * The tus packages are ES modules loaded on first use (Node's `require` of ES modules): a process
 * that never serves an upload does not load them, and @tus/s3-store loads the AWS SDK.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { DataStore } from '@tus/utils';
import type { BlobStore } from './blob-store';
import type { LocalDiskStore } from './local-disk-store';
import type { S3BlobStore } from './s3-blob-store';

export interface TusStorage {
  readonly kind: 'disk' | 's3';
  /** The @tus/server data store. */
  readonly datastore: DataStore;
  /** Creates an empty upload of `size` bytes. */
  create(storeId: string, size: number, metadata: Record<string, string>, now: Date): Promise<void>;
  /** The data store's id of an upload whose file becomes `blobKey`. */
  storeId(uploadId: string, blobKey: string): string;
  /**
   * Makes the complete upload the object `blobKey` of platform storage. Idempotent: when the
   * upload's bytes are gone but the object is there with `size` bytes, it has been done.
   */
  adopt(storeId: string, blobKey: string, size: number): Promise<void>;
  /** Removes what the upload left besides an adopted object (its info; its bytes when not adopted). Idempotent. */
  discard(storeId: string, adopted: boolean): Promise<void>;
  /** The bytes received so far; undefined when the upload is gone. */
  offset(storeId: string): Promise<number | undefined>;
}

/** The tus storage that goes with platform storage `blobs`; `directory` holds the local-disk uploads. */
async function createUpload(store: DataStore, id: string, size: number, metadata: Record<string, string>, now: Date): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (see the module comment)
  const { Upload } = require('@tus/utils') as typeof import('@tus/utils');
  await store.create(new Upload({ id, size, offset: 0, metadata, creation_date: now.toISOString() }));
}

export function createTusStorage(blobs: BlobStore, opts: { directory: string }): TusStorage {
  return blobs.kind === 's3' ? new S3TusStorage(blobs as S3BlobStore) : new DiskTusStorage(blobs as LocalDiskStore, opts.directory);
}

function isNotFound(err: unknown): boolean {
  const e = err as { status_code?: number; code?: string; name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.status_code === 404 || e?.status_code === 410 || e?.code === 'ENOENT' || e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
}

/** What a store holds of upload `id` (its offset and size), or undefined when it has none. */
async function storedUpload(datastore: DataStore, id: string): Promise<{ offset: number; size?: number } | undefined> {
  try {
    return await datastore.getUpload(id);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

class DiskTusStorage implements TusStorage {
  readonly kind = 'disk' as const;
  private store?: DataStore;

  constructor(
    private readonly blobs: LocalDiskStore,
    private readonly directory: string,
  ) {}

  get datastore(): DataStore {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (see the module comment)
    const { FileStore } = require('@tus/file-store') as typeof import('@tus/file-store');
    return (this.store ??= new FileStore({ directory: this.directory }));
  }

  create(id: string, size: number, metadata: Record<string, string>, now: Date): Promise<void> {
    return createUpload(this.datastore, id, size, metadata, now);
  }

  storeId(uploadId: string): string {
    return uploadId;
  }

  private fileOf(id: string): string {
    if (!/^[0-9a-f]{32}$/.test(id)) throw new Error('invalid upload id');
    return path.join(this.directory, id);
  }

  async adopt(id: string, blobKey: string, size: number): Promise<void> {
    const from = this.fileOf(id);
    const target = this.blobs.localPath(blobKey);
    const s = await stat(from).catch(() => undefined);
    if (!s) {
      const there = await this.blobs.stat(blobKey);
      if (there?.size === size) return;
      throw new Error(`upload ${id} has no bytes and ${blobKey} is not complete`);
    }
    if (s.size !== size) throw new Error(`upload ${id} holds ${s.size} bytes, not ${size}`);
    // The bytes reach the disk before the rename makes them the master file.
    const fh = await open(from, 'r+');
    try {
      await fh.datasync();
    } finally {
      await fh.close();
    }
    try {
      await this.blobs.moveInto(from, target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      // Another file system: copy next to the target, then rename there.
      const tmp = `${target}.adopting`;
      await mkdir(path.dirname(target), { recursive: true });
      await pipeline(createReadStream(from), createWriteStream(tmp, { flush: true }));
      await this.blobs.moveInto(tmp, target);
      await rm(from, { force: true });
    }
  }

  async discard(id: string): Promise<void> {
    await rm(this.fileOf(id), { force: true });
    await rm(`${this.fileOf(id)}.json`, { force: true });
  }

  async offset(id: string): Promise<number | undefined> {
    return (await storedUpload(this.datastore, id))?.offset;
  }
}

class S3TusStorage implements TusStorage {
  readonly kind = 's3' as const;
  private store?: DataStore;

  constructor(private readonly blobs: S3BlobStore) {}

  get datastore(): DataStore {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (see the module comment)
    const { S3Store } = require('@tus/s3-store') as typeof import('@tus/s3-store');
    const s = this.blobs.settings;
    return (this.store ??= new S3Store({
      // Tags mark expiry for bucket lifecycle rules; Vidmill expires uploads itself, and several
      // S3-compatible stores lack object tagging.
      useTags: false,
      s3ClientConfig: {
        bucket: s.bucket,
        region: s.region,
        endpoint: s.endpoint,
        forcePathStyle: s.forcePathStyle,
        credentials: { accessKeyId: s.accessKey, secretAccessKey: s.secretKey },
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        maxAttempts: 3,
      },
    }));
  }

  create(id: string, size: number, metadata: Record<string, string>, now: Date): Promise<void> {
    return createUpload(this.datastore, id, size, metadata, now);
  }

  /** The multipart upload is made under the master's key itself (see the module comment). */
  storeId(_uploadId: string, blobKey: string): string {
    return blobKey;
  }

  async adopt(id: string, blobKey: string, size: number): Promise<void> {
    if (id !== blobKey) throw new Error('an S3 upload is adopted under its own key');
    const there = await this.blobs.stat(blobKey);
    if (there?.size !== size) throw new Error(`upload ${id} is not complete under its key`);
  }

  async discard(id: string, adopted: boolean): Promise<void> {
    if (!adopted) {
      try {
        await this.datastore.remove(id); // aborts the multipart upload; deletes the key and its info
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    for (const key of [`${id}.info`, `${id}.part`]) await this.blobs.delete(key);
    // @tus/s3-store keeps each upload's info in a per-process cache, cleared only by its own
    // completion and `remove`: one read between the completion and this discard (a HEAD, the
    // offset check) would otherwise keep it for good, a stale offset and memory per upload.
    await (this.datastore as unknown as { cache: { delete(key: string): Promise<void> } }).cache.delete(id);
  }

  /**
   * @tus/s3-store reports an upload whose info it can read but whose multipart upload is gone as
   * complete (offset = size). That is also the state of an upload half way through `discard`
   * (aborted, info not yet deleted), so a complete offset is believed only when the object is
   * there with every byte; otherwise the upload is being removed and is reported gone.
   */
  async offset(id: string): Promise<number | undefined> {
    const upload = await storedUpload(this.datastore, id);
    if (!upload || upload.size === undefined || upload.offset < upload.size) return upload?.offset;
    return (await this.blobs.stat(id))?.size === upload.size ? upload.offset : undefined;
  }
}
