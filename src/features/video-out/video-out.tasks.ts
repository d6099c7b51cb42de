/** The video-out feature's periodic tasks (registered by the composition root). */
import type { PeriodicTaskDefinition } from '../../jobs/periodic-task';
import type { VideoOutService } from './video-out.service';

export function videoOutPeriodicTasks(videoOut: VideoOutService): PeriodicTaskDefinition[] {
  return [
    {
      // Bytes served by download URLs accrue to billing (DOWNLOAD_HTTPS) in batches.
      name: 'download-billing',
      intervalMs: 10 * 60_000,
      async run(log) {
        const { batches, bytes } = await videoOut.billDownloads();
        if (batches) log.info({ batches, bytes }, 'download bytes billed');
      },
    },
  ];
}
