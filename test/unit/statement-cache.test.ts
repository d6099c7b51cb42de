import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cachedStatement, cachedStatementCount, Db, openDatabase, readBatchSqlite, readRows, readTuples } from '../../src/db/database';

/** The statement cache of the hot SQLite reads (src/db/database.ts; it replaced a run-time patch of Knex's connections, issue 28). */
describe('SQLite statement cache of readRows, readTuples and readBatchSqlite', () => {
  let dir: string;
  let db: Db;
  let conn: any;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-stmt-cache-'));
    db = openDatabase({ client: 'sqlite', filename: path.join(dir, 'test.sqlite') });
    await db.schema.createTable('t', (t) => {
      t.integer('id').primary();
      t.string('name');
      t.bigInteger('at');
      t.boolean('flag');
    });
    await db('t').insert([
      { id: 1, name: 'a', at: 1000, flag: true },
      { id: 2, name: 'b', at: 2000, flag: false },
    ]);
    conn = await db.client.acquireConnection();
    await db.client.releaseConnection(conn);
  });

  after(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prepares a statement once per SQL text on the connection and reuses it', async () => {
    const sql = 'select id, name from t where id = ?';
    assert.equal(cachedStatement(conn, sql), cachedStatement(conn, sql));
    const before = cachedStatementCount(conn);
    assert.deepEqual(await readRows(db, sql, [1]), [{ id: 1, name: 'a' }]);
    assert.deepEqual(await readTuples(db, sql, [2]), [[2, 'b']]);
    assert.deepEqual(await readBatchSqlite(db, (read, tuples) => [read(sql, [1]), tuples(sql, [2])]), [[{ id: 1, name: 'a' }], [[2, 'b']]]);
    assert.equal(cachedStatementCount(conn), before, 'the same SQL text is one statement for rows and tuples');
  });

  it('a cached statement reads the current data, with bindings as Knex passes them (Date, boolean)', async () => {
    const sql = 'select name from t where at < ? and flag = ?';
    assert.deepEqual(await readRows(db, sql, [new Date(1500), true]), [{ name: 'a' }]);
    await db('t').where({ id: 1 }).update({ name: 'c' });
    assert.deepEqual(await readRows(db, sql, [new Date(1500), true]), [{ name: 'c' }]);
    await assert.rejects(readRows(db, sql, [undefined as any, true]), /Undefined binding/);
  });

  it('inside a transaction, reads see its own writes on its connection', async () => {
    await db.transaction(async (trx) => {
      await trx('t').insert({ id: 3, name: 'in-trx', at: 3000, flag: false });
      assert.deepEqual(await readRows(trx, 'select name from t where id = ?', [3]), [{ name: 'in-trx' }]);
      assert.deepEqual(await readTuples(trx, 'select count(*) from t', []), [[3]]);
    });
  });

  it('is bounded: the least recently used statement goes first', () => {
    for (let i = 0; i < 600; i++) cachedStatement(conn, `select ${i} as n`);
    assert.equal(cachedStatementCount(conn), 500);
  });
});
