/** SQL for bucket locations: one table for both directions, credentials kept sealed. */
import type { Knex } from 'knex';
import { asBool, asDate } from '../../db/database';
import { fetchPage, PageRequest } from '../../shared/paging';
import { TeamScope, whereTeamInScope } from '../accounts';
import { DbBool, DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export type Direction = 'input' | 'output';

/** A credential as stored: the sealed value and what may be shown of it. */
export interface StoredSecret {
  sealed: string;
  lastChars: string;
  length: number;
}

export interface StoredLocation {
  id: string;
  teamId: string;
  direction: Direction;
  name: string;
  bucket: string;
  endpoint?: string;
  region?: string;
  forcePathStyle: boolean;
  accessKey: StoredSecret;
  secretAccessKey: StoredSecret;
  createdAt: Date;
  updatedAt: Date;
}

export type LocationUpdate = Partial<Pick<StoredLocation, 'name' | 'bucket' | 'endpoint' | 'region' | 'forcePathStyle' | 'accessKey' | 'secretAccessKey'>> & {
  updatedAt: Date;
};

const TABLE = 'bucket_locations';

/** A row as the drivers return it (see src/db/store.ts). */
interface StoredLocationRow {
  id: string;
  team_id: string;
  direction: Direction;
  name: string;
  bucket: string;
  endpoint: Nullable<string>;
  region: Nullable<string>;
  force_path_style: DbBool;
  access_key_sealed: string;
  access_key_last_chars: string;
  access_key_length: DbInt;
  secret_key_sealed: string;
  secret_key_last_chars: string;
  secret_key_length: DbInt;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

function toLocation(r: StoredLocationRow): StoredLocation {
  return {
    id: r.id,
    teamId: r.team_id,
    direction: r.direction,
    name: r.name,
    bucket: r.bucket,
    endpoint: r.endpoint ?? undefined,
    region: r.region ?? undefined,
    forcePathStyle: asBool(r.force_path_style),
    accessKey: { sealed: r.access_key_sealed, lastChars: r.access_key_last_chars, length: Number(r.access_key_length) },
    secretAccessKey: { sealed: r.secret_key_sealed, lastChars: r.secret_key_last_chars, length: Number(r.secret_key_length) },
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}
const storedLocationRows = rowMapper(toLocation);

function accessKeyColumns(s: StoredSecret) {
  return { access_key_sealed: s.sealed, access_key_last_chars: s.lastChars, access_key_length: s.length };
}

function secretKeyColumns(s: StoredSecret) {
  return { secret_key_sealed: s.sealed, secret_key_last_chars: s.lastChars, secret_key_length: s.length };
}

function located(db: Knex, direction: Direction, scope: TeamScope): Knex.QueryBuilder {
  return whereTeamInScope(db, db(TABLE).where(`${TABLE}.direction`, direction), `${TABLE}.team_id`, scope);
}

export const locationsStore = {
  async insert(db: Knex, l: StoredLocation): Promise<void> {
    await db(TABLE).insert({
      id: l.id,
      team_id: l.teamId,
      direction: l.direction,
      name: l.name,
      bucket: l.bucket,
      endpoint: l.endpoint ?? null,
      region: l.region ?? null,
      force_path_style: l.forcePathStyle,
      ...accessKeyColumns(l.accessKey),
      ...secretKeyColumns(l.secretAccessKey),
      created_at: l.createdAt,
      updated_at: l.updatedAt,
    });
  },
  async byIdInScope(db: Knex, direction: Direction, id: string, scope: TeamScope): Promise<StoredLocation | undefined> {
    const r = (await located(db, direction, scope).where(`${TABLE}.id`, id).first()) as StoredLocationRow | undefined;
    return storedLocationRows.one(r);
  },
  page(db: Knex, direction: Direction, scope: TeamScope, req: PageRequest) {
    return fetchPage(located(db, direction, scope), req, storedLocationRows.from, TABLE);
  },
  /** Writes only the given fields; false when the row no longer exists. */
  async update(db: Knex, direction: Direction, id: string, u: LocationUpdate): Promise<boolean> {
    const changed = await db(TABLE)
      .where({ id, direction })
      .update({
        ...(u.name !== undefined ? { name: u.name } : {}),
        ...(u.bucket !== undefined ? { bucket: u.bucket } : {}),
        ...(u.endpoint !== undefined ? { endpoint: u.endpoint } : {}),
        ...(u.region !== undefined ? { region: u.region } : {}),
        ...(u.forcePathStyle !== undefined ? { force_path_style: u.forcePathStyle } : {}),
        ...(u.accessKey ? accessKeyColumns(u.accessKey) : {}),
        ...(u.secretAccessKey ? secretKeyColumns(u.secretAccessKey) : {}),
        updated_at: u.updatedAt,
      });
    return changed > 0;
  },
  /** False when no such location is in scope. */
  async deleteInScope(db: Knex, direction: Direction, id: string, scope: TeamScope): Promise<boolean> {
    const target = located(db, direction, scope).where(`${TABLE}.id`, id).select(`${TABLE}.id`);
    return (await db(TABLE).whereIn('id', target).delete()) > 0;
  },
};
