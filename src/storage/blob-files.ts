/**
 * Moving whole files between platform storage and the local work directory, for tools that
 * read and write files (ffmpeg): `withLocalFile` gives a path to a stored object (the object's
 * own file on disk storage, a temporary download otherwise), `storeFile` uploads a local file in
 * parallel parts and returns its size and CRC-32C.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import { crc32cCombine, crc32cUpdate } from '../net/crc32c';
import type { BlobStore } from './blob-store';

/** Runs `fn` with a local path holding the object under `key`; a temporary copy is removed after. */
export async function withLocalFile<T>(blobs: BlobStore, key: string, workDir: string, fn: (file: string) => Promise<T>, signal?: AbortSignal): Promise<T> {
  const local = blobs.localPath?.(key);
  if (local) return fn(local);
  await mkdir(workDir, { recursive: true });
  const tmp = path.join(workDir, `download-${randomUUID()}${path.extname(key)}`);
  try {
    await pipeline(await blobs.read(key), createWriteStream(tmp), { signal });
    return await fn(tmp);
  } finally {
    await rm(tmp, { force: true });
  }
}

/** Uploads a local file under `key` (parts in parallel); returns its size and CRC-32C. */
export async function storeFile(blobs: BlobStore, key: string, file: string, opts: { concurrency?: number; signal?: AbortSignal } = {}): Promise<{ size: number; crc32c: number }> {
  const { size } = await stat(file);
  const upload = await blobs.createUpload(key, size);
  const crcs = new Array<number>(upload.partCount + 1).fill(0);
  let next = 1;
  const lane = async () => {
    while (next <= upload.partCount) {
      const n = next++;
      const { start, end } = upload.partRange(n);
      let crc = 0;
      const chunks = async function* () {
        if (end <= start) return;
        for await (const chunk of createReadStream(file, { start, end: end - 1, highWaterMark: 1024 * 1024 })) {
          crc = crc32cUpdate(crc, chunk as Buffer);
          yield chunk as Buffer;
        }
      };
      await upload.writePart(n, end > start ? chunks() : Buffer.alloc(0), opts.signal);
      crcs[n] = crc;
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? 4, upload.partCount) }, lane));
    await upload.complete();
  } catch (err) {
    await upload.abort().catch(() => undefined);
    throw err;
  }
  let crc = 0;
  for (let n = 1; n <= upload.partCount; n++) {
    const { start, end } = upload.partRange(n);
    crc = crc32cCombine(crc, crcs[n]!, end - start);
  }
  return { size, crc32c: crc >>> 0 };
}
