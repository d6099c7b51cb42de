/**
 * What other features may read and write of a video, one named function each; the videos store
 * itself stays inside this feature. Stage states (status, progress, error) change through
 * `VideoStage` (video-stage.ts), never here.
 */
import type { Knex } from 'knex';
import type { TeamScope } from '../accounts';
import { IngestionUpdate, NewVideo, Video, VideoFileInfo, videosStore } from './videos.store';

/** The video, whoever it belongs to (jobs and the composition's own reads). */
export function findVideo(db: Knex, id: string): Promise<Video | undefined> {
  return videosStore.byId(db, id);
}

/** The video when its team is in scope (member of an API-enabled team, or that team). */
export function findVideoInScope(db: Knex, id: string, scope: TeamScope): Promise<Video | undefined> {
  return videosStore.byIdInScope(db, id, scope);
}

/** The video, its row locked for the rest of the transaction (PostgreSQL). */
export function lockVideo(trx: Knex, id: string): Promise<Video | undefined> {
  return videosStore.byIdForUpdate(trx, id);
}

/** Ids of the videos derived from `v` (a master's clips and processed videos, a clip's processed videos), oldest first. */
export function derivedVideoIds(db: Knex, v: Pick<Video, 'id' | 'kind'>): Promise<string[]> {
  return videosStore.derivedIds(db, v);
}

/** A new video row (video in, the free clip, processing). */
export function insertVideo(trx: Knex, v: NewVideo): Promise<void> {
  return videosStore.insert(trx, v);
}

/** The stored file of a video: where it is in platform storage, its CRC-32C and size, and (when given) its description. */
export async function recordVideoFile(trx: Knex, id: string, stored: { blobKey: string; crc32c?: number; size?: number; file?: VideoFileInfo }, now: Date): Promise<void> {
  if (stored.file) await videosStore.setFile(trx, id, stored.file, now);
  await videosStore.setStored(trx, id, { blobKey: stored.blobKey, crc32c: stored.crc32c, size: stored.size }, now);
}

/** What ingestion learnt of a video (metadata, the assets available, quality); the stage's state is VideoStage's. */
export type IngestionFacts = Omit<IngestionUpdate, 'status' | 'progress' | 'etaSeconds' | 'error'>;

export function recordIngestionFacts(db: Knex, id: string, facts: IngestionFacts, now: Date): Promise<void> {
  return videosStore.updateIngestion(db, id, facts, now);
}

/** What a processing job applies, once it has planned (replaces what the appraisal planned). */
export function recordAppliedOptions(db: Knex, id: string, appliedOptions: Record<string, unknown>, now: Date): Promise<void> {
  return videosStore.updateProcessing(db, id, { appliedOptions }, now);
}

/**
 * The source range a derived video really shows (`processing.sourceVideo`), in whole
 * milliseconds rounded down: the time of its first frame, and of the source frame after its last
 * (a range read again from these gives the same frames: from the first at or after its start,
 * up to the last that starts before its end).
 */
export function recordSourceRange(db: Knex, id: string, range: { startMs: number; endMs: number }, now: Date): Promise<void> {
  return videosStore.updateProcessing(db, id, { range: { startMs: Math.floor(range.startMs + 1e-6), endMs: Math.floor(range.endMs + 1e-6) } }, now);
}

/** No copy out any more (a failed one was abandoned): the video shows no `output`. */
export function clearVideoOutput(trx: Knex, id: string, now: Date): Promise<void> {
  return videosStore.clearOutput(trx, id, now);
}
