/**
 * What a video job leaves behind when its worker is lost on the last attempt (the lease sweep
 * fails the job): the stage it owned is marked FAILED with its event, in the sweep's
 * transaction, so no video stays IN_PROGRESS forever. A restart (video in) starts it again.
 */
import type { Knex } from 'knex';
import type { GiveUpHandler } from '../../jobs/worker';
import type { Clock } from '../../shared/clock';
import { recordEvent } from '../../webhooks/events';
import { CLIP_JOB, INGEST_JOB, IngestionService } from './ingestion.service';
import { stageError } from './stage-errors';
import { VideoEvents } from './video-events';
import { VIDEO_IN_COPY_JOB } from './video-in.service';
import { videosStore } from './videos.store';

const running = (s: string | undefined) => s === 'INITIAL' || s === 'IN_PROGRESS';

export function videoGiveUps(clock: Clock, ingestion: IngestionService): Record<string, GiveUpHandler<{ videoId: string }>> {
  const withVideo = (fn: (trx: Knex.Transaction, v: NonNullable<Awaited<ReturnType<typeof videosStore.byId>>>, now: Date) => Promise<void>): GiveUpHandler<{ videoId: string }> =>
    async (trx, { videoId }) => {
      const v = await videosStore.byIdForUpdate(trx, videoId);
      if (v) await fn(trx, v, clock.now());
    };
  return {
    [VIDEO_IN_COPY_JOB]: withVideo(async (trx, v, now) => {
      if (!running(v.upload?.status)) return;
      const error = stageError('videoIn', 'COPY_FAILED');
      await videosStore.updateUpload(trx, v.id, { status: 'FAILED', etaSeconds: null, error }, now);
      await recordEvent(trx, { teamId: v.teamId, eventType: VideoEvents.videoIn.failed, videoId: v.id, occurredAt: now, error });
    }),
    [INGEST_JOB]: withVideo(async (trx, v, now) => {
      if (!running(v.ingestion?.status)) return;
      await ingestion.recordFailure(trx, v, stageError('ingestion', 'INGESTION_FAILED'), now);
    }),
    [CLIP_JOB]: withVideo(async (trx, v, now) => {
      if (!running(v.processing?.status)) return;
      await ingestion.recordClipFailure(trx, v, stageError('clip', 'CLIP_PROCESSING_FAILED'), now);
    }),
  };
}
