/**
 * The production start as the README gives it: `npm start` (prestart: `npm run build`, then
 * `node dist/src/main.js`) and `npm run worker`, as real processes on a temporary SQLite data dir.
 *
 * - A database migrated by the TypeScript sources (the migrations tsx runs) is opened by the
 *   compiled code: it migrates nothing (knex_migrations unchanged) and starts. Knex records
 *   migration names; a name that differed between the `.ts` and the compiled `.js` run would make
 *   knex refuse to start ("migration directory is corrupt") or run a migration twice.
 * - SIGTERM or SIGINT sent to the npm process alone (as systemd or a container runtime sends it
 *   to the first process) stops the server: npm exits, no process of its group remains, the
 *   port is closed.
 *
 * Dialect-free (it opens no test database), so it runs once. The first `npm start` builds dist/
 * (tsc -b; up to a minute on a cold, busy machine), later ones find it up to date.
 */
import { strict as assert } from 'node:assert';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { migrateToLatest, openDatabase } from '../../src/db/database';
import { migrationSource } from '../../src/db/migrations';
import { waitFor } from '../helpers/scenario';
import { scaled } from '../helpers/timeouts';

const ROOT = path.resolve(__dirname, '../..');
const STOP_WITHIN_MS = 10_000;

interface Started {
  npm: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `npm <args>` in its own process group (detached), so the whole tree can be checked and cleaned up. */
function startNpm(args: string[], dataDir: string): Started {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('VIDMILL_') && !k.startsWith('npm_')) env[k] = v;
  Object.assign(env, {
    VIDMILL_DATA_DIR: dataDir,
    VIDMILL_HOST: '127.0.0.1',
    VIDMILL_PORT: '0',
    VIDMILL_BOOTSTRAP_EMAIL: 'owner@example.com',
    VIDMILL_BOOTSTRAP_PASSWORD: 'a-long-password',
  });
  const npm = spawn('npm', args, { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  npm.stdout.on('data', (d) => (out += d));
  npm.stderr.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => npm.on('exit', (code, signal) => resolve({ code, signal })));
  return { npm, output: () => out, exited };
}

/** Whether any process of the group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

function killGroup(pgid: number | undefined): void {
  if (pgid === undefined) return;
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    /* gone already */
  }
}

/** The log line JSON objects printed so far (the build's own output is not JSON and is skipped). */
function logLines(out: string): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  for (const line of out.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      /* a partial line */
    }
  }
  return lines;
}

async function waitForLog(started: Started, msg: string, timeoutMs: number): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined;
  await waitFor(
    `"${msg}" in the output`,
    () => {
      found = logLines(started.output()).find((l) => l.msg === msg);
      if (!found && started.npm.exitCode !== null) throw new Error(`npm exited (${started.npm.exitCode}) before "${msg}":\n${started.output()}`);
      return found !== undefined;
    },
    { timeoutMs, intervalMs: 50 },
  );
  return found!;
}

async function portAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Sends `signal` to the npm process alone and checks that everything it started is gone. */
async function stopWith(started: Started, signal: NodeJS.Signals, port?: number): Promise<void> {
  const pgid = started.npm.pid!;
  const sentAt = Date.now();
  started.npm.kill(signal);
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), STOP_WITHIN_MS).unref());
  const result = await Promise.race([started.exited, timeout]);
  assert.notEqual(result, 'timeout', `npm did not exit within ${STOP_WITHIN_MS} ms of ${signal}:\n${started.output()}`);
  // npm has exited; its children must be gone with it (not reparented and still serving).
  await waitFor('no process of the npm group to remain', () => !groupAlive(pgid), { timeoutMs: Math.max(1000, STOP_WITHIN_MS - (Date.now() - sentAt)), intervalMs: 50, exact: true }).catch(() => {
    throw new Error(`processes of the npm start group still run ${Date.now() - sentAt} ms after ${signal}`);
  });
  if (port !== undefined) assert.equal(await portAccepts(port), false, `port ${port} still accepts connections after ${signal}`);
  const logs = logLines(started.output());
  assert.ok(
    logs.some((l) => l.msg === 'shutting down' && l.signal === signal),
    `the server received ${signal} and shut down in order:\n${started.output()}`,
  );
  assert.ok(
    logs.some((l) => l.msg === 'stopped'),
    `the server finished its shutdown:\n${started.output()}`,
  );
}

describe('Production start: compiled code, migrations and signals', function () {
  this.timeout(scaled(240_000));
  let dataDir: string;
  let running: Started | undefined;

  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-start-'));
  });
  afterEach(() => {
    killGroup(running?.npm.pid);
    running = undefined;
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a database migrated by the sources (tsx) opens under the compiled code with nothing to migrate; SIGTERM to npm start stops the server', async () => {
    const sourceNames = await migrationSource.getMigrations([]);
    const db = openDatabase({ client: 'sqlite', filename: path.join(dataDir, 'vidmill.db') });
    let before: unknown[];
    try {
      await migrateToLatest(db);
      before = await db('knex_migrations').select('id', 'name', 'batch', 'migration_time').orderBy('id');
      assert.deepEqual(
        before.map((r) => (r as { name: string }).name),
        sourceNames,
      );
    } finally {
      await db.destroy();
    }

    running = startNpm(['start'], dataDir);
    // The first start of a fresh checkout compiles dist/ first (prestart).
    const listening = await waitForLog(running, 'Vidmill is listening', 180_000);
    const url = String(listening.url);
    const port = Number(new URL(url).port);
    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 200);
    assert.match(running.output(), /node --max-semi-space-size=4 dist\/src\/main\.js/, 'npm start runs the compiled code, with the young generation bounded (docs/operations.md)');

    // The compiled migration list names the same migrations as the sources.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the compiled module, loaded from dist/ on purpose
    const compiled = require(path.join(ROOT, 'dist', 'src', 'db', 'migrations', 'index.js')) as typeof import('../../src/db/migrations');
    assert.deepEqual(await compiled.migrationSource.getMigrations([]), sourceNames);

    await stopWith(running, 'SIGTERM', port);
    running = undefined;

    const reopened = openDatabase({ client: 'sqlite', filename: path.join(dataDir, 'vidmill.db') });
    try {
      const after = await reopened('knex_migrations').select('id', 'name', 'batch', 'migration_time').orderBy('id');
      assert.deepEqual(after, before, 'the compiled start ran no migration');
    } finally {
      await reopened.destroy();
    }
  });

  it('SIGINT to npm start stops the server', async () => {
    running = startNpm(['start'], dataDir);
    const listening = await waitForLog(running, 'Vidmill is listening', 180_000);
    const port = Number(new URL(String(listening.url)).port);
    assert.equal((await fetch(`${String(listening.url)}/healthz`)).status, 200);
    await stopWith(running, 'SIGINT', port);
    running = undefined;
  });

  it('SIGTERM to npm run worker stops the worker', async () => {
    running = startNpm(['run', 'worker'], dataDir);
    await waitForLog(running, 'Vidmill worker started', 180_000);
    await stopWith(running, 'SIGTERM');
    running = undefined;
  });
});
