/**
 * The processing feature's job, `video.process`: the options -> ffmpeg engine on the source, then
 * ingestion of the result (ProcessingService.runProcess). A job whose worker was lost on its last
 * attempt (the lease sweep gives it up) is FAILED with its event and refunded, in the sweep's
 * transaction.
 */
import type { JobDefinition } from '../../jobs/job-definition';
import { RUNNING, stageError } from '../videos';
import { PROCESS_JOB, ProcessingService } from './processing.service';

export function processingJobs(processing: ProcessingService): JobDefinition[] {
  const process: JobDefinition<{ videoId: string }> = {
    ...PROCESS_JOB,
    run: processing.runProcess,
    onGiveUp: async (trx, { videoId }) => {
      await processing.stage.whenInWithin(trx, videoId, RUNNING, (trx, v) => processing.fail(trx, v, stageError('processing', 'PROCESSING_FAILED')));
    },
  };
  return [process];
}
