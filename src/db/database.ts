/** Knex for both dialects: an SQLite file (WAL) by default, PostgreSQL when configured. */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import knex, { Knex } from 'knex';
import { migrationSource } from './migrations';

export type Db = Knex;

/** A better-sqlite3 connection as Knex's pool hands it out (SQLite only). */
type SqliteConnection = BetterSqlite3.Database;

/** `Knex.client` is typed `any`; it is the dialect's Knex.Client. */
function knexClient(db: Db): Knex.Client {
  return db.client as Knex.Client;
}

/** A connection from the SQLite pool (`acquireConnection` is typed `any` in Knex). */
async function acquireSqlite(db: Db): Promise<SqliteConnection> {
  return (await knexClient(db).acquireConnection()) as SqliteConnection;
}

/** Where the data lives: an SQLite file (the embedded default) or a PostgreSQL URL. */
export type DatabaseConfig = { client: 'sqlite'; filename: string } | { client: 'pg'; connectionString: string };

export function openDatabase(database: DatabaseConfig): Db {
  if (database.client === 'pg') {
    return knex({
      client: 'pg',
      connection: database.connectionString,
      pool: { min: 0, max: 10 },
    });
  }
  createPrivateSqliteFile(database.filename);
  return knex({
    client: 'better-sqlite3',
    connection: { filename: database.filename },
    useNullAsDefault: true,
    // better-sqlite3 is synchronous: one connection serialises every statement and transaction.
    pool: {
      min: 1,
      max: 1,
      afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: unknown) => void) {
        conn.pragma('journal_mode = WAL');
        conn.pragma('synchronous = NORMAL');
        conn.pragma('foreign_keys = ON');
        conn.pragma('busy_timeout = 5000');
        done(null, conn);
      },
    },
  });
}

/**
 * The SQLite file and its folder for the service user only: a folder the service creates is
 * 0700, the database file 0600 (created so before SQLite opens it, whatever the umask; an existing
 * file readable by others is narrowed to 0600). SQLite gives its `-wal` and `-shm` files the
 * database file's permissions.
 */
export function createPrivateSqliteFile(filename: string): void {
  mkdirSync(path.dirname(filename), { recursive: true, mode: 0o700 });
  closeSync(openSync(filename, 'a', 0o600));
  const { mode } = statSync(filename);
  if (mode & 0o077) chmodSync(filename, mode & 0o700);
}

/**
 * Which database a configuration names, without secrets: `SQLite file /abs/path` or
 * `PostgreSQL user@host:port/name` (the password is never shown).
 */
export function describeDatabase(database: DatabaseConfig): string {
  if (database.client === 'sqlite') return `SQLite file ${database.filename}`;
  try {
    const url = new URL(database.connectionString);
    const user = url.username ? `${decodeURIComponent(url.username)}@` : '';
    return `PostgreSQL ${user}${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname}`;
  } catch {
    return 'PostgreSQL (connection string not shown)';
  }
}

export function isPostgres(db: Db): boolean {
  return knexClient(db).config.client === 'pg';
}

/**
 * Brings the schema to the latest migration. Processes that start together on one PostgreSQL
 * database (an API and a worker of a new installation) take turns: Knex's own lock row is
 * created by the first migration and refuses a second runner instead of waiting ("relation
 * knex_migrations already exists", "Migration table is already locked"), so the run holds a
 * session advisory lock (released by the server if its holder dies) and the next process finds
 * nothing left to do. SQLite: one process owns the file.
 */
export async function migrateToLatest(db: Db): Promise<void> {
  if (!isPostgres(db)) {
    await db.migrate.latest({ migrationSource });
    return;
  }
  // A transaction only to hold one connection with the lock while Knex migrates on others.
  await db.transaction(async (trx) => {
    await lockNamed(trx, 'vidmill.migrations');
    await db.migrate.latest({ migrationSource });
  });
}

/**
 * Serialises, until the end of the transaction `trx`, the work of every process under `name`
 * (a PostgreSQL transaction-level advisory lock; SQLite runs one write transaction at a time
 * anyway). For work that creates what must exist once: the schema, the first owner, the first
 * signing key.
 */
export async function lockNamed(trx: Knex.Transaction, name: string): Promise<void> {
  if (isPostgres(trx)) await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [name]);
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

/** Bindings as Knex's better-sqlite3 client passes them (Date -> epoch ms, boolean -> 0/1). */
function sqliteBindings(sql: string, bindings: readonly Knex.RawBinding[]): unknown[] {
  const out = new Array(bindings.length);
  for (let i = 0; i < bindings.length; i++) {
    const b = bindings[i];
    if (b === undefined) throw new Error(`Undefined binding ${i} in query: ${sql}`);
    out[i] = b instanceof Date ? b.valueOf() : typeof b === 'boolean' ? Number(b) : b;
  }
  return out;
}

/** Statements kept per SQLite connection (one per SQL text), least recently used first out. */
const STATEMENT_CACHE_SIZE = 500;
const statementCaches = new WeakMap<SqliteConnection, Map<string, BetterSqlite3.Statement>>();

/**
 * The prepared statement of `sql` on `conn`, prepared once per SQL text and reused: preparing
 * costs about as much as running a small page's statement (Knex's client prepares again on every
 * query, so the hot reads below run on the connection itself). Safe to share: better-sqlite3 runs
 * a statement to completion synchronously, so no two reads use one statement at once.
 */
export function cachedStatement(conn: SqliteConnection, sql: string): BetterSqlite3.Statement {
  let cache = statementCaches.get(conn);
  if (!cache) statementCaches.set(conn, (cache = new Map<string, BetterSqlite3.Statement>()));
  let statement = cache.get(sql);
  if (statement) cache.delete(sql);
  else {
    statement = conn.prepare(sql);
    if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  }
  cache.set(sql, statement);
  return statement;
}

/** Statements cached for `conn` (tests). */
export function cachedStatementCount(conn: SqliteConnection): number {
  return statementCaches.get(conn)?.size ?? 0;
}

/**
 * Runs a read-only SQL statement (`?` placeholders) and returns its rows on either dialect
 * (SQLite: a cached statement on the connection taken from the pool, or the transaction's own).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw rows are untyped; each caller types its statement's rows
export async function readRows(db: Db, sql: string, bindings: readonly Knex.RawBinding[]): Promise<any[]> {
  if (!isPostgres(db)) {
    const conn = await acquireSqlite(db);
    try {
      return cachedStatement(conn, sql).all(sqliteBindings(sql, bindings));
    } finally {
      await knexClient(db).releaseConnection(conn);
    }
  }
  const result = await db.raw<{ rows: unknown[] }>(sql, bindings as Knex.RawBinding[]);
  return result.rows;
}

/** Runs a cached statement returning arrays (columns in select order), not objects. */
function allTuples(conn: SqliteConnection, sql: string, bindings: readonly Knex.RawBinding[]): unknown[][] {
  const statement = cachedStatement(conn, sql);
  statement.raw(true);
  try {
    return statement.all(sqliteBindings(sql, bindings)) as unknown[][];
  } finally {
    statement.raw(false); // the cached statement is shared with readers that expect objects
  }
}

/**
 * `readRows` returning each row as an array of its columns in select order. Building a row
 * object costs better-sqlite3 more than the statement itself on small pages, so the hottest
 * lists read tuples (`pg` answers arrays with `rowMode: 'array'`).
 */
export async function readTuples(db: Db, sql: string, bindings: readonly Knex.RawBinding[]): Promise<unknown[][]> {
  if (!isPostgres(db)) {
    const conn = await acquireSqlite(db);
    try {
      return allTuples(conn, sql, bindings);
    } finally {
      await knexClient(db).releaseConnection(conn);
    }
  }
  const result = (await db.raw(sql, bindings as Knex.RawBinding[]).options({ rowMode: 'array' })) as { rows: unknown[][] };
  return result.rows;
}

/** Reads rows synchronously (inside `readBatchSqlite`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rows come from better-sqlite3 untyped; each caller types its statement's rows
export type SyncRead = (sql: string, bindings: readonly Knex.RawBinding[]) => any[];
/** Reads rows as tuples synchronously (inside `readBatchSqlite`). */
export type SyncReadTuples = (sql: string, bindings: readonly Knex.RawBinding[]) => unknown[][];

/**
 * SQLite only: runs several small reads on the one connection, synchronously and with nothing in
 * between, so together they see one state of the database (like one statement would). The
 * connection is taken from the pool (or is the transaction's own connection when `db` is a
 * transaction) for the duration. Several narrow statements cost less
 * here than one wide UNION of them: better-sqlite3 builds every row as an object, and there is
 * no network round trip to save.
 */
export async function readBatchSqlite<T>(db: Db, reads: (read: SyncRead, readTuples: SyncReadTuples) => T): Promise<T> {
  if (isPostgres(db)) throw new Error('readBatchSqlite is for SQLite');
  const conn = await acquireSqlite(db);
  try {
    return runBatch(conn, reads);
  } finally {
    await knexClient(db).releaseConnection(conn);
  }
}

function runBatch<T>(conn: SqliteConnection, reads: (read: SyncRead, readTuples: SyncReadTuples) => T): T {
  return reads(
    (sql, bindings) => cachedStatement(conn, sql).all(sqliteBindings(sql, bindings)),
    (sql, bindings) => allTuples(conn, sql, bindings),
  );
}

/**
 * Serialises transactions that change one aggregate (row lock `SELECT ... FOR NO KEY UPDATE` on
 * PostgreSQL; SQLite already runs one write transaction at a time on its single connection).
 *
 * NO KEY UPDATE, not UPDATE: inserting a row whose foreign key names the locked row (a video or
 * an event of the team) takes a KEY SHARE lock on it, which FOR UPDATE conflicts with. Two
 * transactions that each inserted such a row and then asked for FOR UPDATE deadlocked (the
 * crash soak met it: two appraisals of one team accepted at once, one answered 500). NO KEY
 * UPDATE still excludes every other locker of the row, and does not wait for KEY SHARE.
 */
export async function lockRowForUpdate(db: Db, table: string, id: string): Promise<void> {
  if (isPostgres(db)) await db(table).where({ id }).forNoKeyUpdate().first('id');
}
