/**
 * Test support of the videos feature: what test/, bench/ and scripts/ may use beyond the face
 * (index.ts), and nothing else may import (docs/architecture.md, "Test support entries";
 * `.dependency-cruiser.cjs`). A video's row is read through the face (`findVideo`) and created
 * with `insertVideo`; what is here writes a stage's columns directly.
 */
import { videosStore } from './videos.store';

export { STAGE_ERRORS } from './stage-errors';
export type { IngestionUpdate, NewVideo } from './videos.store';

/**
 * A stage's columns written as given, status, progress and error included, with no event and no
 * check of the state it leaves: a test or benchmark puts a video where the API gets it only after
 * real work (a finished upload, an ingestion done or failed). The product moves stages only
 * through `VideoStage`.
 */
export const videoStageWrites: Pick<typeof videosStore, 'updateUpload' | 'updateIngestion' | 'updateProcessing'> = videosStore;
