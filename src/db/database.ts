/** Knex for both dialects: an SQLite file (WAL) by default, PostgreSQL when configured. */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import knex, { Knex } from 'knex';
import type { Config } from '../config';
import { migrationSource } from './migrations';

export type Db = Knex;

export function openDatabase(database: Config['database']): Db {
  if (database.client === 'pg') {
    return knex({
      client: 'pg',
      connection: database.connectionString,
      pool: { min: 0, max: 10 },
    });
  }
  mkdirSync(path.dirname(database.filename), { recursive: true });
  return knex({
    client: 'better-sqlite3',
    connection: { filename: database.filename },
    useNullAsDefault: true,
    // better-sqlite3 is synchronous: one connection serialises every statement and transaction.
    pool: {
      min: 1,
      max: 1,
      afterCreate(conn: any, done: (err: Error | null, conn: unknown) => void) {
        conn.pragma('journal_mode = WAL');
        conn.pragma('synchronous = NORMAL');
        conn.pragma('foreign_keys = ON');
        conn.pragma('busy_timeout = 5000');
        cachePreparedStatements(conn);
        done(null, conn);
      },
    },
  });
}

/**
 * Knex prepares every statement again on every query; with better-sqlite3 that is a large
 * share of a small query's cost. Data statements are prepared once per SQL text and reused
 * (bounded, least recently used first out). Safe: better-sqlite3 runs a statement to completion
 * synchronously, so one statement is never used by two queries at once.
 */
const STATEMENT_CACHE_SIZE = 500;
function cachePreparedStatements(conn: any): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, unknown>();
  conn.prepare = (sql: string) => {
    if (!/^\s*(select|insert|update|delete|with)\b/i.test(sql)) return prepare(sql);
    let statement = cache.get(sql);
    if (statement) {
      cache.delete(sql);
    } else {
      statement = prepare(sql);
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    }
    cache.set(sql, statement);
    return statement;
  };
}

export function isPostgres(db: Db): boolean {
  return db.client.config.client === 'pg';
}

export async function migrateToLatest(db: Db): Promise<void> {
  await db.migrate.latest({ migrationSource });
}

/** Row values come back as numbers (SQLite) or Date objects (PostgreSQL); services see Dates. */
export function asDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(Number(value));
}

export function asOptionalDate(value: unknown): Date | undefined {
  return value === null || value === undefined ? undefined : asDate(value);
}

export function asBool(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't';
}

const statementCache = new WeakMap<object, Map<string, any>>();

/**
 * Runs a read-only statement and returns its rows. On SQLite outside a transaction the
 * statement is prepared once per connection and reused (Knex prepares every call, which
 * costs more than running a small indexed query); elsewhere it is an ordinary `db.raw`.
 * Dates in `bindings` become epoch milliseconds, as Knex stores them on SQLite.
 */
export async function cachedRead(db: Db, sql: string, bindings: Knex.RawBinding[]): Promise<any[]> {
  if (isPostgres(db) || (db as any).isTransaction) {
    const result: any = await db.raw(sql, bindings);
    return Array.isArray(result) ? result : result.rows;
  }
  const client: any = db.client;
  const conn: any = await client.acquireConnection();
  try {
    let cache = statementCache.get(conn);
    if (!cache) statementCache.set(conn, (cache = new Map()));
    let statement = cache.get(sql);
    if (!statement) cache.set(sql, (statement = conn.prepare(sql)));
    return statement.all(...bindings.map((b) => (b instanceof Date ? b.getTime() : typeof b === 'boolean' ? Number(b) : b)));
  } finally {
    await client.releaseConnection(conn);
  }
}
