/**
 * Platform storage (videos, thumbnails, frames): local disk under the data directory by default,
 * any S3-compatible store in scale-out. Both implement BlobStore.
 *
 * Large objects are written through an Upload of fixed-size parts that may be written in
 * parallel and in any order (positioned writes on disk, multipart upload on S3). The upload's
 * `descriptor` is plain JSON: keep it (in a job payload) and `resumeUpload` it after a crash;
 * `completedParts()` says which parts are already stored, so a restarted copy fetches only the
 * rest. Nothing is visible under `key` until `complete()`.
 */
import type { Readable } from 'node:stream';

export interface BlobStat {
  size: number;
  lastModified: Date;
  etag?: string;
}

/** Inclusive byte range, as in HTTP `Range: bytes=start-end`; `end` absent = to the end. */
export interface ByteRange {
  start: number;
  end?: number;
}

export interface UploadDescriptor {
  store: 'disk' | 's3';
  /** The store's upload id (S3 UploadId, or the disk staging directory's name). */
  id: string;
  key: string;
  size: number;
  partSize: number;
}

export interface Upload {
  readonly descriptor: UploadDescriptor;
  /** Number of parts: ceil(size / partSize), at least 1. */
  readonly partCount: number;
  /** Byte range [start, end) of part `partNumber` (1-based). */
  partRange(partNumber: number): { start: number; end: number };
  /** Part numbers already stored, ascending. */
  completedParts(): Promise<number[]>;
  /**
   * Stores part `partNumber` (exactly its length, else an error). A buffer, or chunks streamed
   * in order (the disk store writes them as they come; S3 collects at most one part).
   */
  writePart(partNumber: number, data: Buffer | AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<void>;
  /** Makes the object visible under `key`; every part must be stored. */
  complete(): Promise<void>;
  /** Discards the parts written so far. */
  abort(): Promise<void>;
}

export interface BlobStore {
  readonly kind: 'disk' | 's3';
  createUpload(key: string, size: number, opts?: { partSize?: number }): Promise<Upload>;
  resumeUpload(descriptor: UploadDescriptor): Promise<Upload>;
  /** Small objects in one go (thumbnails, frames). */
  put(key: string, data: Buffer, opts?: { contentType?: string }): Promise<void>;
  /** Throws BlobNotFoundError when absent. */
  read(key: string, range?: ByteRange): Promise<Readable>;
  stat(key: string): Promise<BlobStat | undefined>;
  /** Idempotent: deleting an absent key is fine. */
  delete(key: string): Promise<void>;
  /** Releases connections. */
  close(): Promise<void>;
  /** Stores that keep objects as local files give their path (read only); others have none. */
  localPath?(key: string): string;
}

export class BlobNotFoundError extends Error {
  override name = 'BlobNotFoundError';
  constructor(readonly key: string) {
    super(`no stored object under "${key}"`);
  }
}

/**
 * True when an upload is gone: completed or aborted before. The disk store says its staging
 * "no longer exists"; S3 answers NoSuchUpload.
 */
export function isUploadGone(err: unknown): boolean {
  const e = err as { name?: string; message?: string };
  return e?.name === 'NoSuchUpload' || /no longer exists/.test(e?.message ?? '');
}

export const MIB = 1024 * 1024;
/** S3's rules: parts of at least 5 MiB (but the last), at most 10,000 parts. */
export const MIN_PART_SIZE = 5 * MIB;
export const MAX_PARTS = 10_000;
export const DEFAULT_PART_SIZE = 8 * MIB;

/** The part size for `size` bytes: the wanted size, grown (in whole MiB) to stay within 10,000 parts. */
export function choosePartSize(size: number, wanted = DEFAULT_PART_SIZE): number {
  const floor = Math.ceil(size / MAX_PARTS / MIB) * MIB;
  return Math.max(wanted, floor, 1);
}

export function partCountOf(size: number, partSize: number): number {
  return Math.max(1, Math.ceil(size / partSize));
}

export function partRangeOf(d: Pick<UploadDescriptor, 'size' | 'partSize'>, partNumber: number): { start: number; end: number } {
  const count = partCountOf(d.size, d.partSize);
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > count) throw new RangeError(`part ${partNumber} is outside 1..${count}`);
  const start = (partNumber - 1) * d.partSize;
  return { start, end: Math.min(d.size, start + d.partSize) };
}

const KEY_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Keys are relative paths of safe segments (`videos/<id>/master`): letters, digits, `.`, `_`,
 * `-`, no empty, `.` or `..` segment, at most 512 characters. The disk store relies on this to
 * stay inside its root.
 */
export function assertValidKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > 512) throw new Error('invalid blob key: 1..512 characters');
  for (const segment of key.split('/')) {
    if (!KEY_SEGMENT.test(segment) || segment === '.' || segment === '..') throw new Error(`invalid blob key "${key}"`);
  }
}

export function assertValidSize(size: number): void {
  if (!Number.isSafeInteger(size) || size < 0) throw new Error('upload size must be a non-negative integer');
}

export function assertRange(range: ByteRange | undefined): void {
  if (!range) return;
  const ok = Number.isSafeInteger(range.start) && range.start >= 0 && (range.end === undefined || (Number.isSafeInteger(range.end) && range.end >= range.start));
  if (!ok) throw new RangeError('invalid byte range');
}

/** Collects streamed chunks of a part, refusing more than `expected` bytes. */
export async function collectPart(data: Buffer | AsyncIterable<Uint8Array>, expected: number, signal?: AbortSignal): Promise<Buffer> {
  if (Buffer.isBuffer(data)) {
    assertPartLength(data.length, expected);
    return data;
  }
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of data) {
    signal?.throwIfAborted();
    length += chunk.length;
    if (length > expected) break;
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
  }
  assertPartLength(length, expected);
  return Buffer.concat(chunks, length);
}

export function assertPartLength(actual: number, expected: number): void {
  if (actual !== expected) throw new Error(`part length ${actual} differs from the expected ${expected} bytes`);
}
