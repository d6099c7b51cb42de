/** SQL for projects. */
import type { Knex } from 'knex';
import { asBool, asDate } from '../../db/database';
import { PageRequest, readPage } from '../../shared/paging';
import { TeamScope, teamScopeSql, whereTeamInScope } from '../accounts';
import { DbBool, DbTimestamp, rowMapper } from '../../db/store';

export interface Project {
  id: string;
  teamId: string;
  name: string;
  isSample: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** A row as the drivers return it (see src/db/store.ts). */
interface ProjectRow {
  id: string;
  team_id: string;
  name: string;
  is_sample: DbBool;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

function toProject(r: ProjectRow): Project {
  return {
    id: r.id,
    teamId: r.team_id,
    name: r.name,
    isSample: asBool(r.is_sample),
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}
const projectRows = rowMapper(toProject);

/** The columns `projectFromTuple` reads, in its order. */
const PROJECT_COLUMNS = ['id', 'team_id', 'name', 'is_sample', 'created_at', 'updated_at'] as const;

function projectFromTuple(t: unknown[]): Project {
  return {
    id: t[0] as string,
    teamId: t[1] as string,
    name: t[2] as string,
    isSample: asBool(t[3]),
    createdAt: asDate(t[4]),
    updatedAt: asDate(t[5]),
  };
}

export const projectsStore = {
  async insert(db: Knex, p: Project): Promise<void> {
    await db('projects').insert({
      id: p.id,
      team_id: p.teamId,
      name: p.name,
      is_sample: p.isSample,
      created_at: p.createdAt,
      updated_at: p.updatedAt,
    });
  },
  async byIdInScope(db: Knex, id: string, scope: TeamScope): Promise<Project | undefined> {
    const r = (await whereTeamInScope(db, db('projects').where('projects.id', id), 'projects.team_id', scope).first()) as ProjectRow | undefined;
    return projectRows.one(r);
  },
  /** The hot list (every client polls it): hand-written SQL read as tuples (readPage). */
  page(db: Knex, scope: TeamScope, req: PageRequest) {
    const where = teamScopeSql('projects.team_id', scope);
    return readPage(db, 'projects', PROJECT_COLUMNS, where.sql, where.bindings, req, projectFromTuple);
  },
  /** The team's oldest project with exactly this name. */
  async oldestNamed(db: Knex, teamId: string, name: string): Promise<Project | undefined> {
    const r = (await db('projects')
      .where({ team_id: teamId, name })
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .first()) as ProjectRow | undefined;
    return projectRows.one(r);
  },
  async rename(db: Knex, id: string, name: string, now: Date): Promise<void> {
    await db('projects').where({ id }).update({ name, updated_at: now });
  },
  async delete(db: Knex, id: string): Promise<void> {
    await db('projects').where({ id }).delete();
  },
};
