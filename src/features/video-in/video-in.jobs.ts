/**
 * The video-in feature's job, `video-in.copy`: copies a master's source into platform storage
 * with the ranged parallel copy engine, then hands the video to ingestion. Resumable at any
 * point: the upload descriptor and the CRC of every stored part are rows, so a worker killed
 * mid-copy leaves a job whose lease expires and which any worker continues from the parts
 * already stored.
 *
 * uploadStatus moves INITIAL -> IN_PROGRESS -> DONE | FAILED here (restart sets IN_PROGRESS
 * again), each change with its `video_in.*` event in the same transaction (VideoStage). A
 * transient failure (source unreachable, storage error) is retried by the queue with back-off;
 * the last attempt, or a failure retrying cannot fix (checksum, changed source), records FAILED
 * with its code. A copy whose worker was lost on its last attempt is FAILED by the lease sweep
 * (`onGiveUp`), so it never stays IN_PROGRESS; a restart starts it again.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Db } from '../../db/database';
import { BoundJob, defineJob } from '../../jobs/job-definition';
import type { JobHandler } from '../../jobs/worker';
import { crc32cUpdate } from '../../net/crc32c';
import { SourceChangedError, SourceHttpError } from '../../net/https-range-source';
import { isNonPublicAddressRefusal } from '../../net/outbound-url';
import { BlobStore, isUploadGone, Upload } from '../../storage/blob-store';
import type { Clock } from '../../shared/clock';
import { ProgressEta, writeProgress } from '../../shared/progress-eta';
import { StorageMeters } from '../billing';
import { ChecksumMismatchError, CopyFailedError, CopyProgress, copyRanges } from '../../storage/copy-engine';
import { findVideo, retriesLeft, RUNNING, stageError, StageError, Video, VideoEvents, VideoStage } from '../videos';
import type { CopyJobPayload, VideoInService } from './video-in.service';
import { VideoInOperation, videoInStore } from './video-in.store';

export interface VideoInJobDeps {
  db: Db;
  clock: Clock;
  blobs: BlobStore;
  videoIn: VideoInService;
  /** Called in the transaction that marks the copy DONE: starts ingestion of the video. */
  onCopied(trx: Knex, video: Video): Promise<void>;
}

interface Failure {
  error: StageError;
  /** Worth another attempt of the job. */
  transient: boolean;
}

/** The blob key of a master's file in platform storage. */
export const videoFileKey = (videoId: string) => `videos/${videoId}/file`;

/** A copy whose worker was lost on its last attempt: FAILED with its event. */
function failLost(deps: VideoInJobDeps) {
  const upload = new VideoStage(deps.db, deps.clock, 'upload');
  return async (trx: Knex.Transaction, { videoId }: CopyJobPayload): Promise<void> => {
    await upload.whenInWithin(trx, videoId, RUNNING, (trx, v, now) => upload.failed(trx, v, stageError('videoIn', 'COPY_FAILED'), VideoEvents.videoIn.failed, now));
  };
}

/** The copy from an HTTPS or bucket source; its runs before a transient failure is recorded as FAILED (a kill counts as a run). */
export const VIDEO_IN_COPY_JOB = defineJob<CopyJobPayload, VideoInJobDeps>({
  kind: 'video-in.copy',
  attempts: 4,
  run: (deps) => videoInCopy(deps, new VideoStage(deps.db, deps.clock, 'upload')),
  onGiveUp: failLost,
});

/** The finishing job of a direct upload. */
export const VIDEO_IN_UPLOAD_FINISH_JOB = defineJob<CopyJobPayload, VideoInJobDeps>({
  kind: 'video-in.upload-finish',
  attempts: 5,
  run: (deps) => finishUpload(deps, new VideoStage(deps.db, deps.clock, 'upload')),
  onGiveUp: failLost,
});

/** The video-in feature's jobs, bound for the worker. */
export function videoInJobs(deps: VideoInJobDeps): BoundJob[] {
  return [VIDEO_IN_COPY_JOB.bind(deps), VIDEO_IN_UPLOAD_FINISH_JOB.bind(deps)];
}

/**
 * `video-in.upload-finish`: a direct upload whose last byte has arrived becomes the master video
 * as a finished copy does. Its bytes move into platform storage under the master's key (local
 * disk: a rename; S3: the multipart upload was made under that key), the CRC-32C is computed
 * from the stored file and checked against `crc32c` when given (CHECKSUM_MISMATCH fails the
 * video-in and removes the file), then the copy's DONE path runs (file recorded, `video_in.done`,
 * ingestion and the free clip). Each step can run again after a crash: the move is idempotent
 * and DONE is written only from a running state. The tus bytes and info are removed after.
 */
function finishUpload(deps: VideoInJobDeps, stage: VideoStage<'upload'>): JobHandler<CopyJobPayload> {
  const { db, blobs, videoIn } = deps;
  return async ({ videoId }, ctx) => {
    const op = await videoInStore.byVideoId(db, videoId);
    const video = await findVideo(db, videoId);
    const storeId = videoIn.uploadStoreId(videoId);
    if (!op || !video?.upload || video.upload.status === 'DONE' || video.upload.status === 'FAILED') {
      // Deleted (videos.onRemove enqueues this job for an upload still running) or already
      // settled: only what the upload left behind remains to remove (for a FAILED one also a
      // mismatched master file, when a crash came between the failure and its removal below).
      if (video?.upload?.status === 'FAILED') await blobs.delete(videoFileKey(videoId));
      await videoIn.uploads.discard(storeId, video?.upload?.status === 'DONE');
      return;
    }
    const key = videoFileKey(videoId);
    const size = op.pinned.size;
    await videoIn.uploads.adopt(storeId, key, size);
    let crc = 0;
    for await (const chunk of await blobs.read(key)) {
      if (ctx.signal.aborted) throw new Error('aborted');
      crc = crc32cUpdate(crc, chunk as Buffer);
    }
    crc >>>= 0;
    if (op.expectedCrc32c !== undefined && op.expectedCrc32c >>> 0 !== crc) {
      ctx.log.warn({ videoId, expected: op.expectedCrc32c, actual: crc }, 'video in: uploaded file does not match its crc32c');
      await stage.whenIn(videoId, RUNNING, (trx, v, now) => stage.failed(trx, v, stageError('videoInUpload', 'CHECKSUM_MISMATCH'), VideoEvents.videoIn.failed, now));
      await blobs.delete(key);
      await videoIn.uploads.discard(storeId, true);
      return;
    }
    ctx.log.info({ videoId, size }, 'video in: upload finished');
    await markCopied(deps, stage, videoId, crc, size);
    await videoIn.uploads.discard(storeId, true);
  };
}

/** DONE for a copied (or uploaded) file: recorded, `video_in.done`, ingestion started, storage sampled, in one transaction. */
async function markCopied(deps: VideoInJobDeps, stage: VideoStage<'upload'>, videoId: string, crc32c: number, size: number): Promise<void> {
  // A FAILED copy found whole (an earlier run completed it) is DONE as well.
  await stage.whenIn(videoId, ['INITIAL', 'IN_PROGRESS', 'FAILED'], async (trx, v, now) => {
    await stage.recordFile(trx, videoId, { blobKey: videoFileKey(videoId), crc32c, size }, now);
    await videoInStore.forgetParts(trx, videoId);
    await stage.done(trx, v, VideoEvents.videoIn.done, now);
    await deps.onCopied(trx, { ...v, blobKey: videoFileKey(videoId), crc32c });
    await new StorageMeters(trx).sample(v.teamId, now);
  });
}

function videoInCopy(deps: VideoInJobDeps, stage: VideoStage<'upload'>): JobHandler<CopyJobPayload> {
  const { db, clock, blobs, videoIn } = deps;
  return async ({ videoId }, ctx) => {
    const op = await videoInStore.byVideoId(db, videoId);
    const video = await findVideo(db, videoId);
    if (!op || !video?.upload) return; // abandoned or deleted meanwhile
    if (video.upload.status === 'DONE' || video.upload.status === 'FAILED') return;
    if (video.upload.status === 'INITIAL') await markStarted(videoId);

    const { source, close } = videoIn.sources.open(videoIn.sourceSpecOf(op));
    // Progress and time left from the bytes copied, written once a second (advisory: the final
    // state is written in a transaction below, after the last progress write).
    const eta = new ProgressEta({ label: 'video-in' });
    const writes = writeProgress(eta, (e) => stage.progress(videoId, { ...e, bytes: Math.round(e.fraction * op.pinned.size) }), { onError: (err) => ctx.log.warn({ err }, 'progress write failed') });
    try {
      const upload = await openUpload(op, ctx.log);
      const result = await copyRanges({
        source,
        pinned: op.pinned,
        upload,
        concurrency: op.maxConnections,
        knownParts: await videoInStore.parts(db, videoId),
        expectedCrc32c: op.skipChecksum ? undefined : op.expectedCrc32c,
        onPart: (n, crc) => videoInStore.recordPart(db, videoId, n, crc),
        onProgress: (p: CopyProgress) => eta.observe(p.bytesDone / p.size),
        signal: ctx.signal,
        direction: 'in',
      });
      ctx.log.info({ videoId, size: result.size, partsCopied: result.partsCopied, retries: result.retries }, 'video in: copy done');
      await writes.stop();
      await markDone(videoId, result.crc32c, result.size);
      eta.finish();
    } catch (err) {
      if (ctx.signal.aborted) throw err; // lease lost or worker stopping: handed back, resumed later
      await writes.stop();
      if (isUploadGone(err)) {
        // The upload completed in an earlier run that died before recording it: the file is whole.
        const done = await recoverCompleted(op);
        if (done) return markDone(videoId, done.crc32c, done.size);
      }
      const failure = classify(err, op);
      if (retriesLeft(ctx, failure.transient)) {
        ctx.log.warn({ videoId, err, attempt: ctx.job.attempts }, 'video in: copy attempt failed, will retry');
        throw err;
      }
      ctx.log.warn({ videoId, code: failure.error.code, err }, 'video in: copy failed');
      await writes.stop();
      await markFailed(videoId, failure.error);
    } finally {
      await writes.stop();
      close();
    }
  };

  async function markStarted(videoId: string): Promise<void> {
    await stage.start(videoId, VideoEvents.videoIn.started);
  }

  function markDone(videoId: string, crc32c: number, size: number): Promise<void> {
    return markCopied(deps, stage, videoId, crc32c, size);
  }

  async function markFailed(videoId: string, error: StageError): Promise<void> {
    await stage.whenIn(videoId, RUNNING, (trx, v, now) => stage.failed(trx, v, error, VideoEvents.videoIn.failed, now));
  }

  /** The upload of an earlier run (resumed), or a new one recorded before any part is written. */
  async function openUpload(op: VideoInOperation, log: Logger): Promise<Upload> {
    // A resumed upload that is gone throws; the caller checks whether it had completed.
    if (op.upload && op.upload.store === blobs.kind) return blobs.resumeUpload(op.upload);
    if (op.upload) log.warn({ videoId: op.videoId }, 'video in: the earlier upload belongs to another storage; starting over');
    const upload = await blobs.createUpload(videoFileKey(op.videoId), op.pinned.size);
    await videoInStore.setUpload(db, op.videoId, upload.descriptor, clock.now());
    return upload;
  }

  /** When the file is already complete under its key: its size and CRC-32C (read once more). */
  async function recoverCompleted(op: VideoInOperation): Promise<{ size: number; crc32c: number } | undefined> {
    const stat = await blobs.stat(videoFileKey(op.videoId));
    if (!stat || stat.size !== op.pinned.size) {
      // The upload is gone and the file is not there: start a fresh upload on the next attempt.
      await videoInStore.forgetUpload(db, op.videoId);
      return undefined;
    }
    let crc = 0;
    for await (const chunk of await blobs.read(videoFileKey(op.videoId))) crc = crc32cUpdate(crc, chunk as Buffer);
    crc >>>= 0;
    if (!op.skipChecksum && op.expectedCrc32c !== undefined && op.expectedCrc32c >>> 0 !== crc) return undefined;
    return { size: stat.size, crc32c: crc };
  }
}

/** What a failed copy is recorded as, and whether another attempt could succeed (the cause itself goes to the log). */
export function classify(err: unknown, op: Pick<VideoInOperation, 'attempt' | 'sourceKind'>): Failure {
  if (err instanceof ChecksumMismatchError) {
    return { transient: false, error: stageError('videoIn', op.attempt > 1 ? 'VIDEO_IN_RESTART_CHECKSUM_MISMATCH' : 'CHECKSUM_MISMATCH') };
  }
  if (err instanceof SourceChangedError) return { transient: false, error: stageError('videoIn', 'SOURCE_CHANGED') };
  const cause = err instanceof CopyFailedError ? err.cause : err;
  if (cause instanceof SourceHttpError && [401, 403, 404, 410].includes(cause.status)) {
    return { transient: false, error: stageError('videoIn', 'SOURCE_NOT_ACCESSIBLE') };
  }
  // The outbound guard refused the connection: the source's host is not public (or plain http) under the policy as it is now.
  if (isNonPublicAddressRefusal(cause)) return { transient: false, error: stageError('videoIn', op.sourceKind === 'HTTPS' ? 'INVALID_HTTPS_URL' : 'INVALID_BUCKET_ENDPOINT') };
  // One fixed message whatever the network said: no errno or address tells closed ports from open ones.
  return { transient: true, error: stageError('videoIn', 'COPY_FAILED') };
}
