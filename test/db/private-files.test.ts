// test-databases: one
// (SQLite only: its subject is the SQLite file of the embedded default and the data folder.)
/**
 * The data folder and the SQLite file are for the service user only: the folder Vidmill creates
 * is 0700, the database file (and SQLite's -wal and -shm next to it) 0600, whatever the umask of
 * the caller; an existing database file readable by others is narrowed. The real process, started
 * on a fresh data folder, leaves nothing in it that group or others can read.
 */
import { strict as assert } from 'node:assert';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPrivateSqliteFile, openDatabase } from '../../src/db/database';
import { createApiKey, embeddedEnv, startVidmillProcess } from '../helpers/vidmill-process';
import { scaled } from '../helpers/timeouts';

const modeOf = (p: string) => statSync(p).mode & 0o777;

/** Every entry under `dir` (itself included) with its permission bits. */
function walk(dir: string): Array<[string, number]> {
  const out: Array<[string, number]> = [[dir, modeOf(dir)]];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(p));
    else out.push([p, modeOf(p)]);
  }
  return out;
}

describe('The data folder and the SQLite file are private to the service user', function () {
  this.timeout(scaled(120_000));
  let root: string;
  let umask: number;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'vidmill-private-'));
    umask = process.umask(0o022); // a usual umask, under which files are world-readable
  });
  afterEach(() => {
    process.umask(umask);
    rmSync(root, { recursive: true, force: true });
  });

  it('openDatabase creates the folder 0700 and the file 0600, and SQLite its -wal and -shm 0600', async () => {
    const file = path.join(root, 'data', 'nested', 'vidmill.sqlite');
    const db = openDatabase({ client: 'sqlite', filename: file });
    try {
      await db.schema.createTable('t', (t) => t.integer('x'));
      await db('t').insert({ x: 1 });
      assert.equal(modeOf(path.join(root, 'data')).toString(8), '700');
      assert.equal(modeOf(path.dirname(file)).toString(8), '700');
      for (const f of [file, `${file}-wal`, `${file}-shm`]) assert.equal(modeOf(f).toString(8), '600', f);
    } finally {
      await db.destroy();
    }
  });

  it('an existing database file readable by others is narrowed to 0600; an existing folder is left as it is', () => {
    const file = path.join(root, 'vidmill.sqlite');
    writeFileSync(file, '');
    chmodSync(file, 0o644);
    createPrivateSqliteFile(file);
    assert.equal(modeOf(file).toString(8), '600');
    assert.equal(modeOf(root).toString(8), '700'); // mkdtemp makes it 0700 already
  });

  it('the real process on a fresh data folder: every folder 0700 and every file 0600 (database, master.key, blobs)', async () => {
    const dataDir = path.join(root, 'data');
    const owner = { email: 'owner@example.com', password: 'a-long-enough-password' };
    const p = startVidmillProcess(embeddedEnv(dataDir, owner, { VIDMILL_LOG_LEVEL: 'info' }), { captureOutput: true });
    try {
      const base = await p.listening();
      await createApiKey(base, owner, 'key'); // a write after start
      const entries = walk(dataDir);
      const names = entries.map(([p]) => path.relative(dataDir, p));
      for (const expected of ['vidmill.sqlite', 'master.key']) assert.ok(names.includes(expected), `${expected} in ${names.join(', ')}`);
      const open = entries.filter(([, mode]) => mode & 0o077).map(([p, mode]) => `${path.relative(root, p)} ${mode.toString(8)}`);
      assert.deepEqual(open, [], 'readable by group or others');
    } finally {
      await p.kill('SIGTERM');
    }
  });
});
