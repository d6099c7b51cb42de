/** The processing feature's periodic tasks (registered by the composition root). */
import type { PeriodicTaskDefinition } from '../../jobs/periodic-task';
import type { ProcessingService } from './processing.service';

export function processingPeriodicTasks(processing: ProcessingService): PeriodicTaskDefinition[] {
  return [
    {
      name: 'appraisal-sweep',
      intervalMs: 60 * 60_000,
      async run(log) {
        const deleted = await processing.sweepAppraisals();
        if (deleted) log.info({ deleted }, 'deleted expired processing appraisals');
      },
    },
    {
      // Segments of split videos whose processing ended (or that were deleted) and that a crash left behind.
      name: 'processing-segment-sweep',
      intervalMs: 10 * 60_000,
      async run(log) {
        const videos = await processing.segmented.sweepLeftovers();
        if (videos) log.info({ videos }, 'removed the leftover segments of processed videos');
      },
    },
  ];
}
