/**
 * Test support of the videos feature: what test/, bench/ and scripts/ may use beyond the face
 * (index.ts), and nothing else may import (docs/architecture.md, "Test support entries";
 * `.dependency-cruiser.cjs`). A video's row is read through the face (`findVideo`); what is here
 * creates one and writes its columns directly, as the product does only through `VideoStage`.
 */
import type { Knex } from 'knex';
import { NewVideo, StoredVideoFile, videosStore } from './videos.store';

export { STAGE_ERRORS } from './stage-errors';
export type { IngestionUpdate, NewVideo } from './videos.store';

/**
 * A stage's columns written as given, status, progress and error included, with no event and no
 * check of the state it leaves: a test or benchmark puts a video where the API gets it only after
 * real work (a finished upload, an ingestion done or failed). The product moves stages only
 * through `VideoStage`.
 */
export const videoStageWrites: Pick<typeof videosStore, 'updateUpload' | 'updateIngestion' | 'updateProcessing'> = videosStore;

/** A video row as given (a seed: no stage's work behind it). */
export function insertVideo(db: Knex, v: NewVideo): Promise<void> {
  return videosStore.insert(db, v);
}

/** A video's stored file as given (a seed: no copy behind it). */
export function recordVideoFile(db: Knex, id: string, stored: StoredVideoFile, now: Date): Promise<void> {
  return videosStore.setStored(db, id, stored, now);
}
