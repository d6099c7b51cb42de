/**
 * BlobStore on the local file system (the embedded default): objects are files under
 * `<root>/<key>`. An upload stages in `<root>/.uploads/<id>/`: `data` (pre-sized to the object's
 * size; parts land with positioned writes, in any order and in parallel), `parts` (one line per
 * part made durable: written, then fdatasync'ed, then logged) and `meta.json`. `complete()`
 * renames `data` onto the key, so readers see either nothing or the whole object.
 *
 * Throughput: streamed chunks (16 KiB from a TLS socket) are gathered into positioned `writev`
 * calls of about 128 KiB, one in flight per part while the next fills (about 256 KiB held per
 * part), instead of one thread-pool write per chunk. The fdatasync calls of an upload's parts are
 * coalesced (group commit): one runs at a time, and parts finishing meanwhile share the next
 * one, which starts after all their writes completed; an fdatasync flushes the whole file, so
 * each part is still durable before its line is logged, without parallel syncs of the same
 * file tying up the thread pool (which also serves DNS lookups and every other file operation).
 */
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { appendFile, FileHandle, mkdir, open, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import {
  assertPartLength,
  assertRange,
  assertValidKey,
  assertValidSize,
  BlobNotFoundError,
  BlobStat,
  BlobStore,
  ByteRange,
  choosePartSize,
  partCountOf,
  partRangeOf,
  Upload,
  UploadDescriptor,
} from './blob-store';

const STAGING = '.uploads';
/**
 * Streamed chunks are written in batches of this many bytes (or IOV_BATCH chunks). Measured on
 * the ingest benchmark: 128-192 KiB cost least CPU; 16 KiB writes (one per TLS record) and 1 MiB
 * batches both cost about half as much again.
 */
const WRITE_BATCH = 128 * 1024;
const IOV_BATCH = 512;

export class LocalDiskStore implements BlobStore {
  readonly kind = 'disk' as const;

  constructor(readonly root: string) {}

  private pathOf(key: string): string {
    assertValidKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  /** The file of a stored object, for tools that read files (ffmpeg). Read only. */
  localPath(key: string): string {
    return this.pathOf(key);
  }

  private stagingDir(id: string): string {
    if (!/^[0-9a-f-]{36}$/.test(id)) throw new Error('invalid upload id');
    return path.join(this.root, STAGING, id);
  }

  async createUpload(key: string, size: number, opts: { partSize?: number } = {}): Promise<Upload> {
    assertValidKey(key);
    assertValidSize(size);
    const partSize = opts.partSize ?? choosePartSize(size);
    if (!Number.isSafeInteger(partSize) || partSize < 1) throw new Error('partSize must be a positive integer');
    const descriptor: UploadDescriptor = { store: 'disk', id: randomUUID(), key, size, partSize };
    const dir = this.stagingDir(descriptor.id);
    await mkdir(dir, { recursive: true });
    const data = await open(path.join(dir, 'data'), 'w');
    try {
      await data.truncate(size);
    } finally {
      await data.close();
    }
    await writeFile(path.join(dir, 'parts'), '');
    await writeFile(path.join(dir, 'meta.json'), JSON.stringify(descriptor));
    return new DiskUpload(this, descriptor, dir);
  }

  async resumeUpload(descriptor: UploadDescriptor): Promise<Upload> {
    const dir = this.stagingDir(descriptor.id);
    let meta: UploadDescriptor;
    try {
      meta = JSON.parse(await readFile(path.join(dir, 'meta.json'), 'utf8')) as UploadDescriptor;
    } catch {
      throw new Error(`upload ${descriptor.id} no longer exists`);
    }
    if (meta.key !== descriptor.key || meta.size !== descriptor.size || meta.partSize !== descriptor.partSize) {
      throw new Error(`upload ${descriptor.id} does not match its descriptor`);
    }
    return new DiskUpload(this, meta, dir);
  }

  async put(key: string, data: Buffer): Promise<void> {
    const target = this.pathOf(key);
    const tmp = path.join(this.root, STAGING, `put-${randomUUID()}`);
    await mkdir(path.dirname(tmp), { recursive: true });
    await writeFile(tmp, data, { flush: true });
    await this.moveInto(tmp, target);
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    assertRange(range);
    let handle;
    try {
      handle = await open(this.pathOf(key), constants.O_RDONLY);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFoundError(key);
      throw err;
    }
    return handle.createReadStream({ start: range?.start, end: range?.end });
  }

  async stat(key: string): Promise<BlobStat | undefined> {
    try {
      const s = await stat(this.pathOf(key));
      if (!s.isFile()) return undefined;
      return { size: s.size, lastModified: s.mtime, etag: `"${s.ino.toString(16)}-${s.size.toString(16)}-${Math.floor(s.mtimeMs).toString(16)}"` };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    const target = this.pathOf(key);
    await rm(target, { force: true });
    await this.pruneEmptyParents(path.dirname(target));
  }

  async close(): Promise<void> {}

  /** Renames a finished file onto its key (replacing any previous object). */
  async moveInto(from: string, target: string): Promise<void> {
    await mkdir(path.dirname(target), { recursive: true });
    await rename(from, target);
  }

  private async pruneEmptyParents(dir: string): Promise<void> {
    const root = path.resolve(this.root);
    for (let d = path.resolve(dir); d.startsWith(root + path.sep); d = path.dirname(d)) {
      try {
        await rmdir(d);
      } catch {
        return;
      }
    }
  }
}

class DiskUpload implements Upload {
  readonly partCount: number;
  private readonly syncs = new CoalescedSync();

  constructor(
    private readonly store: LocalDiskStore,
    readonly descriptor: UploadDescriptor,
    private readonly dir: string,
  ) {
    this.partCount = partCountOf(descriptor.size, descriptor.partSize);
  }

  partRange(partNumber: number) {
    return partRangeOf(this.descriptor, partNumber);
  }

  async completedParts(): Promise<number[]> {
    const text = await readFile(path.join(this.dir, 'parts'), 'utf8');
    const done = new Set<number>();
    for (const line of text.split('\n')) {
      const n = Number(line);
      if (line && Number.isInteger(n) && n >= 1 && n <= this.partCount) done.add(n);
    }
    return [...done].sort((a, b) => a - b);
  }

  async writePart(partNumber: number, data: Buffer | AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<void> {
    const { start, end } = this.partRange(partNumber);
    const expected = end - start;
    const file = await open(path.join(this.dir, 'data'), 'r+');
    try {
      let received = 0;
      if (Buffer.isBuffer(data)) {
        signal?.throwIfAborted();
        if (data.length > expected) throw new Error(`part ${partNumber} is longer than ${expected} bytes`);
        await writeAllAt(file, [data], start);
        received = data.length;
      } else {
        // Batches of chunks, one batch's write in flight while the next one fills.
        let batch: Uint8Array[] = [];
        let batchBytes = 0;
        let batchStart = start;
        let inFlight: Promise<void> = Promise.resolve();
        try {
          for await (const chunk of data) {
            signal?.throwIfAborted();
            if (received + chunk.length > expected) throw new Error(`part ${partNumber} is longer than ${expected} bytes`);
            received += chunk.length;
            if (chunk.length === 0) continue;
            batch.push(chunk);
            batchBytes += chunk.length;
            if (batchBytes >= WRITE_BATCH || batch.length >= IOV_BATCH) {
              await inFlight;
              inFlight = writeAllAt(file, batch, batchStart);
              batchStart += batchBytes;
              batch = [];
              batchBytes = 0;
            }
          }
          await inFlight;
          if (batch.length) await writeAllAt(file, batch, batchStart);
        } catch (err) {
          await inFlight.catch(() => undefined); // no write may outlive the handle
          throw err;
        }
      }
      assertPartLength(received, expected);
      await this.syncs.sync(file);
    } finally {
      await file.close();
    }
    await appendFile(path.join(this.dir, 'parts'), `${partNumber}\n`);
  }

  async complete(): Promise<void> {
    const done = await this.completedParts();
    if (done.length !== this.partCount) {
      throw new Error(`upload ${this.descriptor.id} is missing ${this.partCount - done.length} of ${this.partCount} parts`);
    }
    await this.store.moveInto(path.join(this.dir, 'data'), path.join(this.store.root, ...this.descriptor.key.split('/')));
    await rm(this.dir, { recursive: true, force: true });
  }

  async abort(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Writes every byte of `chunks` at `position` (positioned writev, continued after a short write). */
async function writeAllAt(file: FileHandle, chunks: Uint8Array[], position: number): Promise<void> {
  let rest = chunks;
  let left = chunks.reduce((n, c) => n + c.length, 0);
  while (left > 0) {
    const { bytesWritten } = await file.writev(rest, position);
    if (bytesWritten <= 0) throw new Error('the disk accepted no bytes');
    position += bytesWritten;
    left -= bytesWritten;
    if (left === 0) return;
    // Drop what was written, keeping the unwritten end of a partly written chunk.
    let skip = bytesWritten;
    let i = 0;
    // left > 0, so the chunks still hold more than `skip` bytes and `i` stays within them.
    while (skip >= rest[i]!.length) skip -= rest[i++]!.length;
    rest = [rest[i]!.subarray(skip), ...rest.slice(i + 1)];
  }
}

/**
 * fdatasync of one file, coalesced: at most one runs at a time, and every caller arriving while
 * it runs shares the next one, which starts after all of them called (so after their writes
 * completed). The sync goes through the handle of one of the waiting callers, all of which stay
 * open until it settles; fdatasync flushes the file's data whichever handle it is called on.
 */
class CoalescedSync {
  private running = false;
  private waiting: { file: FileHandle; resolve: () => void; reject: (err: unknown) => void }[] = [];

  sync(file: FileHandle): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ file, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    while (this.waiting.length) {
      const group = this.waiting;
      this.waiting = [];
      try {
        await group[0]!.file.datasync(); // `waiting` was not empty
        for (const w of group) w.resolve();
      } catch (err) {
        for (const w of group) w.reject(err);
      }
    }
    this.running = false;
  }
}
