/**
 * Shared benchmark plumbing: the Benchmark/Result shapes, child processes pinned to cores (and
 * always killed), free ports, readiness polling, autocannon runs and the printed report.
 */
import { ChildProcess, execFileSync, spawn, spawnSync, SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import knex from 'knex';
import { Db, migrateToLatest, openDatabase } from '../src/db/database';
import { crc32cUpdate } from '../src/net/crc32c';

export const ROOT = path.resolve(__dirname, '..');

/** One line of the comparison: `ratio` against `limit` (`min`: ratio >= limit; `max`: ratio <= limit). */
export interface Check {
  name: string;
  ratio: number;
  kind: 'min' | 'max';
  limit: number;
  /** Informational: printed with its reference value but never fails the run. */
  info?: boolean;
}

export interface Result {
  /** Rows of the measurement table (first row's keys are the columns). */
  table: Record<string, string | number>[];
  checks: Check[];
  notes: string[];
}

export interface Benchmark {
  name: string;
  description: string;
  run(): Promise<Result>;
}

export const passes = (c: Check) => (c.kind === 'min' ? c.ratio >= c.limit : c.ratio <= c.limit);

// ---------------------------------------------------------------------------------------------
// Core pinning

let tasksetChecked: boolean | undefined;
export function hasTaskset(): boolean {
  if (tasksetChecked === undefined) {
    try {
      execFileSync('taskset', ['-V'], { stdio: 'ignore' });
      tasksetChecked = true;
    } catch {
      tasksetChecked = false;
    }
  }
  return tasksetChecked;
}

export function cpuCount(): number {
  return os.availableParallelism?.() ?? os.cpus().length;
}

/** `[cmd, ...args]` prefixed with `taskset -c <core>` when taskset exists. */
export function pinned(core: number, cmd: string, args: string[]): [string, string[]] {
  return hasTaskset() ? ['taskset', ['-c', String(core), cmd, ...args]] : [cmd, args];
}

/** Moves an already running process (e.g. this one) to `core`. */
export function pinPid(pid: number, core: number): boolean {
  if (!hasTaskset()) return false;
  try {
    execFileSync('taskset', ['-cp', String(core), String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Child processes: every child is tracked and killed on exit, errors and signals.

const children = new Set<ChildProcess>();

export function spawnTracked(cmd: string, args: string[], opts: SpawnOptions): ChildProcess {
  const child = spawn(cmd, args, opts);
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

/** SIGTERM (graceful: lets `--cpu-prof` write its profile), SIGKILL after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export async function stopAllChildren(): Promise<void> {
  await Promise.all([...children].map((c) => stopChild(c)));
}

const exitCallbacks = new Set<() => void>();
/** Synchronous clean-up (e.g. removing a temp dir) that must also run on signals and crashes. */
export function onExit(fn: () => void): () => void {
  exitCallbacks.add(fn);
  return () => exitCallbacks.delete(fn);
}

function killAllNow(): void {
  for (const c of children) {
    try {
      c.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
  for (const fn of exitCallbacks) {
    try {
      fn();
    } catch {
      /* best effort */
    }
  }
  exitCallbacks.clear();
}

let handlersInstalled = false;
export function installCleanupHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', killAllNow);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      process.stderr.write(`\n${sig}: stopping benchmark processes\n`);
      killAllNow();
      process.exit(130);
    });
  }
  process.on('uncaughtException', (err) => {
    process.stderr.write(`uncaught: ${err?.stack ?? err}\n`);
    killAllNow();
    process.exit(1);
  });
}

// ---------------------------------------------------------------------------------------------
// CPU accounting (Linux /proc): how much CPU a server really got during a measurement, and how
// much of its core went to other processes or the hypervisor. On a shared machine this tells a
// slow server from a starved one; CPU time per request is nearly immune to that noise.

const TICK_MS = 10; // USER_HZ is 100 on Linux

export interface CpuSample {
  at: number;
  procTicks: number;
  coreBusyTicks: number;
  coreStealTicks: number;
}

export function sampleCpu(pid: number, core: number): CpuSample | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the ")" of the command name: state is field 3, utime 14, stime 15.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const procTicks = Number(f[11]) + Number(f[12]);
    const line = readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`cpu${core} `));
    if (!line) return undefined;
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    return { at: performance.now(), procTicks, coreBusyTicks: user! + nice! + system! + irq! + softirq!, coreStealTicks: steal ?? 0 };
  } catch {
    return undefined;
  }
}

export interface CpuUse {
  /** CPU the process used, ms. */
  procMs: number;
  /** Share of wall time: the process, other processes on its core, hypervisor steal on its core. */
  procShare: number;
  otherShare: number;
  stealShare: number;
}

export function cpuUse(a: CpuSample | undefined, b: CpuSample | undefined): CpuUse | undefined {
  if (!a || !b) return undefined;
  const wall = b.at - a.at;
  const procMs = (b.procTicks - a.procTicks) * TICK_MS;
  const busyMs = (b.coreBusyTicks - a.coreBusyTicks) * TICK_MS;
  return {
    procMs,
    procShare: procMs / wall,
    otherShare: Math.max(0, busyMs - procMs) / wall,
    stealShare: ((b.coreStealTicks - a.coreStealTicks) * TICK_MS) / wall,
  };
}

// ---------------------------------------------------------------------------------------------
// Networking helpers

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers 200, the child exits, or `timeoutMs` passes. */
export async function waitForHttp(url: string, child: ChildProcess, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what} exited (code ${child.exitCode}, signal ${child.signalCode}) before it was ready`);
    }
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  throw new Error(`${what} not ready at ${url} after ${timeoutMs} ms`);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Load generation

export interface LoadResult {
  /** Completed requests per second over the run. */
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  total: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

/**
 * One autocannon CLI run pinned to `core`, JSON result parsed. Throws when any request failed
 * or was not 2xx, so a broken setup (401, 429, 500) can never pass as a fast run.
 */
export async function autocannon(opts: { url: string; connections: number; seconds: number; headers?: Record<string, string>; core: number; allowFailures?: boolean }): Promise<LoadResult> {
  const bin = path.join(ROOT, 'node_modules', '.bin', 'autocannon');
  const args = ['--json', '-c', String(opts.connections), '-d', String(opts.seconds)];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`);
  args.push(opts.url);
  const [cmd, full] = pinned(opts.core, bin, args);
  const child = spawnTracked(cmd, full, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  if (code !== 0) throw new Error(`autocannon exited with ${code}: ${err.trim()}`);
  const r = JSON.parse(out);
  const res: LoadResult = {
    // Completed requests over the measured wall time; autocannon's requests.average is a mean of
    // per-second samples whose count is sometimes one more than the duration.
    rps: r.requests.total / r.duration,
    p50: r.latency.p50,
    p90: r.latency.p90,
    p99: r.latency.p99,
    max: r.latency.max,
    total: r.requests.total,
    non2xx: r.non2xx ?? 0,
    errors: r.errors ?? 0,
    timeouts: r.timeouts ?? 0,
  };
  if (!opts.allowFailures && (res.non2xx > 0 || res.errors > 0 || res.timeouts > 0)) {
    throw new Error(`${opts.url}: ${res.non2xx} non-2xx, ${res.errors} errors, ${res.timeouts} timeouts out of ${res.total} requests`);
  }
  return res;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2; // NaN for no values, as before
}

// ---------------------------------------------------------------------------------------------
// Report

export function printTable(rows: Record<string, string | number>[]): void {
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]!); // not empty: checked above
  const cell = (v: string | number | undefined) => (v === undefined ? '' : String(v));
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  console.log(line(cols));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(cols.map((c) => cell(r[c]))));
}

/** Prints the table, notes and checks; returns whether every check passed. */
export function report(name: string, result: Result): boolean {
  console.log(`\n== ${name} ==`);
  printTable(result.table);
  for (const n of result.notes) console.log(`note: ${n}`);
  console.log('');
  let ok = true;
  for (const c of result.checks) {
    const pass = passes(c);
    if (!c.info) ok &&= pass;
    const target = `${c.kind === 'min' ? '>=' : '<='} ${c.limit.toFixed(2)}x`;
    const verdict = c.info ? `info, ${pass ? 'within' : 'outside'} ${target}` : `target ${target}`;
    console.log(`${c.name.padEnd(36)} ${c.ratio.toFixed(3)}x  (${verdict})${c.info ? '' : pass ? '  PASS' : '  FAIL'}`);
  }
  return ok;
}

// ---------------------------------------------------------------------------------------------
// The production start command

/**
 * What `npm start` (or `npm run worker`, with `script` 'worker') runs after its build, read from
 * package.json's script (`exec [env K=V ...] node [flags] dist/src/main.js`), so a benchmark
 * measures the process an operator's `npm start` runs, with its Node flags and environment, and
 * not a bare `node dist/src/main.js`.
 */
export function productionStart(scriptName: 'start' | 'worker' = 'start'): { env: Record<string, string>; args: string[] } {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string | undefined> };
  const script = pkg.scripts[scriptName] ?? '';
  const words = script.trim().split(/\s+/);
  if (words[0] === 'exec') words.shift();
  const env: Record<string, string> = {};
  if (words[0] === 'env') {
    words.shift();
    while (words[0]?.includes('=')) {
      const [k = '', ...v] = words.shift()!.split('=');
      env[k] = v.join('=');
    }
  }
  if (words.shift() !== 'node' || words.at(-1) !== 'dist/src/main.js') throw new Error(`package.json's ${scriptName} script is not "exec [env K=V ...] node [flags] dist/src/main.js": ${script}`);
  return { env, args: words.map((w) => (w === 'dist/src/main.js' ? path.join(ROOT, w) : w)) };
}

/** `npm run build` (dist/, what productionStart runs; incremental, so quick when nothing changed). */
export function buildDist(): void {
  const result = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`npm run build failed (${result.status})`);
}

/** Environment without the caller's VIDMILL_* (and BASELINE_*) settings, so a run is reproducible. */
export function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VIDMILL_') && !k.startsWith('BASELINE_')));
}

/** A file of `size` random bytes, written in 8 MiB chunks and fsync'ed; returns its CRC-32C. */
export function makeRandomFile(file: string, size: number): number {
  const chunkSize = 8 * 1024 * 1024;
  const fd = openSync(file, 'w');
  let crc = 0;
  try {
    for (let off = 0; off < size; off += chunkSize) {
      const chunk = randomBytes(Math.min(chunkSize, size - off));
      crc = crc32cUpdate(crc, chunk);
      for (let w = 0; w < chunk.length;) w += writeSync(fd, chunk, w, chunk.length - w, off + w);
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return crc >>> 0;
}

/** The PostgreSQL server the benchmarks use: an admin URL (VIDMILL_TEST_PG_URL, as the tests). */
export const PG_ADMIN_URL = process.env.VIDMILL_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';

/**
 * A new PostgreSQL database of its own for one benchmark run (`vidmill_bench_<tag>_<random>`),
 * migrated unless `migrate: false` (a Vidmill process started on it migrates it itself); `drop()`
 * removes it (also when the run fails: call it in a `finally`). The split benchmark keeps its own
 * psql-based one, whose drop must be synchronous (it runs from the exit handler).
 */
export async function benchDatabase(tag: string, opts: { migrate?: boolean } = {}): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = knex({ client: 'pg', connection: PG_ADMIN_URL, pool: { min: 0, max: 1 } });
  const name = `vidmill_bench_${tag}_${randomBytes(4).toString('hex')}`;
  await admin.raw(`create database ${name}`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  if (opts.migrate !== false) {
    const setup = openDatabase({ client: 'pg', connectionString: url.toString() });
    try {
      await migrateToLatest(setup);
    } finally {
      await setup.destroy();
    }
  }
  return {
    url: url.toString(),
    drop: async () => {
      await admin.raw(`drop database if exists ${name} with (force)`).catch(() => undefined);
      await admin.destroy();
    },
  };
}

/** Waits (bounded) until no job is running or due, e.g. the ingestion of a run's output. */
export async function untilQueueIdle(db: Db, opts: { timeoutMs?: number; pollMs?: number } = {}): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const busy = await db('jobs')
      .where('status', 'running')
      .orWhere((q) => void q.where('status', 'queued').andWhere('run_at', '<=', new Date()))
      .count({ n: '*' })
      .first();
    if (Number(busy?.n) === 0) return;
    await sleep(opts.pollMs ?? 250);
  }
  throw new Error(`jobs still running or due after ${timeoutMs} ms`);
}

/** The first line a child process prints (a server's address), or the error of its exit before it. */
export async function firstLine(child: ChildProcess, what: string): Promise<string> {
  const lines = createInterface({ input: child.stdout! });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code, signal) => reject(new Error(`${what} exited (code ${code}, signal ${signal}) before answering`))));
  exited.catch(() => undefined); // it exits normally later, after answering
  try {
    return await Promise.race([new Promise<string>((resolve) => lines.once('line', resolve)), exited]);
  } finally {
    lines.close();
  }
}

/** The test range server (HTTPS, self-signed) in a process of its own (bench/ingest-server.ts) serving `files` (URL path -> file). */
export async function startRangeServerProcess(files: Record<string, string>, bytesPerSecondPerConnection?: number): Promise<{ origin: string; ca: string; child: ChildProcess }> {
  const child = spawnTracked(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'ingest-server.ts'), JSON.stringify({ files, bytesPerSecondPerConnection })], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { origin, ca } = JSON.parse(await firstLine(child, 'range server')) as { origin: string; ca: string };
  return { origin, ca, child };
}

/**
 * A worker process (`npm run worker`'s command, VIDMILL_ROLE=worker) with `env` on top of a clean
 * environment, its output appended to `log`, on `core` when given (taskset); resolves once its
 * /metrics answers, which the worker serves after its loop has started (src/main.ts).
 */
export async function startWorkerProcess(env: NodeJS.ProcessEnv, log: string, core?: number): Promise<ChildProcess> {
  const start = productionStart('worker');
  const port = await freePort();
  const fd = openSync(log, 'a');
  const [cmd, args] = core === undefined ? [process.execPath, start.args] : pinned(core, process.execPath, start.args);
  const child = spawnTracked(cmd, args, {
    cwd: ROOT,
    stdio: ['ignore', fd, fd],
    env: { ...cleanEnv(), ...start.env, ...env, VIDMILL_ROLE: 'worker', VIDMILL_METRICS_PORT: String(port), VIDMILL_METRICS_HOST: '127.0.0.1' },
  });
  closeSync(fd);
  await waitForHttp(`http://127.0.0.1:${port}/metrics`, child, path.basename(log, '.log'), 60_000);
  return child;
}
