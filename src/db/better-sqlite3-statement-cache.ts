/**
 * Run-time patch of the better-sqlite3 connections Knex opens (knex 3.x, better-sqlite3 12.x).
 *
 * Knex's better-sqlite3 client prepares every statement again on every query (`_query` in
 * knex/lib/dialects/better-sqlite3 calls `connection.prepare(sql)`); with better-sqlite3 that is
 * a large share of a small query's cost. `cacheStatements(conn)` replaces the connection's own
 * `prepare` so data statements (select, insert, update, delete, with) are prepared once per SQL
 * text and reused, bounded, least recently used first out. Safe: better-sqlite3 runs a statement
 * to completion synchronously, so one statement is never used by two queries at once. Other
 * statements (pragmas, DDL, transactions) are prepared as before.
 *
 * What it relies on (test/unit/better-sqlite3-statement-cache.test.ts fails when an upgrade breaks
 * it): Knex's client calls `prepare` on the connection object it got from the pool's afterCreate.
 */
import { patchDisabled } from '../shared/dependency-patches';

const STATEMENT_CACHE_SIZE = 500;
const DATA_STATEMENT = /^\s*(select|insert|update|delete|with)\b/i;
const CACHE = Symbol.for('vidmill.statementCache');

let hits = 0;

/** Statements answered from a cache so far (tests: proves Knex prepares through it). */
export function statementCacheHits(): number {
  return hits;
}

/** The part of a better-sqlite3 connection this patch reads and replaces. */
interface PreparingConnection {
  prepare?: unknown;
  [CACHE]?: Map<string, unknown>;
}

/** The statement cache of a connection, when it has one (tests). */
export function statementCacheOf(conn: unknown): Map<string, unknown> | undefined {
  return (conn as PreparingConnection | null | undefined)?.[CACHE];
}

export function cacheStatements(connection: unknown): void {
  const conn = connection as PreparingConnection;
  if (patchDisabled('better-sqlite3-statement-cache') || conn[CACHE]) return;
  if (typeof conn.prepare !== 'function') {
    throw new Error('better-sqlite3-statement-cache: the connection has no prepare function (dependency upgraded? see src/db/better-sqlite3-statement-cache.ts)');
  }
  const prepare = (conn.prepare as (sql: string) => unknown).bind(conn);
  const cache = new Map<string, unknown>();
  conn[CACHE] = cache;
  conn.prepare = (sql: string) => {
    if (!DATA_STATEMENT.test(sql)) return prepare(sql);
    let statement = cache.get(sql);
    if (statement) {
      hits++;
      cache.delete(sql);
    } else {
      statement = prepare(sql);
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    }
    cache.set(sql, statement);
    return statement;
  };
}
