/**
 * The ranged parallel copy engine (video in): copies a RangeSource into a BlobStore Upload with
 * `concurrency` parts in flight, each part streamed straight from its ranged response into the
 * store (memory per part: the stream's buffers on disk, one part on S3), retried on its own with
 * back-off, and checksummed with CRC-32C as it passes. Part CRCs are combined in file order into
 * the CRC of the whole file, so parts may land in any order.
 *
 * Resume: parts the upload already holds AND whose CRC the caller kept (`knownParts`, from
 * `onPart` of the earlier run) are skipped; any other part is fetched again.
 *
 * The checksum is compared before `complete()`: on a mismatch the upload stays open with all its
 * parts, so a restart that skips the check can complete it without copying again.
 */
import { backoffMs } from '../jobs/backoff';
import { crc32cCombine, crc32cUpdate } from '../net/crc32c';
import { RangeSource, SourceChangedError, SourceInfo } from '../net/https-range-source';
import { isNonPublicAddressRefusal } from '../net/outbound-url';
import type { Upload } from './blob-store';
import { recordBytesCopied } from '../shared/metrics';
import { sharedAbortController } from '../shared/abort';

export interface CopyProgress {
  bytesDone: number;
  size: number;
  partsDone: number;
  partCount: number;
  /** 0..100, whole numbers. */
  percentage: number;
}

export interface CopyOptions {
  source: RangeSource;
  /** The validator and size pinned when the copy began (from `source.probe()`). */
  pinned: SourceInfo;
  upload: Upload;
  /** Parts in flight at once (1..32). */
  concurrency: number;
  /** CRC-32C of parts stored by an earlier run, by part number. */
  knownParts?: ReadonlyMap<number, number>;
  /** Attempts per part before the copy fails; default 5. */
  partAttempts?: number;
  /** Back-off before retry n (1-based) of a part; default 200 ms * 2^(n-1), capped at 10 s. */
  retryDelayMs?: (retry: number) => number;
  /** Expected CRC-32C of the whole file (0..2^32-1); compared before completing. */
  expectedCrc32c?: number;
  onProgress?: (p: CopyProgress) => void;
  /** Called when a part is stored, with its CRC: persist it to resume later. */
  onPart?: (partNumber: number, crc32c: number) => void | Promise<void>;
  signal?: AbortSignal;
  /** Counts the bytes of every stored part in `vidmill_bytes_copied_total{direction}` (not counted when absent). */
  direction?: 'in' | 'out';
}

export interface CopyResult {
  size: number;
  crc32c: number;
  /** Parts fetched in this run (not skipped). */
  partsCopied: number;
  /** Part attempts that failed and were retried. */
  retries: number;
}

export class ChecksumMismatchError extends Error {
  override name = 'ChecksumMismatchError';
  constructor(
    readonly expected: number,
    readonly actual: number,
  ) {
    super(`CRC-32C of the copied file is ${actual} (0x${actual.toString(16).padStart(8, '0')}), expected ${expected}`);
  }
}

export class CopyFailedError extends Error {
  override name = 'CopyFailedError';
  constructor(
    message: string,
    readonly cause?: unknown,
  ) {
    super(message);
  }
}

export const MAX_CONCURRENCY = 32;
/** The default back-off between attempts of one part: 200 ms, doubling, capped at 10 s. */
const PART_RETRY_BACKOFF = { baseMs: 200, maxMs: 10_000 };

export async function copyRanges(opts: CopyOptions): Promise<CopyResult> {
  const { source, pinned, upload, signal } = opts;
  const size = upload.descriptor.size;
  if (pinned.size !== size) throw new Error(`the upload is for ${size} bytes but the source has ${pinned.size}`);
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1 || opts.concurrency > MAX_CONCURRENCY) {
    throw new RangeError(`concurrency must be 1..${MAX_CONCURRENCY}`);
  }
  const attempts = opts.partAttempts ?? 5;
  const delay = opts.retryDelayMs ?? ((n: number) => backoffMs(n, PART_RETRY_BACKOFF));

  const crcs = new Map<number, number>();
  const stored = new Set(await upload.completedParts());
  for (const [n, crc] of opts.knownParts ?? []) if (stored.has(n)) crcs.set(n, crc);

  const partLength = (n: number) => {
    const r = upload.partRange(n);
    return r.end - r.start;
  };
  let bytesDone = 0;
  for (const n of crcs.keys()) bytesDone += partLength(n);
  const report = () =>
    opts.onProgress?.({
      bytesDone,
      size,
      partsDone: crcs.size,
      partCount: upload.partCount,
      percentage: size === 0 ? 100 : Math.floor((bytesDone / size) * 100),
    });
  report();

  const todo: number[] = [];
  for (let n = 1; n <= upload.partCount; n++) if (!crcs.has(n)) todo.push(n);
  let retries = 0;
  // One failure stops the others: a changed source or an abort fails the whole copy at once.
  const inner = sharedAbortController();
  const onOuterAbort = () => inner.abort(signal?.reason);
  signal?.addEventListener('abort', onOuterAbort, { once: true });
  let firstError: unknown;

  const copyPart = async (n: number): Promise<void> => {
    const { start, end } = upload.partRange(n);
    for (let attempt = 1; ; attempt++) {
      inner.signal.throwIfAborted();
      try {
        let crc = 0;
        if (end > start) {
          const body = await source.openRange(start, end - 1, pinned, inner.signal);
          const hashed = (async function* () {
            for await (const chunk of body) {
              crc = crc32cUpdate(crc, chunk);
              yield chunk;
            }
          })();
          await upload.writePart(n, hashed, inner.signal);
        } else {
          await upload.writePart(n, Buffer.alloc(0), inner.signal);
        }
        crcs.set(n, crc);
        bytesDone += end - start;
        if (opts.direction) recordBytesCopied(opts.direction, end - start);
        await opts.onPart?.(n, crc);
        report();
        return;
      } catch (err) {
        // A connection the outbound guard refused is refused again: no retry.
        if (inner.signal.aborted || err instanceof SourceChangedError || isNonPublicAddressRefusal(err) || attempt >= attempts) throw err;
        retries++;
        await sleep(delay(attempt), inner.signal);
      }
    }
  };

  let next = 0;
  const lane = async () => {
    while (next < todo.length && !inner.signal.aborted) {
      const n = todo[next++]!; // next < length: checked by the loop
      try {
        await copyPart(n);
      } catch (err) {
        if (firstError === undefined) firstError = err;
        inner.abort(err);
        return;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, Math.max(1, todo.length)) }, lane));
  } finally {
    signal?.removeEventListener('abort', onOuterAbort);
  }
  if (firstError !== undefined) {
    if (signal?.aborted) throw signal.reason ?? firstError;
    throw firstError instanceof SourceChangedError
      ? firstError
      : // eslint-disable-next-line @typescript-eslint/no-base-to-string -- anything may be thrown; the message shows it as String() does
        new CopyFailedError(`copying failed: ${(firstError as Error)?.message ?? String(firstError)}`, firstError);
  }
  signal?.throwIfAborted();

  let crc = 0;
  for (let n = 1; n <= upload.partCount; n++) crc = crc32cCombine(crc, crcs.get(n)!, partLength(n));
  if (opts.expectedCrc32c !== undefined && opts.expectedCrc32c >>> 0 !== crc) throw new ChecksumMismatchError(opts.expectedCrc32c, crc);
  await upload.complete();
  return { size, crc32c: crc, partsCopied: todo.length, retries };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error); // an AbortSignal's reason: an AbortError unless the caller aborted with its own
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
