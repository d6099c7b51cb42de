import { stageError } from './stage-errors';
import type { StageError } from './videos.store';

/**
 * The video event types of the contract (WebhookEventType), by stage. Each state change writes
 * its event with `recordEvent` (src/webhooks/events.ts) in the transaction of the change.
 */
export const VideoEvents = {
  videoIn: { started: 'video_in.started', done: 'video_in.done', failed: 'video_in.failed' },
  videoInIngestion: { started: 'video_in_ingestion.started', done: 'video_in_ingestion.done', failed: 'video_in_ingestion.failed' },
  clipProcessing: { started: 'clip_processing.started', done: 'clip_processing.done', failed: 'clip_processing.failed' },
  clipIngestion: { started: 'clip_ingestion.started', done: 'clip_ingestion.done', failed: 'clip_ingestion.failed' },
  videoProcessing: { started: 'video_processing.started', done: 'video_processing.done', failed: 'video_processing.failed' },
  videoProcessingIngestion: {
    started: 'video_processing_ingestion.started',
    done: 'video_processing_ingestion.done',
    failed: 'video_processing_ingestion.failed',
  },
  videoOut: { started: 'video_out.started', done: 'video_out.done', failed: 'video_out.failed' },
  videoDeleted: 'video.deleted',
} as const;

export type StageEvents = { started: string; done: string; failed: string };

/** Ingestion events depend on what kind of video is ingested. */
export function ingestionEventsFor(kind: 'MASTER' | 'CLIP' | 'PROCESSED'): StageEvents {
  return kind === 'MASTER' ? VideoEvents.videoInIngestion : kind === 'CLIP' ? VideoEvents.clipIngestion : VideoEvents.videoProcessingIngestion;
}

type FailedEventType = (typeof VideoEvents)[Exclude<keyof typeof VideoEvents, 'videoDeleted'>]['failed'];

/**
 * The `data.error` a webhook test event of a `*.failed` type carries: the generic failure of the
 * stage that writes real events of that type, from the same table (so a test event has the shape
 * of a real one). Every failed type of `VideoEvents` is listed: a new stage fails to compile here.
 */
const TEST_EVENT_ERRORS: Record<FailedEventType, () => StageError> = {
  'video_in.failed': () => stageError('videoIn', 'COPY_FAILED'),
  'video_in_ingestion.failed': () => stageError('ingestion', 'INGESTION_FAILED'),
  'clip_processing.failed': () => stageError('clip', 'CLIP_PROCESSING_FAILED'),
  'clip_ingestion.failed': () => stageError('ingestion', 'INGESTION_FAILED'),
  'video_processing.failed': () => stageError('processing', 'PROCESSING_FAILED'),
  'video_processing_ingestion.failed': () => stageError('ingestion', 'INGESTION_FAILED'),
  'video_out.failed': () => stageError('videoOut', 'COPY_FAILED'),
};

/** The stage error a test event of this type carries: one for every `*.failed` type, none for the others. */
export function testEventError(eventType: string): StageError | undefined {
  return Object.hasOwn(TEST_EVENT_ERRORS, eventType) ? TEST_EVENT_ERRORS[eventType as FailedEventType]() : undefined;
}
