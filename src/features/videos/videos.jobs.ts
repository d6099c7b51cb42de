/**
 * The videos feature's job, `video.purge-blobs`: removes the stored data of deleted videos from platform storage.
 * It is enqueued in the transaction that deletes the rows, so once the rows are gone the job
 * row remembers the keys; a process that dies before or during the purge leaves the job to be
 * run (again) by any worker. Every step is idempotent.
 */
import { BoundJob, defineJob } from '../../jobs/job-definition';
import type { JobHandler } from '../../jobs/worker';
import { BlobStore, isUploadGone, UploadDescriptor } from '../../storage/blob-store';

export interface PurgeBlobsPayload {
  /** The deleted videos (for the log). */
  videoIds: string[];
  /** Objects to delete. */
  blobKeys: string[];
  /** Unfinished multipart uploads of video-in copies to abort (their parts are not objects yet). */
  uploads: UploadDescriptor[];
}

/** The purge (the queue's usual five attempts). */
export const PURGE_BLOBS_JOB = defineJob<PurgeBlobsPayload, BlobStore>({ kind: 'video.purge-blobs', attempts: 5, run: purgeBlobs });

function purgeBlobs(blobs: BlobStore): JobHandler<PurgeBlobsPayload> {
  return async (payload, ctx) => {
    for (const descriptor of payload.uploads ?? []) {
      if (descriptor.store !== blobs.kind) continue; // made by a storage this installation no longer uses
      ctx.signal.throwIfAborted();
      try {
        await (await blobs.resumeUpload(descriptor)).abort();
      } catch (err) {
        if (!isUploadGone(err)) throw err;
      }
    }
    for (const key of payload.blobKeys ?? []) {
      ctx.signal.throwIfAborted();
      await blobs.delete(key);
    }
    ctx.log.info({ videoIds: payload.videoIds, blobs: payload.blobKeys.length, uploads: payload.uploads.length }, 'purged the data of deleted videos');
  };
}

/** The videos feature's jobs, bound for the worker. */
export function videosJobs(blobs: BlobStore): BoundJob[] {
  return [PURGE_BLOBS_JOB.bind(blobs)];
}
