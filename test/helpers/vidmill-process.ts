/**
 * The real Vidmill process (what `npm start` / `npm run worker` run: dist/src/main.js when the run
 * built it, else src/main.ts through tsx; test/helpers/entry-points.ts) as a child of the test, for crash tests: start it with an environment, wait until it listens, kill it
 * (SIGKILL: no shutdown code runs) and wait for its exit. Its output is kept (and shown when it
 * fails to start) or passed through to the test's own.
 */
import { strict as assert } from 'node:assert';
import { ChildProcess, spawn } from 'node:child_process';
import { ROOT, serverArgs } from './entry-points';
import { waitFor } from './scenario';

export { ROOT };

export interface VidmillProcess {
  readonly child: ChildProcess;
  /** What it wrote so far (with `captureOutput`; else empty). */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** Waits for the "Vidmill is listening" log line (log level info or lower) and returns its URL. */
  listening(timeoutMs?: number): Promise<string>;
  /** Sends `signal` (default SIGKILL) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts the server with `env` on top of the test's environment. `captureOutput` keeps stdout and
 * stderr in memory (needed by `listening()`); otherwise they go to the test's own.
 */
export function startVidmillProcess(env: NodeJS.ProcessEnv, opts: { captureOutput?: boolean } = {}): VidmillProcess {
  const child = spawn(process.execPath, serverArgs(), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', opts.captureOutput ? 'pipe' : 'inherit', opts.captureOutput ? 'pipe' : 'inherit'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  return {
    child,
    output: () => output,
    exited,
    async listening(timeoutMs = 60_000) {
      const line = () => output.split('\n').find((l) => l.includes('"Vidmill is listening"'));
      await waitFor('the process to listen or exit', () => line() !== undefined || exitCode !== undefined, { timeoutMs, intervalMs: 50 }).catch(() => undefined);
      const found = line();
      if (!found) {
        child.kill('SIGKILL');
        throw new Error(`Vidmill did not start (exit ${String(exitCode)}):\n${output}`);
      }
      return (JSON.parse(found) as { url: string }).url;
    },
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Who `VIDMILL_BOOTSTRAP_*` creates on the first start of an empty database. */
export interface ProcessOwner {
  email: string;
  password: string;
}

/**
 * The embedded default's environment: only the data directory (the SQLite file, local disk and
 * the master key in it) and the bootstrap owner, with the caller's database, key and storage
 * settings cleared, plus `extra`.
 */
export function embeddedEnv(dataDir: string, owner: ProcessOwner, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    VIDMILL_ROLE: 'all',
    VIDMILL_DATA_DIR: dataDir,
    VIDMILL_DATABASE_URL: '',
    VIDMILL_MASTER_KEY: '',
    VIDMILL_STORAGE: '',
    VIDMILL_PORT: '0',
    VIDMILL_BOOTSTRAP_EMAIL: owner.email,
    VIDMILL_BOOTSTRAP_PASSWORD: owner.password,
    ...extra,
  };
}

/** An active API key of `owner`, created through the API of the process at `base` (HTTP Basic). */
export async function createApiKey(base: string, owner: ProcessOwner, name: string): Promise<string> {
  const res = await fetch(`${base}/api/v1/api-keys`, {
    method: 'POST',
    headers: { Authorization: `Basic ${Buffer.from(`${owner.email}:${owner.password}`).toString('base64')}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name, active: true }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  return ((await res.json()) as { apiKey: string }).apiKey;
}
