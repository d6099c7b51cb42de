/** The video-in feature's periodic tasks (registered by the composition root). */
import type { PeriodicTaskDefinition } from '../../jobs/periodic-task';
import type { VideoInService } from './video-in.service';

/** Runs of the expiry sweep, and the most uploads one run ends. */
const EXPIRY_INTERVAL_MS = 60_000;
const EXPIRY_BATCH = 100;

/**
 * `upload-expiry`: direct uploads not completed by the end of their session fail with
 * `UPLOAD_EXPIRED` and their bytes are removed (docs/uploads.md). Also done on the spot when a
 * request reaches an expired upload; this sweep catches the ones nobody comes back to.
 */
export async function expireUploads(videoIn: VideoInService): Promise<number> {
  let ended = 0;
  for (;;) {
    const ids = await videoIn.expiredUploads(EXPIRY_BATCH);
    for (const id of ids) if (await videoIn.endUpload(id, 'UPLOAD_EXPIRED')) ended++;
    if (ids.length < EXPIRY_BATCH) return ended;
  }
}

export function videoInPeriodicTasks(videoIn: VideoInService): PeriodicTaskDefinition[] {
  return [
    {
      name: 'upload-expiry',
      intervalMs: EXPIRY_INTERVAL_MS,
      async run(log) {
        const ended = await expireUploads(videoIn);
        if (ended) log.info({ ended }, 'expired direct uploads ended and their bytes removed');
      },
    },
  ];
}
