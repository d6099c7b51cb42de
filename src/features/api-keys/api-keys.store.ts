/** SQL for API keys. */
import type { Knex } from 'knex';
import { asBool, asDate, asOptionalDate, lockRowForUpdate } from '../../db/database';
import { fetchPage, PageRequest } from '../../shared/paging';
import { DbBool, DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export interface ApiKeyRecord {
  id: string;
  userId: string;
  name: string;
  description?: string;
  active: boolean;
  lastChars: string;
  keyLength: number;
  lastUsedAt?: Date;
  createdAt: Date;
  updatedAt: Date;
}

/** A row as the drivers return it (see src/db/store.ts). */
interface ApiKeyRecordRow {
  id: string;
  user_id: string;
  name: string;
  description: Nullable<string>;
  active: DbBool;
  last_chars: string;
  key_length: DbInt;
  last_used_at: Nullable<DbTimestamp>;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

function toApiKey(r: ApiKeyRecordRow): ApiKeyRecord {
  return {
    id: r.id,
    userId: r.user_id,
    name: r.name,
    description: r.description ?? undefined,
    active: asBool(r.active),
    lastChars: r.last_chars,
    keyLength: Number(r.key_length),
    lastUsedAt: asOptionalDate(r.last_used_at),
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}
const apiKeyRecordRows = rowMapper(toApiKey);

export const apiKeysStore = {
  async insert(db: Knex, k: ApiKeyRecord & { digest: string }): Promise<void> {
    await db('api_keys').insert({
      id: k.id,
      user_id: k.userId,
      name: k.name,
      description: k.description ?? null,
      active: k.active,
      digest: k.digest,
      last_chars: k.lastChars,
      key_length: k.keyLength,
      last_used_at: null,
      created_at: k.createdAt,
      updated_at: k.updatedAt,
    });
  },
  /** Serialises key changes of one user (the 2-active-keys rule) on PostgreSQL. */
  async lockUser(db: Knex, userId: string): Promise<void> {
    await lockRowForUpdate(db, 'users', userId);
  },
  async countActive(db: Knex, userId: string): Promise<number> {
    const [{ n }] = (await db('api_keys').where({ user_id: userId, active: true }).count({ n: '*' })) as [{ n: DbInt }];
    return Number(n);
  },
  async byIdOfUser(db: Knex, id: string, userId: string): Promise<ApiKeyRecord | undefined> {
    const r = (await db('api_keys').where({ id, user_id: userId }).first()) as ApiKeyRecordRow | undefined;
    return apiKeyRecordRows.one(r);
  },
  /** The active key with this digest, if any. */
  async activeByDigest(db: Knex, digest: string): Promise<ApiKeyRecord | undefined> {
    const r = (await db('api_keys').where({ digest, active: true }).first()) as ApiKeyRecordRow | undefined;
    return apiKeyRecordRows.one(r);
  },
  page(db: Knex, userId: string, req: PageRequest) {
    return fetchPage(db('api_keys').where('api_keys.user_id', userId), req, apiKeyRecordRows.from, 'api_keys');
  },
  async update(db: Knex, id: string, changes: { name?: string; description?: string; active?: boolean }, now: Date): Promise<void> {
    await db('api_keys')
      .where({ id })
      .update({ ...changes, updated_at: now });
  },
  async recordUse(db: Knex, id: string, at: Date): Promise<void> {
    await db('api_keys').where({ id }).update({ last_used_at: at });
  },
  async delete(db: Knex, id: string): Promise<void> {
    await db('api_keys').where({ id }).delete();
  },
  /** Deletes keys last used (or created, if never used) at or before `cutoff`. */
  async deleteUnusedSince(db: Knex, cutoff: Date): Promise<number> {
    return db('api_keys')
      .where((q) => {
        q.where('last_used_at', '<=', cutoff).orWhere((q2) => {
          q2.whereNull('last_used_at').andWhere('created_at', '<=', cutoff);
        });
      })
      .delete();
  },
};
