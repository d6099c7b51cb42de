/** SQL for processing configurations: team-owned rows and the built-ins (team_id null). */
import type { Knex } from 'knex';
import { asBool, asDate } from '../../db/database';
import { fetchPage, Page, PageRequest } from '../../shared/paging';
import { TeamScope, whereTeamInScope } from '../accounts';
import { DbBool, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export interface ProcessingConfiguration {
  id: string;
  /** Undefined for built-in configurations. */
  teamId?: string;
  name: string;
  description?: string;
  /** VideoProcessingConfigurationOptions (plain JSON). */
  options: Record<string, unknown>;
  builtin: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export type BuiltInMode = 'INCLUDE' | 'EXCLUDE' | 'ONLY';

/** A row as the drivers return it (see src/db/store.ts). */
interface ProcessingConfigurationRow {
  id: string;
  team_id: Nullable<string>;
  name: string;
  description: Nullable<string>;
  options_json: string;
  builtin: DbBool;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

function fromRow(r: ProcessingConfigurationRow): ProcessingConfiguration {
  return {
    id: r.id,
    teamId: r.team_id ?? undefined,
    name: r.name,
    description: r.description ?? undefined,
    options: JSON.parse(r.options_json) as ProcessingConfiguration['options'],
    builtin: asBool(r.builtin),
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}
const processingConfigurationRows = rowMapper(fromRow);

const table = 'processing_configurations';

export const configurationsStore = {
  async insert(db: Knex, c: ProcessingConfiguration): Promise<void> {
    await db(table).insert({
      id: c.id,
      team_id: c.teamId ?? null,
      name: c.name,
      description: c.description ?? null,
      options_json: JSON.stringify(c.options),
      builtin: c.builtin,
      created_at: c.createdAt,
      updated_at: c.updatedAt,
    });
  },

  /** Writes the built-ins as given (fixed ids): new ones are added, changed ones updated. */
  async upsertBuiltIns(db: Knex, builtIns: ProcessingConfiguration[]): Promise<void> {
    for (const c of builtIns) {
      await db(table)
        .insert({
          id: c.id,
          team_id: null,
          name: c.name,
          description: c.description ?? null,
          options_json: JSON.stringify(c.options),
          builtin: true,
          created_at: c.createdAt,
          updated_at: c.updatedAt,
        })
        .onConflict('id')
        .merge(['name', 'description', 'options_json', 'updated_at']);
    }
  },

  /** A configuration the scope may use: a built-in or one of a team in scope. */
  async byIdInScope(db: Knex, id: string, scope: TeamScope): Promise<ProcessingConfiguration | undefined> {
    const row = (await db(table)
      .where(`${table}.id`, id)
      .where((w) => {
        w.where(`${table}.builtin`, true).orWhere((own) => {
          whereTeamInScope(db, own, `${table}.team_id`, scope);
        });
      })
      .first()) as ProcessingConfigurationRow | undefined;
    return processingConfigurationRows.one(row);
  },

  page(db: Knex, scope: TeamScope, mode: BuiltInMode, req: PageRequest): Promise<Page<ProcessingConfiguration>> {
    const q = db(table);
    if (mode === 'ONLY') q.where(`${table}.builtin`, true);
    else if (mode === 'EXCLUDE') whereTeamInScope(db, q, `${table}.team_id`, scope);
    else {
      q.where((w) => {
        w.where(`${table}.builtin`, true).orWhere((own) => {
          whereTeamInScope(db, own, `${table}.team_id`, scope);
        });
      });
    }
    return fetchPage(q, req, processingConfigurationRows.from, table);
  },

  async delete(db: Knex, id: string): Promise<void> {
    await db(table).where({ id, builtin: false }).delete();
  },
};
