/**
 * The ingestion feature's jobs: `video.ingest` (any stored video) and `video.clip` (the free
 * clip's cut). Both are idempotent: a worker that dies at any point leaves a job that another
 * worker runs again from the start of its stage. A job whose worker was lost on its last attempt
 * (the lease sweep gives it up) marks its stage FAILED with its event in the sweep's transaction.
 */
import type { JobDefinition } from '../../jobs/job-definition';
import { RUNNING, stageError } from '../videos';
import { CLIP_JOB, INGEST_JOB, IngestionService, VideoJobPayload } from './ingestion.service';

export function ingestionJobs(ingestion: IngestionService): JobDefinition[] {
  const ingest: JobDefinition<VideoJobPayload> = {
    ...INGEST_JOB,
    run: ingestion.runIngest,
    onGiveUp: async (trx, { videoId }) => {
      await ingestion.stage('ingestion').whenInWithin(trx, videoId, RUNNING, (trx, v, now) => ingestion.recordFailure(trx, v, stageError('ingestion', 'INGESTION_FAILED'), now));
    },
  };
  const clip: JobDefinition<VideoJobPayload> = {
    ...CLIP_JOB,
    run: ingestion.runClip,
    onGiveUp: async (trx, { videoId }) => {
      await ingestion.stage('processing').whenInWithin(trx, videoId, RUNNING, (trx, v, now) => ingestion.recordClipFailure(trx, v, stageError('clip', 'CLIP_PROCESSING_FAILED'), now));
    },
  };
  return [ingest, clip];
}
