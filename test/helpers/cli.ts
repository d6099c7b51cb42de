/**
 * Runs the `vidmill` CLI as a child process, as a user would (compiled, sdk/dist/cli/main.js, when
 * the run built it, else sdk/src/cli/main.ts through tsx: test/helpers/entry-points.ts), against a
 * harness served on a port of its own whose public URL is that port (so the download links the
 * server signs point back to it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Config } from '../../src/config';
import { answerClientErrors } from '../../src/http/client-errors';
import { cliArgs } from './entry-points';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { createHarness, type Harness, type TestUser } from './harness';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliRun extends Promise<CliResult> {
  child: ChildProcess;
  /** What the process wrote so far. */
  stdout(): string;
  stderr(): string;
}

/** Starts the CLI with `args` and `env` over a clean environment. */
export function runCli(args: string[], env: Record<string, string | undefined>, opts: { cwd?: string; stdin?: string } = {}): CliRun {
  const child = spawn(process.execPath, [...cliArgs(), ...args], {
    cwd: opts.cwd ?? process.cwd(),
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.end(opts.stdin ?? '');
  const done = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  }) as CliRun;
  done.child = child;
  done.stdout = () => stdout;
  done.stderr = () => stderr;
  return done;
}

/**
 * Runs `command` (a shell command line) under `script` (util-linux), so that it sees a
 * pseudo-terminal on stdin, stdout and stderr; resolves with everything it drew. With `answer`,
 * `answer.type` is typed once the output matches `answer.when` (a prompt); else stdin ends at once.
 */
export function runInTerminal(command: string, env: Record<string, string | undefined>, cwd?: string, answer?: { when: RegExp; type: string }): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, TERM: 'xterm', COLUMNS: '160', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let answered = !answer;
    const read = (c: Buffer) => {
      output += c.toString();
      if (!answered && answer!.when.test(output)) {
        answered = true;
        child.stdin.end(answer!.type);
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    if (!answer) child.stdin.end();
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** The shell-quoted command line that runs the CLI with `args`. */
export function cliCommandLine(args: string[]): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [process.execPath, ...cliArgs(), ...args].map(q).join(' ');
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

export interface CliServer {
  h: Harness;
  url: string;
  /** A folder of its own for the CLI's configuration and state (VIDMILL_CONFIG points into it). */
  home: string;
  close(): Promise<void>;
}

/** A harness served on 127.0.0.1 at a port whose address is also its public URL. */
export async function startCliServer(overrides: Partial<Config> = {}): Promise<CliServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const h = await createHarness({ publicUrl: url, ...overrides });
  const server: Server = answerClientErrors(h.app.listen(port, '127.0.0.1'));
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const home = mkdtempSync(path.join(tmpdir(), 'vidmill-cli-'));
  return {
    h,
    url,
    home,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await h.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/**
 * What the CLI tests start from: a served harness with the built-in configurations, a user whose
 * team makes no free clip (less work for the worker) and a running worker.
 */
export async function startCliServerWithUser(overrides: Partial<Config> = {}): Promise<{ s: CliServer; u: TestUser }> {
  const s = await startCliServer(overrides);
  await s.h.services.configurations.ensureBuiltIns();
  const u = await s.h.user();
  await setFreeClipEnabled(s.h.database.db, u.teamId, false);
  s.h.startWorker({ concurrency: 2 });
  return { s, u };
}
