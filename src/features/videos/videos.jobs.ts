/**
 * The videos feature's job, `video.purge-blobs`: removes the stored data of deleted videos from platform storage.
 * It is enqueued in the transaction that deletes the rows, so once the rows are gone the job
 * row remembers the keys; a process that dies before or during the purge leaves the job to be
 * run (again) by any worker. Every step is idempotent.
 */
import type { JobDefinition } from '../../jobs/job-definition';
import { BlobStore, isUploadGone, UploadDescriptor } from '../../storage/blob-store';

/** The purge's kind and attempts (the queue's usual five). */
export const PURGE_BLOBS_JOB = { kind: 'video.purge-blobs', attempts: 5 } as const satisfies Pick<JobDefinition, 'kind' | 'attempts'>;

export interface PurgeBlobsPayload {
  /** The deleted videos (for the log). */
  videoIds: string[];
  /** Objects to delete. */
  blobKeys: string[];
  /** Unfinished multipart uploads of video-in copies to abort (their parts are not objects yet). */
  uploads: UploadDescriptor[];
}

/** The videos feature's jobs. */
export function videosJobs(blobs: BlobStore): JobDefinition[] {
  return [{ ...PURGE_BLOBS_JOB, run: purgeBlobs(blobs) }];
}

function purgeBlobs(blobs: BlobStore): JobDefinition<PurgeBlobsPayload>['run'] {
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
