/**
 * What other features may read of a video, one named function each; the videos store itself
 * stays inside this feature. Rows are written by `VideoStage` (video-stage.ts), the stage whose
 * work writes them, never here.
 */
import type { Knex } from 'knex';
import type { TeamScope } from '../accounts';
import { Video, videosStore } from './videos.store';

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
