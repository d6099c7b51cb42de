// test-databases: one
// (SQLite only: its subject is the CLI as an integrator starts it (npx, npm run, signals, exit codes, prompts); the API's SQL is tested on PostgreSQL by the scenario files.)
/**
 * The `vidmill` CLI as an integrator meets it on the first day (issue 27), driven as a child
 * process from a folder outside the checkout:
 * - `npx vidmill` (the bin of @vidmill/sdk, linked by `npm ci`) prints nothing but the JSON
 *   document on stdout; relative paths are read from the caller's folder, with `npx` and with
 *   `npm run vidmill` alike;
 * - SIGTERM to `npm run mock`, `npm run vidmill` or `npx vidmill` leaves no process behind;
 * - errors keep the API's validation details (field, message), in text and in `--json`;
 * - exit codes: a missing local file 2, a DNS failure 3 (the API's address, and an upload URL);
 * - an upload whose saved session cannot be reached says so and names `--restart`, which starts a
 *   new upload;
 * - `process --help` lists the built-in presets; the price prompt on a pseudo-terminal names its
 *   unit and the wallet balance.
 */
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { slug } from '../../sdk/src/cli/process';
import { uploadFingerprint } from '../../sdk/src/upload-file';
import { BUILT_IN_CONFIGURATIONS } from '../../src/processing-planner/built-ins';
import { cliCommandLine, runCli, runInTerminal, startCliServer, startCliServerWithUser, type CliServer } from '../helpers/cli';
import { TEST_DIALECT } from '../helpers/database';
import type { TestUser } from '../helpers/harness';
import { fixtureBytes } from '../helpers/media-fixtures';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { waitFor } from '../helpers/scenario';
import { scaled } from '../helpers/timeouts';

const ROOT = path.resolve(__dirname, '..', '..');

interface Run {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
  stdout(): string;
}

/** Runs `command args` in `cwd` with `env` over the test's PATH and HOME (npm's own settings left out). */
function run(command: string, args: string[], cwd: string, env: Record<string, string | undefined>): Run {
  const child = spawn(command, args, { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done, stdout: () => stdout };
}

/** Every process below `pid` (children, their children, ...), from /proc. */
function descendants(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const task of tasks) {
    let children: string;
    try {
      children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8');
    } catch {
      continue;
    }
    for (const child of children.split(/\s+/).filter(Boolean).map(Number)) out.push(child, ...descendants(child));
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie (exited, not yet reaped by its parent) is not running.
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** A TCP server that accepts connections and never answers: a request to it hangs. */
async function silentServer(): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => sockets.length,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe(`vidmill CLI for integrators: npx, folders, signals, errors, exit codes, prompts (${TEST_DIALECT})`, function () {
  this.timeout(scaled(300_000));
  let media: RangeServer;
  let s: CliServer;
  let u: TestUser;
  /** The caller's folder: outside the checkout. */
  let caller: string;
  const env = (extra: Record<string, string | undefined> = {}) => ({ VIDMILL_URL: s.url, VIDMILL_API_KEY: u.apiKey, VIDMILL_CONFIG: path.join(s.home, 'config.json'), ...extra });

  before(async () => {
    media = await startRangeServer();
  });
  after(() => media.close());
  beforeEach(async () => {
    ({ s, u } = await startCliServerWithUser({ allowPrivateUrls: true, extraCa: [media.ca] }));
    caller = mkdtempSync(path.join(tmpdir(), 'vidmill-caller-'));
    writeFileSync(path.join(caller, 'clip.mp4'), fixtureBytes({ seconds: 1, width: 160, height: 120 }));
  });
  afterEach(async () => {
    await s.close();
    rmSync(caller, { recursive: true, force: true });
  });

  it('package.json declares the vidmill bin, npm ci links it, and it runs from any folder', () => {
    const sdk = JSON.parse(readFileSync(path.join(ROOT, 'sdk', 'package.json'), 'utf8'));
    assert.equal(sdk.bin.vidmill, 'bin/vidmill.js');
    assert.ok(sdk.files.includes('bin'), 'the packed package ships the bin');
    const linked = path.join(ROOT, 'node_modules', '.bin', 'vidmill');
    assert.ok(existsSync(linked), 'node_modules/.bin/vidmill (npm ci links the workspace bin)');
    assert.ok(statSync(path.join(ROOT, 'sdk', 'bin', 'vidmill.js')).mode & 0o111, 'executable');
  });

  it('npx vidmill ... --json from a folder outside the checkout: stdout is the JSON document alone; ./clip.mp4 is read from the caller’s folder', async () => {
    const r = await run('npx', ['--prefix', ROOT, 'vidmill', 'videos', 'upload', './clip.mp4', '--json'], caller, env()).done;
    assert.equal(r.code, 0, r.stderr);
    const video = JSON.parse(r.stdout); // nothing but the document: no npm banner
    assert.equal(video.name, 'clip.mp4');
    assert.equal(video.upload.file.size, statSync(path.join(caller, 'clip.mp4')).size);
    // Inside the checkout plain `npx vidmill` finds the linked bin from any of its folders.
    const inside = await run('npx', ['vidmill', 'videos', 'get', video.id, '--json'], path.join(ROOT, 'docs'), env()).done;
    assert.equal(inside.code, 0, inside.stderr);
    assert.equal(JSON.parse(inside.stdout).id, video.id);
  });

  it('npm run vidmill from another folder reads relative paths from that folder (INIT_CWD), not the repository root', async () => {
    const r = await run('npm', ['--prefix', ROOT, 'run', '--silent', 'vidmill', '--', 'videos', 'upload', './clip.mp4', '--name', 'via npm run', '--json'], caller, env()).done;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).name, 'via npm run');
    const missing = await run('npm', ['--prefix', ROOT, 'run', '--silent', 'vidmill', '--', 'videos', 'upload', './nope.mp4', '--json'], caller, env()).done;
    assert.equal(missing.code, 2, missing.stderr);
    assert.equal(JSON.parse(missing.stderr.trim().split('\n').pop()!).error.message, `No such file: ./nope.mp4 (looked for ${path.join(caller, 'nope.mp4')})`);
  });

  it('SIGTERM to npm run mock, npm run vidmill or npx vidmill leaves no process running', async function () {
    this.timeout(scaled(600_000)); // three npm starts, slow on a loaded machine
    const hanging = await silentServer();
    try {
      const cases: Array<{ what: string; start: () => Run; ready: (r: Run) => boolean }> = [
        { what: 'npm run mock', start: () => run('npm', ['--prefix', ROOT, 'run', 'mock', '--', '--port', '0'], caller, {}), ready: (r) => /mock server .* at http/.test(r.stdout()) },
        ...(['npm run vidmill', 'npx vidmill'] as const).map((what) => ({
          what,
          start: () =>
            what === 'npx vidmill'
              ? run('npx', ['--prefix', ROOT, 'vidmill', 'videos', 'list'], caller, env({ VIDMILL_URL: hanging.url }))
              : run('npm', ['--prefix', ROOT, 'run', 'vidmill', '--', 'videos', 'list'], caller, env({ VIDMILL_URL: hanging.url })),
          ready: () => hanging.connections() > 0,
        })),
      ];
      for (const c of cases) {
        const before = hanging.connections();
        const r = c.start();
        await waitFor(`${c.what} running`, () => (c.what === 'npm run mock' ? c.ready(r) : hanging.connections() > before), { timeoutMs: 180_000, intervalMs: 50 });
        const tree = descendants(r.child.pid!);
        assert.ok(tree.length > 0, `${c.what} runs a child`);
        r.child.kill('SIGTERM');
        await r.done;
        await waitFor(`${c.what}: every process gone`, () => tree.every((pid) => !alive(pid)), { timeoutMs: 10_000, intervalMs: 50 }).catch(() => undefined);
        assert.deepEqual(
          tree.filter(alive).map((pid) => `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')}`),
          [],
          `${c.what} left processes running`,
        );
      }
    } finally {
      await hanging.close();
    }
  });

  it('errors keep the API’s validation details: field and message on stderr, validationErrors with --json', async () => {
    const long = 'n'.repeat(300);
    const text = await runCli(['videos', 'import', `${media.origin}/x.mp4`, '--name', long], env(), { cwd: caller });
    assert.equal(text.code, 1, text.stderr);
    assert.match(text.stderr, /^Error: VALIDATION_ERROR: .* \(HTTP 400, requestId [0-9a-f-]{36}\)$/m);
    assert.match(text.stderr, /^ {2}body\.name: must NOT have more than 255 characters \(got n+.*\)$/m);
    const doc = await runCli(['videos', 'import', `${media.origin}/x.mp4`, '--name', long, '--json'], env(), { cwd: caller });
    assert.equal(doc.code, 1);
    const error = JSON.parse(doc.stderr.trim()).error;
    assert.equal(error.errorCode, 'VALIDATION_ERROR');
    assert.deepEqual(
      error.validationErrors.map((e: any) => [e.field, e.message]),
      [['body.name', 'must NOT have more than 255 characters']],
    );
  });

  it('exit codes: a missing local file is 2 (usage); a DNS failure is 3 (network) for the API address and for an upload URL', async () => {
    const missing = await runCli(['videos', 'upload', 'nope.mp4'], env(), { cwd: caller });
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /^Error: No such file: nope\.mp4 \(looked for .*nope\.mp4\)$/m);

    const dns = await runCli(['videos', 'list', '--retries', '0', '--json'], env({ VIDMILL_URL: 'http://vidmill-no-such-host.invalid' }), { cwd: caller });
    assert.equal(dns.code, 3, dns.stderr);
    assert.match(JSON.parse(dns.stderr.trim()).error.message, /ENOTFOUND vidmill-no-such-host\.invalid/);

    // The server answers upload URLs on a public address that does not resolve.
    await s.close();
    s = await startCliServer({ publicUrl: 'http://vidmill-no-such-host.invalid' });
    u = await s.h.user();
    const upload = await runCli(['videos', 'upload', './clip.mp4'], env(), { cwd: caller });
    assert.equal(upload.code, 3, upload.stderr);
    assert.match(upload.stderr, /The upload URL the server answered for video \S+ \(http:\/\/vidmill-no-such-host\.invalid\) cannot be reached \((ENOTFOUND|EAI_AGAIN)\)/);
  });

  it('an upload whose saved session cannot be reached fails with exit 3 naming --restart; --restart starts a new upload and forgets the old session', async () => {
    const file = path.join(caller, 'clip.mp4');
    const stat = statSync(file);
    const stale = {
      videoId: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
      uploadUrl: 'http://127.0.0.1:1/tus/uploads/3fa85f6457174562b3fc2c963f66afa6?token=x',
      size: stat.size,
      expiresAt: new Date(Date.now() + 3600_000).toISOString(),
    };
    const key = uploadFingerprint(file, stat.size, stat.mtimeMs);
    const state = path.join(s.home, 'uploads.json');
    writeFileSync(state, JSON.stringify({ [key]: stale }));

    const again = await runCli(['videos', 'upload', './clip.mp4'], env(), { cwd: caller });
    assert.equal(again.code, 3, again.stderr);
    assert.match(again.stderr, /The saved upload session of video 3fa85f64-5717-4562-b3fc-2c963f66afa6 at http:\/\/127\.0\.0\.1:1 cannot be reached \(ECONNREFUSED\)/);
    assert.match(again.stderr, /Run the same command with --restart to start a new upload \(a new video\)/);
    assert.equal(JSON.parse(readFileSync(state, 'utf8'))[key].videoId, stale.videoId, 'kept for a later resume');

    const restarted = await runCli(['videos', 'upload', './clip.mp4', '--restart', '--json'], env(), { cwd: caller });
    assert.equal(restarted.code, 0, restarted.stderr);
    const video = JSON.parse(restarted.stdout);
    assert.notEqual(video.id, stale.videoId);
    assert.notEqual(video.upload.uploadState.uploadStatus, 'FAILED');
    assert.equal(JSON.parse(readFileSync(state, 'utf8'))[key], undefined, 'the old session forgotten');
  });

  it('process --help lists every built-in preset by slug and name', async () => {
    const help = await runCli(['process', '--help'], env(), { cwd: caller });
    assert.equal(help.code, 0, help.stderr);
    for (const { name } of BUILT_IN_CONFIGURATIONS) assert.match(help.stdout, new RegExp(`^ {2}${slug(name)} +${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
  });

  it('on a terminal the price prompt names its unit and shows the wallet balance; answering n charges nothing', async function () {
    this.timeout(scaled(600_000));
    await s.h.services.ledger.topUp(u.teamId, 25_000_000); // 25 USD
    media.serve('/media/prompt.mp4', fixtureBytes({ seconds: 2, width: 320, height: 240 }));
    const imported = await runCli(['videos', 'import', `${media.origin}/media/prompt.mp4`, '--wait', '--json'], env(), { cwd: caller });
    assert.equal(imported.code, 0, imported.stderr);
    const master = JSON.parse(imported.stdout);
    const { code, output } = await runInTerminal(cliCommandLine(['process', master.id, '--preset', 'compress-h-264']), env(), caller, { when: /\[y\/N\] /, type: 'n\r' });
    assert.equal(code, 2, output);
    assert.match(output, /Price: \d+\.\d{3} USD \(US dollars, charged to the team's wallet when accepted\)/);
    assert.match(output, /Wallet: 25\.000 USD for processing/);
    const question = /Accept and charge (\d+\.\d{3}) USD to the team's wallet \(processing balance 25\.000 USD, (\d+\.\d{3}) USD after\)\? \[y\/N\]/.exec(output);
    assert.ok(question, output);
    assert.equal((25 - Number(question[1])).toFixed(3), question[2]);
    assert.match(output, /Not accepted: nothing was charged/);
    const balance = (await s.h.request.get('/api/v2/wallet/financial-details').set('X-API-Key', u.apiKey)).body;
    assert.equal(balance.processingCreditsBalanceUsd, 25);
  });
});
