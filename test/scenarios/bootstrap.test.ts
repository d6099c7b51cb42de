import { strict as assert } from 'node:assert';
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { migrateToLatest, openDatabase } from '../../src/db/database';
import { migrationSource } from '../../src/db/migrations';
import { createEmptyPostgresDatabase, TEST_DIALECT } from '../helpers/database';
import { serverArgs } from '../helpers/entry-points';
import { basic, createHarness, Harness } from '../helpers/harness';
import { waitFor } from '../helpers/scenario';
import { scaled } from '../helpers/timeouts';

const ROOT = path.resolve(__dirname, '../..');

/** A port nobody listens on right now. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Runs the server (test/helpers/entry-points.ts) until it listens, then stops it with SIGTERM; returns all it wrote to stdout. */
async function startAndStop(env: Record<string, string>, whileUp: (stdout: string) => Promise<void> = async () => undefined): Promise<string> {
  const child: ChildProcess = spawn(process.execPath, serverArgs(), { cwd: ROOT, env: { PATH: process.env.PATH, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const listening = () => stdout.includes('Vidmill is listening');
  await waitFor('the server to listen or exit', () => listening() || child.exitCode !== null, { timeoutMs: 45_000, intervalMs: 50 }).catch(() => undefined);
  if (!listening()) {
    child.kill('SIGKILL');
    throw new Error(`the server did not start:\n${stdout}\n${stderr}`);
  }
  try {
    await whileUp(stdout);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return stdout;
}

describe(`First start (${TEST_DIALECT})`, () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
  });
  afterEach(() => h.close());

  it('an empty database gets an owner user, a team and its Default Project from the bootstrap settings', async () => {
    const owner = await h.services.accounts.bootstrap({ email: 'Owner@Example.com', password: 'a-long-password' });
    assert.equal(owner?.email, 'owner@example.com');
    assert.equal(owner?.generatedPassword, undefined, 'a configured password is not shown');
    const auth = basic('owner@example.com', 'a-long-password');
    const created = await h.request.post('/api/v1/api-keys').set('Authorization', auth).send({ name: 'first', active: true });
    assert.equal(created.status, 201);
    const project = await h.request.get('/api/v1/projects/default').set('X-API-Key', created.body.apiKey);
    assert.equal(project.status, 200);
    assert.equal(project.body.name, 'Default Project');
  });

  it('without a configured password one is generated and returned once; a second start changes nothing', async () => {
    const owner = await h.services.accounts.bootstrap({});
    assert.ok(owner?.generatedPassword);
    assert.equal(await h.services.accounts.bootstrap({}), undefined);
    const res = await h.request.get('/api/v1/api-keys').set('Authorization', basic(owner.email, owner.generatedPassword));
    assert.equal(res.status, 200);
    const [{ n }] = (await h.database.db('users').count({ n: '*' })) as [{ n: number | string }];
    assert.equal(Number(n), 1);
  });

  it('processes starting together on an empty database: one makes the owner, the others find it (no failed start)', async () => {
    const starts = await Promise.all([1, 2, 3].map(() => h.services.accounts.bootstrap({})));
    assert.equal(starts.filter(Boolean).length, 1, JSON.stringify(starts));
    const [{ n }] = (await h.database.db('users').count({ n: '*' })) as [{ n: number | string }];
    assert.equal(Number(n), 1);
  });

  if (TEST_DIALECT === 'postgres') {
    it('processes starting together on an empty PostgreSQL database migrate it once between them (no "relation knex_migrations already exists", no "already locked")', async function () {
      this.timeout(scaled(120_000));
      // Four processes (each its own pool) on a new database. Before the lock, most of them failed
      // ("Migration table is already locked", or "relation knex_migrations already exists").
      const empty = await createEmptyPostgresDatabase();
      const pools = [1, 2, 3, 4].map(() => openDatabase(empty.config));
      try {
        const outcomes = await Promise.allSettled(pools.map((db) => migrateToLatest(db)));
        assert.deepEqual(
          outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'migrated')),
          ['migrated', 'migrated', 'migrated', 'migrated'],
        );
        const [, pending] = (await empty.db.migrate.list({ migrationSource })) as [unknown[], unknown[]];
        assert.equal(pending.length, 0, 'no migration left pending');
      } finally {
        await Promise.all(pools.map((db) => db.destroy()));
        await empty.drop();
      }
    });
  }

  it('npm start on an empty database prints the generated password once, in a framed block apart from the log lines, and never logs it', async function () {
    this.timeout(scaled(120_000));
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-first-start-'));
    try {
      const database = h.database.config;
      const port = await freePort();
      const env = {
        VIDMILL_DATA_DIR: dataDir,
        VIDMILL_DATABASE_URL: database.client === 'sqlite' ? `sqlite:${database.filename}` : database.connectionString,
        VIDMILL_MASTER_KEY: randomBytes(32).toString('base64'),
        VIDMILL_ROLE: 'api',
        VIDMILL_HOST: '127.0.0.1',
        VIDMILL_PORT: String(port),
      };
      let signedIn = 0;
      let password = '';
      const first = await startAndStop(env, async (stdout) => {
        password = /\|\s+password:\s+(\S+)\s+\|/.exec(stdout)?.[1] ?? '';
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/api-keys`, { headers: { Authorization: basic('owner@vidmill.local', password) } });
        signedIn = res.status;
      });
      assert.ok(password, 'the block names the password');
      assert.equal(signedIn, 200, 'the printed password signs in');

      const lines = first.split('\n');
      const jsonLines = lines.filter((l) => l.startsWith('{'));
      assert.ok(jsonLines.length >= 2, first);
      for (const l of jsonLines) assert.ok(!l.includes(password), `a log line carries the password: ${l}`);
      const created = jsonLines.map((l) => JSON.parse(l)).find((l) => /created the owner user/.test(l.msg));
      assert.equal(created?.passwordGenerated, true, 'the log says a password was generated');
      assert.equal(first.split(password).length - 1, 1, 'the password is printed exactly once');
      // The block: a frame of its own lines, every one of them outside the JSON lines.
      const start = lines.findIndex((l) => /^\+-+\+$/.test(l));
      const end = lines.findIndex((l, i) => i > start && /^\+-+\+$/.test(l));
      assert.ok(start >= 0 && end > start, first);
      const block = lines.slice(start, end + 1);
      assert.ok(
        block.every((l) => l.length === block[0]!.length && /^[+|]/.test(l)),
        block.join('\n'),
      );
      assert.ok(block.some((l) => l.includes(password) && l.includes('password:')));
      assert.ok(block.some((l) => l.includes('owner@vidmill.local')));

      const second = await startAndStop(env);
      assert.doesNotMatch(second, /password:/, 'a second start shows nothing');
      assert.ok(!second.includes(password));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
