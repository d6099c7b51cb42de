/**
 * The ingestion feature's jobs: `video.ingest` (any stored video) and `video.clip` (the free
 * clip's cut). Both are idempotent: a worker that dies at any point leaves a job that another
 * worker runs again from the start of its stage. A job whose worker was lost on its last attempt
 * (the lease sweep gives it up) marks its stage FAILED with its event in the sweep's transaction.
 */
import { BoundJob, defineJob } from '../../jobs/job-definition';
import { RUNNING, stageError } from '../videos';
import type { IngestionService, VideoJobPayload } from './ingestion.service';

/** The ingestion of a stored video. */
export const INGEST_JOB = defineJob<VideoJobPayload, IngestionService>({
  kind: 'video.ingest',
  attempts: 3,
  run: (ingestion) => ingestion.runIngest,
  onGiveUp:
    (ingestion) =>
    async (trx, { videoId }) => {
      await ingestion.stage('ingestion').whenInWithin(trx, videoId, RUNNING, (trx, v, now) => ingestion.recordFailure(trx, v, stageError('ingestion', 'INGESTION_FAILED'), now));
    },
});

/** The free clip's cut. */
export const CLIP_JOB = defineJob<VideoJobPayload, IngestionService>({
  kind: 'video.clip',
  attempts: 3,
  run: (ingestion) => ingestion.runClip,
  onGiveUp:
    (ingestion) =>
    async (trx, { videoId }) => {
      await ingestion.stage('processing').whenInWithin(trx, videoId, RUNNING, (trx, v, now) => ingestion.recordClipFailure(trx, v, stageError('clip', 'CLIP_PROCESSING_FAILED'), now));
    },
});

/** The ingestion feature's jobs, bound for the worker. */
export function ingestionJobs(ingestion: IngestionService): BoundJob[] {
  return [INGEST_JOB.bind(ingestion), CLIP_JOB.bind(ingestion)];
}
