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
import { VideoEvents } from './video-events';
import { VIDEO_IN_COPY_JOB } from './video-in.service';
import { videosStore } from './videos.store';

const LOST = 'the worker running it was lost (killed or stalled) on its last attempt';
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
      await videosStore.updateUpload(trx, v.id, { status: 'FAILED', error: { code: 'COPY_FAILED', message: `The copy stopped: ${LOST}. Restart it to resume from the parts already copied.` } }, now);
      await recordEvent(trx, { teamId: v.teamId, eventType: VideoEvents.videoIn.failed, videoId: v.id, occurredAt: now });
    }),
    [INGEST_JOB]: withVideo(async (trx, v, now) => {
      if (!running(v.ingestion?.status)) return;
      await ingestion.recordFailure(trx, v, { code: 'INGESTION_FAILED', message: `Ingestion stopped: ${LOST}.` }, now);
    }),
    [CLIP_JOB]: withVideo(async (trx, v, now) => {
      if (!running(v.processing?.status)) return;
      await videosStore.updateProcessing(trx, v.id, { status: 'FAILED', error: { code: 'CLIP_PROCESSING_FAILED', message: `The clip was not cut: ${LOST}.` }, etaSeconds: null }, now);
      await recordEvent(trx, { teamId: v.teamId, eventType: VideoEvents.clipProcessing.failed, videoId: v.id, occurredAt: now });
    }),
  };
}
