/**
 * The processing feature's job, `video.process`: the options -> ffmpeg engine on the source, then
 * ingestion of the result (ProcessingService.runProcess). A job whose worker was lost on its last
 * attempt (the lease sweep gives it up) is FAILED with its event and refunded, in the sweep's
 * transaction. A split video's segment, audio and join jobs (segmented-processing.ts) give up the same way.
 */
import type { JobDefinition } from '../../jobs/job-definition';
import { RUNNING, stageError } from '../videos';
import { PROCESS_JOB, ProcessingService } from './processing.service';
import { segmentedProcessingJobs } from './segmented-processing';

export function processingJobs(processing: ProcessingService): JobDefinition[] {
  // A job whose worker was lost on its last attempt: the processing FAILED (and refunded) once.
  const giveUp: JobDefinition<{ videoId: string }>['onGiveUp'] = async (trx, { videoId }) => {
    await processing.stage.whenInWithin(trx, videoId, RUNNING, (trx, v) => processing.fail(trx, v, stageError('processing', 'PROCESSING_FAILED')));
  };
  const process: JobDefinition<{ videoId: string }> = { ...PROCESS_JOB, run: processing.runProcess, onGiveUp: giveUp };
  return [process, ...segmentedProcessingJobs(processing, giveUp)];
}
