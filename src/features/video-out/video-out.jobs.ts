/**
 * The video-out feature's jobs. `video-out.copy` copies a stored video file to the customer's
 * bucket as an S3 multipart upload (CreateMultipartUpload, UploadPart in parallel,
 * CompleteMultipartUpload) with the ranged copy engine, reading platform storage by ranges. The CRC-32C of what was sent is
 * compared with the video's stored `crc32c` before the upload is completed.
 *
 * Resumable at any point: the upload (its UploadId) and the CRC of every part sent are rows, so
 * a worker killed mid-copy leaves a job whose lease expires; the next run asks ListParts and
 * sends only the missing parts. A run that died after CompleteMultipartUpload finds the upload
 * gone and the object in place, and records the copy DONE.
 *
 * `output` moves INITIAL -> IN_PROGRESS -> DONE | FAILED here, each change with its `video_out.*`
 * event in the same transaction; DONE also enqueues `video-out.bill` (the bytes sent accrue as
 * DOWNLOAD_S3). Transient failures are retried by the queue; a refused bucket, a missing bucket,
 * an endpoint the outbound guard refuses at connect time or a checksum mismatch is FAILED at once.
 *
 * Also here: `video-out.abort-upload` (abandon and delete release the multipart upload),
 * `video-out.bill`, and the copy's `onGiveUp` for a copy whose worker was lost on its last
 * attempt (FAILED with its event, never left IN_PROGRESS).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { s3Sdk } from '../../storage/s3-sdk';
import type { Db } from '../../db/database';
import { BoundJob, defineJob } from '../../jobs/job-definition';
import type { JobHandler } from '../../jobs/worker';
import type { JobQueue } from '../../jobs/job-queue';
import { crc32cCombine } from '../../net/crc32c';
import { isNetworkFailure } from '../../net/network-failure';
import { isNonPublicAddressRefusal } from '../../net/outbound-url';
import { SourceChangedError } from '../../net/https-range-source';
import { BlobNotFoundError, BlobStore, choosePartSize, isUploadGone, MIB, partCountOf, partRangeOf, Upload, UploadDescriptor } from '../../storage/blob-store';
import { BlobRangeSource } from '../../storage/blob-range-source';
import { createBucketClient } from '../../storage/bucket-access';
import { MultipartTarget, S3Upload } from '../../storage/s3-blob-store';
import type { Clock } from '../../shared/clock';
import { ProgressEta, writeProgress } from '../../shared/progress-eta';
import { ChecksumMismatchError, CopyFailedError, CopyProgress, copyRanges } from '../../storage/copy-engine';
import { findVideo, OperationStatus, retriesLeft, RUNNING, StageGuard, stageError, StageError, Video, VideoEvents } from '../videos';
import type { AbortUploadPayload, BillCopyPayload, VideoOutJobPayload, VideoOutService } from './video-out.service';
import { VideoOutOperation, videoOutStore } from './video-out.store';

/** Parts in flight are buffered (UploadPart needs a known length): at most this much memory per copy. */
const MEMORY_BUDGET = 128 * MIB;
const MAX_LANES = 8;

/** Parts in flight for a part size: as many as the memory budget allows, 1..8. */
export const lanesFor = (partSize: number) => Math.max(1, Math.min(MAX_LANES, Math.floor(MEMORY_BUDGET / partSize)));

export interface VideoOutJobDeps {
  db: Db;
  clock: Clock;
  blobs: BlobStore;
  jobs: JobQueue;
  videoOut: VideoOutService;
}

interface Failure {
  error: StageError;
  /** Worth another attempt of the job. */
  transient: boolean;
}

/** The bucket client of a copy; uploads send only the checksums S3 requires (S3-compatible stores). */
function bucketClient(videoOut: VideoOutService, op: Pick<VideoOutOperation, 'videoId' | 'id' | 'sealedBucket'>): { client: S3Client; target: MultipartTarget } {
  const settings = videoOut.bucketOf(op);
  const client = createBucketClient(settings, videoOut.policy, { checksums: 'WHEN_REQUIRED', maxAttempts: 3, requestTimeoutMs: 120_000 });
  return { client, target: { client, bucket: settings.bucket } };
}

/** The output is the copy `operationId`'s (not replaced or abandoned meanwhile) and in one of `states`. */
function ofCopy(operationId: string, states: readonly OperationStatus[]): StageGuard {
  return async (v, trx) => {
    const status = v.output?.status;
    return status !== undefined && states.includes(status) && (await videoOutStore.byVideoId(trx, v.id))?.id === operationId;
  };
}

/** The stored file of a video, when there is one: a master copied in, or a derived video processed. */
export function storedFileOf(v: Video | undefined): { key: string; size: number; name: string; type: string; crc32c?: number } | undefined {
  if (!v?.blobKey || !v.file) return undefined;
  const ready = v.kind === 'MASTER' ? v.upload?.status === 'DONE' : v.processing?.status === 'DONE';
  if (!ready) return undefined;
  return { key: v.blobKey, size: v.file.size, name: v.file.name, type: v.file.type, crc32c: v.crc32c };
}

/** The copy to a bucket; its runs before a transient failure is recorded as FAILED (a kill counts as a run). */
export const VIDEO_OUT_COPY_JOB = defineJob<VideoOutJobPayload, VideoOutJobDeps>({
  kind: 'video-out.copy',
  attempts: 4,
  run: videoOutCopy,
  onGiveUp:
    ({ videoOut: { output } }) =>
    async (trx, { videoId, operationId }) => {
      await output.whenInWithin(trx, videoId, ofCopy(operationId, RUNNING), (trx, v, now) => output.failed(trx, v, stageError('videoOut', 'COPY_FAILED'), VideoEvents.videoOut.failed, now));
    },
});

/** Aborts the multipart upload of an abandoned or deleted copy in the customer's bucket. */
export const VIDEO_OUT_ABORT_JOB = defineJob<AbortUploadPayload, VideoOutJobDeps>({ kind: 'video-out.abort-upload', attempts: 8, run: ({ videoOut }) => videoOutAbort(videoOut) });

/** Accrues the bytes of a finished copy to billing (DOWNLOAD_S3). */
export const VIDEO_OUT_BILL_JOB = defineJob<BillCopyPayload, VideoOutJobDeps>({
  kind: 'video-out.bill',
  attempts: 10,
  run:
    ({ videoOut }) =>
    (p) =>
      videoOut.billCopy(p),
});

/** The video-out feature's jobs, bound for the worker. */
export function videoOutJobs(deps: VideoOutJobDeps): BoundJob[] {
  return [VIDEO_OUT_COPY_JOB.bind(deps), VIDEO_OUT_ABORT_JOB.bind(deps), VIDEO_OUT_BILL_JOB.bind(deps)];
}

function videoOutCopy(deps: VideoOutJobDeps): JobHandler<VideoOutJobPayload> {
  const { db, clock, blobs, videoOut } = deps;
  const output = videoOut.output;
  return async ({ videoId, operationId }, ctx) => {
    const op = await videoOutStore.byVideoId(db, videoId);
    const video = await findVideo(db, videoId);
    if (!op || op.id !== operationId || !video?.output) return; // abandoned, replaced or deleted meanwhile
    if (video.output.status === 'DONE' || video.output.status === 'FAILED') return;
    if (video.output.status === 'INITIAL') await markStarted(videoId);
    const file = storedFileOf(video);
    if (!file) return markFailed(videoId, operationId, stageError('videoOut', 'SOURCE_NOT_AVAILABLE'));

    const { client, target } = bucketClient(videoOut, op);
    // Progress and time left from the bytes sent, written once a second (advisory: the final
    // state is written in a transaction below; a late write cannot undo it).
    const eta = new ProgressEta({ label: 'video-out' });
    const writes = writeProgress(eta, (e) => output.progress(videoId, e), {
      onError: (err) => ctx.log.warn({ err }, 'video out: progress write failed'),
    });
    try {
      const source = new BlobRangeSource(blobs, file.key);
      const pinned = await source.probe();
      if (pinned.size !== op.size) throw new SourceChangedError(`the stored file has ${pinned.size} bytes, the copy was created for ${op.size}`);
      const upload = await openUpload(op, target, client);
      if (!upload) return; // the copy went away while the upload was being created (aborted again)
      const result = await copyRanges({
        source,
        pinned,
        upload,
        concurrency: lanesFor(upload.descriptor.partSize),
        knownParts: await videoOutStore.parts(db, videoId),
        expectedCrc32c: file.crc32c,
        onPart: (n, crc) => videoOutStore.recordPart(db, videoId, n, crc),
        onProgress: (p: CopyProgress) => eta.observe(p.bytesDone / p.size),
        signal: ctx.signal,
        direction: 'out',
      });
      await writes.stop();
      ctx.log.info({ videoId, key: op.objectKey, size: result.size, partsCopied: result.partsCopied, retries: result.retries }, 'video out: copy done');
      await markDone(videoId, operationId, result.size);
      eta.finish();
    } catch (err) {
      await writes.stop();
      if (ctx.signal.aborted) throw err; // lease lost or worker stopping: handed back, resumed later
      const current = await videoOutStore.byVideoId(db, videoId);
      if (!current || current.id !== operationId) return; // abandoned or deleted while copying
      if (targetUploadGone(err)) {
        // Completed by an earlier run that died before recording it, or aborted in the bucket.
        if (await completedEarlier(current, target, file.crc32c)) return markDone(videoId, operationId, current.size);
        await videoOutStore.setUpload(db, videoId, operationId, null, clock.now());
        await videoOutStore.forgetParts(db, videoId);
      }
      // A checksum mismatch sends every part again on a restart (what was read may have been bad).
      if (err instanceof ChecksumMismatchError) await videoOutStore.forgetParts(db, videoId);
      const failure = classify(err);
      if (retriesLeft(ctx, failure.transient)) {
        ctx.log.warn({ videoId, err, attempt: ctx.job.attempts }, 'video out: copy attempt failed, will retry');
        throw err;
      }
      ctx.log.warn({ videoId, code: failure.error.code, err }, 'video out: copy failed');
      await markFailed(videoId, operationId, failure.error);
    } finally {
      await writes.stop();
      client.destroy();
    }
  };

  async function markStarted(videoId: string): Promise<void> {
    await output.start(videoId, VideoEvents.videoOut.started);
  }

  async function markDone(videoId: string, operationId: string, bytes: number): Promise<void> {
    await output.whenIn(videoId, ofCopy(operationId, ['INITIAL', 'IN_PROGRESS', 'FAILED']), async (trx, v, now) => {
      await output.done(trx, v, VideoEvents.videoOut.done, now);
      // The upload is an object now: nothing left to resume or abort.
      await videoOutStore.setUpload(trx, videoId, operationId, null, now);
      await videoOutStore.forgetParts(trx, videoId);
      const bill: BillCopyPayload = { teamId: v.teamId, videoId, operationId, bytes };
      await VIDEO_OUT_BILL_JOB.enqueue(deps.jobs, trx, bill);
    });
  }

  async function markFailed(videoId: string, operationId: string, error: StageError): Promise<void> {
    await output.whenIn(videoId, ofCopy(operationId, RUNNING), (trx, v, now) => output.failed(trx, v, error, VideoEvents.videoOut.failed, now));
  }

  /** The upload of an earlier run (resumed), or a new one recorded before any part is sent. */
  async function openUpload(op: VideoOutOperation, target: MultipartTarget, client: S3Client): Promise<Upload | undefined> {
    // A resumed upload that is gone fails at ListParts; the caller checks whether it had completed.
    if (op.upload) return new S3Upload(target, op.upload);
    const out = await client.send(new (s3Sdk().CreateMultipartUploadCommand)({ Bucket: target.bucket, Key: op.objectKey, ContentType: op.contentType }));
    if (!out.UploadId) throw new Error('CreateMultipartUpload returned no UploadId');
    const descriptor: UploadDescriptor = { store: 's3', id: out.UploadId, key: op.objectKey, size: op.size, partSize: choosePartSize(op.size) };
    const upload = new S3Upload(target, descriptor);
    if (!(await videoOutStore.setUpload(db, op.videoId, op.id, descriptor, clock.now()))) {
      await upload.abort().catch(() => undefined);
      return undefined;
    }
    return upload;
  }

  /**
   * True when the object is in the bucket with the copy's size and every part's CRC is known and
   * combines into the video's CRC-32C: the upload was completed by a run that died right after.
   */
  async function completedEarlier(op: VideoOutOperation, target: MultipartTarget, expectedCrc: number | undefined): Promise<boolean> {
    if (!op.upload) return false;
    const size = await target.client
      .send(new (s3Sdk().HeadObjectCommand)({ Bucket: target.bucket, Key: op.objectKey }))
      .then((o) => Number(o.ContentLength ?? -1))
      .catch(() => -1);
    if (size !== op.size) return false;
    const parts = await videoOutStore.parts(db, op.videoId);
    const count = partCountOf(op.size, op.upload.partSize);
    let crc = 0;
    for (let n = 1; n <= count; n++) {
      const part = parts.get(n);
      if (part === undefined) return false;
      const { start, end } = partRangeOf(op.upload, n);
      crc = crc32cCombine(crc, part, end - start);
    }
    return expectedCrc === undefined || expectedCrc >>> 0 === crc >>> 0;
  }
}

/** The customer's multipart upload is gone (the copy engine wraps what the store threw). */
function targetUploadGone(err: unknown): boolean {
  return isUploadGone(err) || (err instanceof CopyFailedError && isUploadGone(err.cause));
}

const REFUSED = new Set(['AccessDenied', 'Forbidden', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'InvalidToken', 'ExpiredToken', 'AllAccessDisabled']);
/** What a failed copy is recorded as, and whether another attempt could succeed (the cause itself goes to the log). */
export function classify(err: unknown): Failure {
  if (err instanceof ChecksumMismatchError) return { transient: false, error: stageError('videoOut', 'CHECKSUM_MISMATCH') };
  if (err instanceof SourceChangedError || err instanceof BlobNotFoundError) return { transient: false, error: stageError('videoOut', 'SOURCE_NOT_AVAILABLE') };
  const cause = (err instanceof CopyFailedError ? err.cause : err) as { name?: string; $metadata?: { httpStatusCode?: number } };
  const status = cause?.$metadata?.httpStatusCode;
  if (status === 401 || status === 403 || REFUSED.has(cause?.name ?? '')) return { transient: false, error: stageError('videoOut', 'OUTPUT_ACCESS_DENIED') };
  if (cause?.name === 'NoSuchBucket') return { transient: false, error: stageError('videoOut', 'BUCKET_NOT_FOUND') };
  if (isNonPublicAddressRefusal(cause)) return { transient: false, error: stageError('videoOut', 'INVALID_BUCKET_ENDPOINT') };
  // One fixed message whatever the network said: no errno or address tells closed ports from open ones.
  if (isNetworkFailure(err)) return { transient: true, error: stageError('videoOut', 'VIDEO_OUT_BUCKET_UNREACHABLE') };
  return { transient: true, error: stageError('videoOut', 'COPY_FAILED') };
}

/** `video-out.abort-upload`: aborts a released multipart upload; an upload already gone is fine. */
function videoOutAbort(videoOut: VideoOutService): JobHandler<AbortUploadPayload> {
  return async (p, ctx) => {
    const { client, target } = bucketClient(videoOut, { videoId: p.videoId, id: p.operationId, sealedBucket: p.sealedBucket });
    try {
      await new S3Upload(target, p.upload).abort(); // NoSuchUpload counts as done
      ctx.log.info({ videoId: p.videoId, key: p.upload.key }, 'video out: multipart upload aborted');
    } finally {
      client.destroy();
    }
  };
}
