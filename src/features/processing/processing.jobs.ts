/**
 * The processing feature's jobs. `video.process`: the options -> ffmpeg engine on the source, then
 * ingestion of the result (ProcessingService.runProcess). A split video's `video.process-segment`
 * (one per part: a video segment or the audio pass) and `video.process-join` jobs
 * (segmented-processing.ts). A job whose worker was lost on its last attempt (the lease sweep
 * gives it up) is FAILED with its event and refunded, in the sweep's transaction; every one of
 * these kinds gives up the same way.
 */
import type { Knex } from 'knex';
import { BoundJob, defineJob } from '../../jobs/job-definition';
import { RUNNING, stageError } from '../videos';
import type { ProcessingService } from './processing.service';

interface VideoPayload {
  videoId: string;
}

/** A job whose worker was lost on its last attempt: the processing FAILED (and refunded) once. */
const failLost =
  (processing: ProcessingService) =>
  async (trx: Knex.Transaction, { videoId }: VideoPayload): Promise<void> => {
    await processing.stage.whenInWithin(trx, videoId, RUNNING, (trx, v) => processing.fail(trx, v, stageError('processing', 'PROCESSING_FAILED')));
  };

/** One processing run in one ffmpeg job. */
export const PROCESS_JOB = defineJob<VideoPayload, ProcessingService>({ kind: 'video.process', attempts: 3, run: (p) => p.runProcess, onGiveUp: failLost });

/** One part of a split video: a video segment or the audio pass. */
export const SEGMENT_JOB = defineJob<VideoPayload & { part: number }, ProcessingService>({
  kind: 'video.process-segment',
  attempts: 3,
  run: (p) => p.segmented.runPart,
  onGiveUp: failLost,
});

/** The join of a split video's parts. */
export const JOIN_JOB = defineJob<VideoPayload, ProcessingService>({ kind: 'video.process-join', attempts: 3, run: (p) => p.segmented.runJoin, onGiveUp: failLost });

/** The processing feature's jobs, bound for the worker. */
export function processingJobs(processing: ProcessingService): BoundJob[] {
  return [PROCESS_JOB.bind(processing), SEGMENT_JOB.bind(processing), JOIN_JOB.bind(processing)];
}
