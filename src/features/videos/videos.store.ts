/** SQL for videos. The video-in work extends this store; projects only ask whether videos exist. */
import type { Knex } from 'knex';

export interface NewVideo {
  id: string;
  teamId: string;
  projectId: string;
  userId: string;
  name: string;
  description?: string;
  createdAt: Date;
}

export const videosStore = {
  async insert(db: Knex, v: NewVideo): Promise<void> {
    await db('videos').insert({
      id: v.id,
      team_id: v.teamId,
      project_id: v.projectId,
      user_id: v.userId,
      name: v.name,
      description: v.description ?? null,
      created_at: v.createdAt,
      updated_at: v.createdAt,
    });
  },
  async existsInProject(db: Knex, projectId: string): Promise<boolean> {
    return Boolean(await db('videos').where({ project_id: projectId }).first('id'));
  },
};
