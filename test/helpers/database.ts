/**
 * Each test file gets its own database: a fresh SQLite file, or a fresh PostgreSQL database
 * when VIDMILL_TEST_DB=postgres. scripts/run-tests.ts runs the files that import this module
 * (directly or through the harness) once per dialect, and the others once, with
 * VIDMILL_TEST_DB=none: this module refuses to load there, so a file that opens a database
 * cannot slip into that pass unnoticed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knex from 'knex';
import type { Config } from '../../src/config';
import { Db, migrateToLatest, openDatabase } from '../../src/db/database';

if (process.env.VIDMILL_TEST_DB === 'none') {
  throw new Error('test/helpers/database.ts was loaded in the dialect-free run of npm test (VIDMILL_TEST_DB=none): run this file with VIDMILL_TEST_DB=sqlite or postgres');
}

export const TEST_DIALECT: 'sqlite' | 'postgres' = process.env.VIDMILL_TEST_DB === 'postgres' ? 'postgres' : 'sqlite';
export const PG_ADMIN_URL = process.env.VIDMILL_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase {
  db: Db;
  config: Config['database'];
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  if (TEST_DIALECT === 'postgres') {
    const name = `vidmill_test_${randomBytes(6).toString('hex')}`;
    const admin = knex({ client: 'pg', connection: PG_ADMIN_URL, pool: { min: 0, max: 1 } });
    await admin.raw(`create database ${name}`);
    const url = new URL(PG_ADMIN_URL);
    url.pathname = `/${name}`;
    const config = { client: 'pg' as const, connectionString: url.toString() };
    const db = openDatabase(config);
    await migrateToLatest(db);
    return {
      db,
      config,
      async drop() {
        await db.destroy();
        await admin.raw(`drop database if exists ${name} with (force)`);
        await admin.destroy();
      },
    };
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-test-'));
  const config = { client: 'sqlite' as const, filename: path.join(dir, 'vidmill.sqlite') };
  const db = openDatabase(config);
  await migrateToLatest(db);
  return {
    db,
    config,
    async drop() {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
