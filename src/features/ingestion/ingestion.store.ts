/** SQL of ingestion: the team setting that decides whether video in makes the free clip. */
import type { Knex } from 'knex';
import { asBool } from '../../db/database';

export const ingestionStore = {
  async freeClipEnabled(db: Knex, teamId: string): Promise<boolean> {
    const row = await db('teams').where({ id: teamId }).first<{ free_clip_enabled: unknown } | undefined>('free_clip_enabled');
    return row ? asBool(row.free_clip_enabled) : false;
  },

  async setFreeClipEnabled(db: Knex, teamId: string, enabled: boolean): Promise<number> {
    return db('teams').where({ id: teamId }).update({ free_clip_enabled: enabled });
  },
};
