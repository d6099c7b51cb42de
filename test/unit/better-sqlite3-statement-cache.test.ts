import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { statementCacheHits, statementCacheOf } from '../../src/db/better-sqlite3-statement-cache';
import { Db, openDatabase } from '../../src/db/database';

describe('better-sqlite3-statement-cache (run-time patch of the connections Knex opens)', () => {
  let dir: string;
  let db: Db;
  let conn: any;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-stmt-cache-'));
    db = openDatabase({ client: 'sqlite', filename: path.join(dir, 'test.sqlite') });
    await db.schema.createTable('t', (t) => {
      t.integer('id').primary();
      t.string('name');
    });
    conn = await db.client.acquireConnection();
    await db.client.releaseConnection(conn);
  });

  after(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the internals it relies on are still there (fails when an upgrade of knex or better-sqlite3 breaks the patch)', async () => {
    assert.ok(conn instanceof Database, "Knex's better-sqlite3 pool no longer hands out a better-sqlite3 Database");
    assert.equal(typeof Database.prototype.prepare, 'function', 'better-sqlite3 Database has no prepare');
    const cache = statementCacheOf(conn);
    assert.ok(cache, 'the connection the pool created has no statement cache (afterCreate did not run the patch)');
    // Knex's client prepares every query through the connection's own prepare: the same SQL twice
    // through Knex is answered from the cache the second time.
    const sql = 'select id, name from t where id = ?';
    await db.raw(sql, [1]);
    const before = statementCacheHits();
    await db.raw(sql, [2]);
    assert.equal(statementCacheHits() - before, 1, 'Knex no longer prepares through connection.prepare (the patch has no effect)');
    assert.ok(cache.has(sql));
  });

  it('data statements are prepared once per SQL text; other statements every time', async () => {
    const select = 'select count(*) as n from t';
    assert.equal(conn.prepare(select), conn.prepare(select), 'one statement per SQL text');
    await db('t').insert({ id: 10, name: 'a' });
    await db('t').insert({ id: 11, name: 'b' });
    assert.deepEqual(await db('t').count({ n: '*' }), [{ n: 2 }]);
    assert.notEqual(conn.prepare('pragma user_version'), conn.prepare('pragma user_version'), 'pragmas are not cached');
  });

  it('a cached statement gives the rows of the current data', async () => {
    const sql = 'select name from t where id = ?';
    assert.deepEqual(await db.raw(sql, [10]), [{ name: 'a' }]);
    await db('t').where({ id: 10 }).update({ name: 'c' });
    assert.deepEqual(await db.raw(sql, [10]), [{ name: 'c' }]);
  });
});
