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

/**
 * Runs a read-only SQL statement and returns its rows on either dialect. On SQLite the
 * statement comes from the per-connection statement cache (cachePreparedStatements).
 */
export async function readRows(db: Db, sql: string, bindings: Knex.RawBinding[]): Promise<any[]> {
  const result: any = await db.raw(sql, bindings);
  return Array.isArray(result) ? result : result.rows;
}

/**
 * Serialises transactions that change one aggregate (row lock `SELECT ... FOR UPDATE` on
 * PostgreSQL; SQLite already runs one write transaction at a time on its single connection).
 */
export async function lockRowForUpdate(db: Db, table: string, id: string): Promise<void> {
  if (isPostgres(db)) await db(table).where({ id }).forUpdate().first('id');
}
