/**
 * Each harness (each `createTestDatabase`) gets its own database: a fresh SQLite file, or a fresh PostgreSQL database
 * when VIDMILL_TEST_DB=postgres. scripts/run-tests.ts runs the files that import this module
 * (directly or through the harness) once per dialect, and the others once, with
 * VIDMILL_TEST_DB=none: this module refuses to load there, so a file that opens a database
 * cannot slip into that pass unnoticed.
 *
 * Every database starts migrated, as a copy of a template migrated once rather than migrated
 * anew (migrating cost 0.3 to 1.5 s per PostgreSQL database, and a harness is built per test):
 * - PostgreSQL: `create database <fresh> template vidmill_tpl_<hash>`, where the hash is of the
 *   migration files' contents, so a change to any migration builds a new template. The template
 *   is built once (by whichever test process needs it first; later runs reuse it), under a
 *   temporary name that is renamed only once it is fully migrated, and nobody connects to it
 *   afterwards (`allow_connections false`), as cloning requires.
 * - SQLite: a file migrated once per test process, copied for each database.
 * SQLite copies are removed after their test; PostgreSQL ones are emptied and used again by the
 * next test of the process (see `handBack`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import type { Config } from '../../src/config';
import { Db, migrateToLatest, openDatabase } from '../../src/db/database';
import { scaled } from './timeouts';

if (process.env.VIDMILL_TEST_DB === 'none') {
  throw new Error('test/helpers/database.ts was loaded in the dialect-free run of npm test (VIDMILL_TEST_DB=none): run this file with VIDMILL_TEST_DB=sqlite or postgres');
}

export const TEST_DIALECT: 'sqlite' | 'postgres' = process.env.VIDMILL_TEST_DB === 'postgres' ? 'postgres' : 'sqlite';
export const PG_ADMIN_URL = process.env.VIDMILL_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const MIGRATIONS_DIR = path.resolve(__dirname, '..', '..', 'src', 'db', 'migrations');

export interface TestDatabase {
  db: Db;
  config: Config['database'];
  drop(): Promise<void>;
}

/** A hash of every migration file (names and contents): the template's identity. */
function migrationsHash(): string {
  const hash = createHash('sha256');
  for (const name of readdirSync(MIGRATIONS_DIR).sort()) {
    hash
      .update(name)
      .update('\0')
      .update(readFileSync(path.join(MIGRATIONS_DIR, name)))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

function pgUrl(database: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * The run's tag in the names of its PostgreSQL databases (VIDMILL_TEST_RUN, set by
 * scripts/run-tests.ts): the run drops what its passes left once they end. A mocha process run
 * in parallel mode (--parallel) loads this module once per worker, so the root `after` hook below
 * is registered for the first file of each worker only and the last databases of a worker would
 * stay otherwise.
 */
export const RUN_TAG = /^[0-9a-f]{1,16}$/.test(process.env.VIDMILL_TEST_RUN ?? '') ? `${process.env.VIDMILL_TEST_RUN}_` : '';

let admin: Knex | undefined;
/** One admin connection per test process, for creating and dropping databases (closed at exit by --exit). */
function pgAdmin(): Knex {
  return (admin ??= knex({ client: 'pg', connection: PG_ADMIN_URL, pool: { min: 0, max: 2, idleTimeoutMillis: 1000 } }));
}

const dropPostgresDatabase = (name: string) => pgAdmin().raw(`drop database if exists ${name} with (force)`);

let pgTemplate: Promise<string> | undefined;
/** The name of the migrated PostgreSQL template for these migrations, built if missing. */
function postgresTemplate(): Promise<string> {
  return (pgTemplate ??= (async () => {
    const name = `vidmill_tpl_${migrationsHash()}`;
    const exists = async () => (await pgAdmin().raw<{ rows: unknown[] }>('select 1 from pg_database where datname = ?', [name])).rows.length > 0;
    if (await exists()) return name;
    const building = `${name}_b${randomBytes(4).toString('hex')}`;
    await pgAdmin().raw(`create database ${building}`);
    try {
      const db = openDatabase({ client: 'pg', connectionString: pgUrl(building) });
      try {
        await migrateToLatest(db);
      } finally {
        await db.destroy();
      }
      // Published only when complete; of two processes building at once, the first rename wins.
      await pgAdmin().raw(`alter database ${building} rename to ${name}`);
      await pgAdmin().raw(`alter database ${name} with allow_connections false`);
    } catch (err) {
      await dropPostgresDatabase(building);
      if (!(await exists())) throw err;
    }
    return name;
  })());
}

/**
 * PostgreSQL databases a finished test has handed back, ready for the next one. `drop database`
 * forces a checkpoint (PostgreSQL 15): it cost one to two seconds per test on the shared machine,
 * more than the test itself in most files. So a test's database is not dropped but emptied, and
 * the next test of the process gets it back as a migrated template copy would be: every
 * connection to it is ended (those of processes the test started included, as `with (force)`
 * would), every table but Knex's own is truncated and its sequences restarted (the migrations
 * insert no rows). The databases left at the end are dropped by a root `after` hook under mocha,
 * or at once elsewhere (a benchmark).
 */
const emptied: string[] = [];
const underMocha = typeof after === 'function';
if (underMocha) {
  after('drop the test databases of this process', async function () {
    this.timeout(scaled(120_000));
    for (const name of emptied.splice(0)) await dropPostgresDatabase(name);
  });
}

async function handBack(name: string): Promise<void> {
  if (!underMocha) {
    await dropPostgresDatabase(name);
    return;
  }
  await pgAdmin().raw('select pg_terminate_backend(pid) from pg_stat_activity where datname = ? and pid <> pg_backend_pid()', [name]);
  const db = knex({ client: 'pg', connection: pgUrl(name), pool: { min: 0, max: 1 } });
  try {
    const { rows } = await db.raw<{ rows: Array<{ tablename: string }> }>("select tablename from pg_tables where schemaname = 'public' and tablename not like 'knex\\_migrations%'");
    if (rows.length) await db.raw(`truncate table ${rows.map((r) => `"${r.tablename}"`).join(', ')} restart identity cascade`);
  } finally {
    await db.destroy();
  }
  emptied.push(name);
}

let sqliteTemplate: string | undefined;
/** A migrated SQLite file of this test process (removed at exit). */
async function sqliteTemplateFile(): Promise<string> {
  if (sqliteTemplate) return sqliteTemplate;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-test-template-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const filename = path.join(dir, 'template.sqlite');
  const db = openDatabase({ client: 'sqlite', filename });
  try {
    await migrateToLatest(db);
    await db.raw('pragma wal_checkpoint(TRUNCATE)');
  } finally {
    await db.destroy();
  }
  if (existsSync(`${filename}-wal`)) throw new Error(`the SQLite template kept a write-ahead log: ${filename}-wal`);
  return (sqliteTemplate = filename);
}

/** A new PostgreSQL database named for this run: a copy of `template`, or without any table. */
async function newPostgresDatabase(template?: string): Promise<string> {
  const name = `vidmill_test_${RUN_TAG}${randomBytes(6).toString('hex')}`;
  await pgAdmin().raw(`create database ${name}${template ? ` template ${template}` : ''}`);
  return name;
}

/** The PostgreSQL database `name` opened; `drop` closes its pool, then hands the name to `release`. */
function openPostgresDatabase(name: string, release: (name: string) => Promise<unknown>): TestDatabase {
  const config = { client: 'pg' as const, connectionString: pgUrl(name) };
  const db = openDatabase(config);
  return {
    db,
    config,
    async drop() {
      await db.destroy();
      await release(name);
    },
  };
}

/** A new PostgreSQL database without any table (not from the migrated template), dropped by `drop`. */
export async function createEmptyPostgresDatabase(): Promise<TestDatabase> {
  return openPostgresDatabase(await newPostgresDatabase(), dropPostgresDatabase);
}

export async function createTestDatabase(): Promise<TestDatabase> {
  if (TEST_DIALECT === 'postgres') {
    return openPostgresDatabase(emptied.pop() ?? (await newPostgresDatabase(await postgresTemplate())), handBack);
  }
  const template = await sqliteTemplateFile();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-test-'));
  const config = { client: 'sqlite' as const, filename: path.join(dir, 'vidmill.sqlite') };
  copyFileSync(template, config.filename);
  const db = openDatabase(config);
  return {
    db,
    config,
    async drop() {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
