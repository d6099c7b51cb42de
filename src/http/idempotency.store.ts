/** SQL for idempotency keys (table `idempotency_keys`, migration 009). */
import type { Knex } from 'knex';
import { asDate } from '../db/database';

export interface IdempotencyRecord {
  fingerprint: string;
  leaseToken: string;
  /** The sealed first response; undefined while the first request runs. */
  response?: string;
  expiresAt: Date;
}

/** A request taking a key: the row it writes. */
export interface Reservation {
  scope: string;
  key: string;
  fingerprint: string;
  leaseToken: string;
  createdAt: Date;
  /** The end of the lease. */
  expiresAt: Date;
}

const TABLE = 'idempotency_keys';
const rowOf = (scope: string, key: string) => ({ scope, idempotency_key: key });

export const idempotencyStore = {
  /**
   * One INSERT guarded by the primary key (scope, key): true when this call inserted the row,
   * false when the key is already held (by this or any other process).
   */
  async insert(db: Knex, r: Reservation): Promise<boolean> {
    const inserted = await db(TABLE)
      .insert({ ...rowOf(r.scope, r.key), fingerprint: r.fingerprint, lease_token: r.leaseToken, response: null, created_at: r.createdAt, expires_at: r.expiresAt })
      .onConflict(['scope', 'idempotency_key'])
      .ignore()
      .returning('lease_token');
    return inserted.length === 1;
  },

  async get(db: Knex, scope: string, key: string): Promise<IdempotencyRecord | undefined> {
    const r = await db(TABLE)
      .where(rowOf(scope, key))
      .first<{ fingerprint: string; lease_token: string; response: string | null; expires_at: Date | string | number } | undefined>('fingerprint', 'lease_token', 'response', 'expires_at');
    return r && { fingerprint: r.fingerprint, leaseToken: r.lease_token, response: r.response ?? undefined, expiresAt: asDate(r.expires_at) };
  },

  /**
   * Takes over a row whose `expires_at` has passed (a stored response past retention, or a
   * request past its lease): one guarded UPDATE, so of two takers only one succeeds.
   */
  async takeOver(db: Knex, r: Reservation, now: Date): Promise<boolean> {
    const updated = await db(TABLE)
      .where(rowOf(r.scope, r.key))
      .where('expires_at', '<=', now)
      .update({ fingerprint: r.fingerprint, lease_token: r.leaseToken, response: null, created_at: r.createdAt, expires_at: r.expiresAt });
    return updated === 1;
  },

  /** Stores the response of the request holding the row; false when it no longer holds it. */
  async complete(db: Knex, scope: string, key: string, leaseToken: string, response: string, expiresAt: Date): Promise<boolean> {
    const updated = await db(TABLE)
      .where({ ...rowOf(scope, key), lease_token: leaseToken })
      .update({ response, expires_at: expiresAt });
    return updated === 1;
  },

  /** Deletes the row if this request still holds it. */
  async release(db: Knex, scope: string, key: string, leaseToken: string): Promise<void> {
    await db(TABLE)
      .where({ ...rowOf(scope, key), lease_token: leaseToken })
      .delete();
  },

  async deleteExpired(db: Knex, now: Date): Promise<number> {
    return db(TABLE).where('expires_at', '<=', now).delete();
  },
};
