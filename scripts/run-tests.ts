/**
 * `npm test`: `npm run lint` once (eslint, prettier --check, import boundaries; a lint error fails
 * the run like a failing test), then up to three mocha runs:
 * 1. the dialect-free files, once: those that never reach test/helpers/database.ts through their
 *    imports (the harness imports it), so they open no test database;
 * 2. the database files on SQLite;
 * 3. the database files again on PostgreSQL when it is reachable (VIDMILL_TEST_PG_URL, default
 *    postgres://postgres@127.0.0.1:5432/test).
 * Says what ran where. VIDMILL_TEST_REQUIRE_PG=true turns "PostgreSQL unreachable" into a failure
 * (CI sets it). Extra arguments go to mocha: files, directories or globs under test/ choose the
 * files (each still runs in the passes its kind needs); anything else (`--grep x`) goes to every run.
 * `npm test -- --passes` only lists which files run in which pass. Lint runs only with the whole suite;
 * `npm test -- --skip-lint` runs the whole suite without it.
 *
 * Where each file runs is decided by what it tests:
 * - a database file whose subject is not SQL says so with the line `// test-databases: one` (an
 *   explicit marker, not inferred): it runs in the SQLite pass only; the SQL it reaches is tested
 *   on PostgreSQL by the files about that SQL;
 * - `npm test -- --node-runtime` runs only what depends on the Node version (CI's second Node
 *   version): the files listed in NODE_RUNTIME, each with why (the native SQLite addon, the HTTP
 *   parser and sockets, TLS, streams, crypto, fetch, child processes and signals, the CLI and
 *   SDK), database files on SQLite only (the PostgreSQL driver is plain JavaScript). Media work
 *   (ffmpeg), the fuzzers, bad input and the end-to-end scenarios are the same on any Node
 *   version and run on the first one only.
 * Each mocha run reports its files' durations (test/helpers/file-times.ts); the run ends with the
 * list, costliest in CPU first, so the next cut is made from data.
 *
 * The passes and lint run at the same time, as separate processes (VIDMILL_TEST_JOBS at once,
 * default 4: all of them; 1 runs them one after the other), and each pass runs
 * VIDMILL_TEST_FILE_JOBS files at once (mocha --parallel, default 2; 1 runs a pass's files one by
 * one). Measured on 2 cores (full npm test, Node 20, machine shared with other work): 3 passes with one file at a time used 0.9
 * of the 2 cores for 24 min (the passes wait on timers, child processes and the database more
 * than they compute); 4 jobs with 2 files each, 1.6 cores for 12.5 min. They share nothing (each
 * test has its own database, SQLite file or PostgreSQL database, its own temporary folders and
 * ports chosen by the system), and on a small machine the waits of the database passes (I/O,
 * timers, child processes) overlap
 * the CPU-bound media work of the dialect-free pass. Each run's output is kept and printed whole,
 * under its `=== npm test: ...` heading, when it ends (live when only one runs).
 * Before the passes, when a chosen file starts Vidmill's own programs as child processes (it
 * reaches test/helpers/entry-points.ts), `npm run build` and the SDK's build compile them once, and
 * the children start from dist/ and sdk/dist/ instead of through tsx (VIDMILL_TEST_BUILT=true).
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';

const PG_URL = process.env.VIDMILL_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TEST_DIR = path.resolve('test');
const DATABASE_HELPER = path.join(TEST_DIR, 'helpers', 'database.ts');
const ENTRY_POINTS_HELPER = path.join(TEST_DIR, 'helpers', 'entry-points.ts');
const JOBS = Math.max(1, Number(process.env.VIDMILL_TEST_JOBS ?? 4) || 1);
/** Files run at once within each mocha pass (mocha --parallel --jobs); 1 runs them one by one. */
const FILE_JOBS = Math.max(1, Number(process.env.VIDMILL_TEST_FILE_JOBS ?? 2) || 1);

async function postgresReachable(): Promise<boolean> {
  const client = new Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Every *.test.ts under `dir`, sorted, relative to the working directory. */
function testFilesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...testFilesUnder(full));
    else if (entry.name.endsWith('.test.ts')) found.push(path.relative('.', full));
  }
  return found.sort();
}

/** `*` within a path segment, `**` across segments, `?` one character. */
function globToRegExp(glob: string): RegExp {
  const body = path
    .normalize(glob)
    .split(/(\*\*\/|\*\*|\*|\?)/)
    .map((part) => (part === '**/' ? '(?:.*/)?' : part === '**' ? '.*' : part === '*' ? '[^/]*' : part === '?' ? '[^/]' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${body}$`);
}

/** Splits the arguments into test files (files, directories, globs) and mocha options. */
function parseArgs(args: string[]): { files: string[]; options: string[] } {
  const specs = args.filter((a) => !a.startsWith('-') && (a.includes('*') || existsSync(a)));
  const options = args.filter((a) => !specs.includes(a));
  if (specs.length === 0) return { files: testFilesUnder(TEST_DIR), options };
  const files = new Set<string>();
  for (const spec of specs) {
    if (spec.includes('*')) {
      const re = globToRegExp(spec);
      for (const f of testFilesUnder(TEST_DIR)) if (re.test(f)) files.add(f);
    } else if (statSync(spec).isDirectory()) {
      for (const f of testFilesUnder(spec)) files.add(f);
    } else {
      files.add(path.relative('.', path.resolve(spec)));
    }
  }
  return { files: [...files].sort(), options };
}

const RELATIVE_IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g;

/** Whether `file` reaches `helper` (a file under test/) through its relative imports inside test/. */
function reaches(file: string, helper: string, seen = new Set<string>()): boolean {
  const full = path.resolve(file);
  if (full === helper) return true;
  if (seen.has(full) || !full.startsWith(TEST_DIR + path.sep)) return false;
  seen.add(full);
  for (const [, spec] of readFileSync(full, 'utf8').matchAll(RELATIVE_IMPORT)) {
    const target = path.resolve(path.dirname(full), spec!); // the pattern's one group always matches
    const resolved = [target, `${target}.ts`, path.join(target, 'index.ts')].find((c) => existsSync(c) && statSync(c).isFile());
    if (resolved && reaches(resolved, helper, seen)) return true;
  }
  return false;
}

/** Whether `file` opens a test database (it reaches test/helpers/database.ts). */
const usesTestDatabase = (file: string) => reaches(file, DATABASE_HELPER);

/**
 * What depends on the Node version (`--node-runtime`, CI's second Node version), each with why:
 * globs as for the command line. The rest (media, the fuzzers, validation of bad input, the
 * scenarios, the contract's own checks) does the same on any Node version.
 */
const NODE_RUNTIME: { glob: string; why: string }[] = [
  { glob: 'test/db/**', why: 'the native SQLite addon, file modes' },
  { glob: 'test/net/**', why: "sockets, TLS, the outbound guard's agents" },
  { glob: 'test/process/**', why: 'child processes and signals' },
  { glob: 'test/storage/**', why: 'streams, files, CRC-32C' },
  { glob: 'test/sdk/**', why: "the SDK runs on the integrator's Node: fetch, Web Crypto, streams" },
  { glob: 'test/cli/cli.test.ts', why: "the CLI runs on the integrator's Node" },
  { glob: 'test/cli/cli-uploads-listen.test.ts', why: "the CLI's uploads and webhook forwarding: streams, sockets" },
  { glob: 'test/contract/pipeline.test.ts', why: 'the HTTP parser and body framing' },
  { glob: 'test/contract/request-body-types.test.ts', why: 'the HTTP parser and body types' },
  { glob: 'test/jobs/worker.test.ts', why: 'timers, abort signals, the worker loop' },
  { glob: 'test/unit/config.test.ts', why: 'the process environment' },
  { glob: 'test/unit/security.test.ts', why: 'crypto' },
  { glob: 'test/unit/statement-cache.test.ts', why: 'the native SQLite addon' },
  { glob: 'test/unit/dependency-patches.test.ts', why: 'the patched dependencies as loaded by this Node' },
];
const dependsOnNodeVersion = (file: string) => NODE_RUNTIME.some(({ glob }) => globToRegExp(glob).test(file));

/** Whether `file` declares that its subject is not SQL (`// test-databases: one`): SQLite pass only. */
function oneDatabase(file: string): boolean {
  return /^\/\/ test-databases: one$/m.test(readFileSync(file, 'utf8'));
}

/** This run's tag (test/helpers/database.ts names its PostgreSQL databases vidmill_test_<tag>_...). */
const RUN = randomBytes(4).toString('hex');

/** Drops the PostgreSQL databases this run's passes left (see RUN_TAG in test/helpers/database.ts). */
async function dropRunDatabases(): Promise<void> {
  const client = new Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ datname: string }>('select datname from pg_database where datname like $1', [`vidmill\\_test\\_${RUN}\\_%`]);
    for (const { datname } of rows) await client.query(`drop database if exists "${datname}" with (force)`);
    if (rows.length) console.log(`dropped the ${rows.length} PostgreSQL databases the run's processes left`);
  } catch (err) {
    console.log(`could not drop this run's PostgreSQL databases: ${(err as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

const TIMES = path.join(mkdtempSync(path.join(os.tmpdir(), 'vidmill-test-times-')), 'times.jsonl');

/** Every file's duration and CPU time in every pass, costliest first (from test/helpers/file-times.ts). */
function printDurations(): void {
  if (!existsSync(TIMES)) return;
  const rows: { ms: number; cpuMs: number; pass: string; file: string }[] = [];
  for (const line of readFileSync(TIMES, 'utf8').split('\n').filter(Boolean)) {
    const { pass, times, cpu } = JSON.parse(line) as { pass: string; times: Record<string, number>; cpu?: Record<string, number> };
    for (const [file, ms] of Object.entries(times)) rows.push({ ms, cpuMs: cpu?.[file] ?? 0, pass: pass === 'none' ? 'dialect-free' : pass, file });
  }
  // By CPU: on a machine with few cores the run is bound by the CPU all passes need together.
  rows.sort((a, b) => b.cpuMs - a.cpuMs);
  const total = (key: 'ms' | 'cpuMs') => (rows.reduce((sum, row) => sum + row[key], 0) / 1000).toFixed(0);
  console.log(`\n=== npm test: file durations (${total('ms')} s in tests and hooks, ${total('cpuMs')} s of CPU with child processes), costliest first ===`);
  console.log('   wall      CPU  pass         file');
  for (const { ms, cpuMs, pass, file } of rows) console.log(`${(ms / 1000).toFixed(1).padStart(7)} s ${(cpuMs / 1000).toFixed(1).padStart(6)} s  ${pass.padEnd(12)} ${file}`);
  rmSync(path.dirname(TIMES), { recursive: true, force: true });
}

type Pass = 'dialect-free' | 'sqlite' | 'postgres';

/** One process of the run: lint or one mocha pass. */
interface Job {
  /** Its heading (`=== npm test: <heading> ===`) and its name in the summary. */
  heading: string;
  label: string;
  count?: number;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
}

function mochaJob(pass: Pass, files: string[], options: string[], env: NodeJS.ProcessEnv): Job {
  const where = { 'dialect-free': 'dialect-free files, once (no test database)', sqlite: 'database files on SQLite', postgres: `database files on PostgreSQL (${PG_URL})` }[pass];
  const label = { 'dialect-free': 'dialect-free', sqlite: 'SQLite', postgres: 'PostgreSQL' }[pass];
  // The dialect-free run names no dialect: test/helpers/database.ts refuses to load there.
  // Colours as a terminal would get them, though the output goes through a file.
  const color = process.stdout.isTTY ? ['--color'] : [];
  return {
    heading: `${files.length} ${where}`,
    label,
    count: files.length,
    command: 'npx',
    args: ['mocha', ...color, ...(FILE_JOBS > 1 && files.length > 1 ? ['--parallel', '--jobs', String(FILE_JOBS)] : []), ...options, ...files],
    env: { ...env, VIDMILL_TEST_DB: pass === 'dialect-free' ? 'none' : pass, VIDMILL_TEST_TIMES: TIMES, VIDMILL_TEST_RUN: RUN },
  };
}

/** mocha's default timeout for a test or hook (.mocharc.json), before scaling. */
const DEFAULT_TIMEOUT_MS = (JSON.parse(readFileSync('.mocharc.json', 'utf8')) as { timeout: number }).timeout;

/**
 * The tests' wall-clock bounds are hang detectors written for one file on a quiet machine
 * (test/helpers/timeouts.ts); this run puts several files on each core, so it scales them by the
 * number of its processes at once (lint and up to FILE_JOBS files per mocha pass) per core,
 * rounded up. VIDMILL_TEST_TIMEOUT_SCALE, when set, is used instead (CI sets it to count the
 * Node 22 run it starts alongside). mocha's own default timeout is scaled with them.
 */
function applyTimeoutScale(jobs: Job[]): void {
  const atOnce = jobs.slice(0, JOBS).reduce((n, job) => n + Math.min(FILE_JOBS, job.count ?? 1), 0);
  const scale = Number(process.env.VIDMILL_TEST_TIMEOUT_SCALE) || Math.max(1, Math.ceil(atOnce / os.availableParallelism()));
  console.log(`test timeouts x${scale} (${atOnce} processes at once on ${os.availableParallelism()} cores; VIDMILL_TEST_TIMEOUT_SCALE)`);
  for (const job of jobs) {
    if (!job.env) continue;
    job.env = { ...job.env, VIDMILL_TEST_TIMEOUT_SCALE: String(scale) };
    job.args = [...job.args.slice(0, 1), '--timeout', String(DEFAULT_TIMEOUT_MS * scale), ...job.args.slice(1)];
  }
}

const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(0)} s`;

/**
 * Runs the jobs, `JOBS` at a time, in the given order; each one's output goes to a file and is
 * printed whole under its heading when it ends (live, as before, when only one runs at a time).
 * Resolves with each job's success, in the jobs' order.
 */
async function runJobs(jobs: Job[]): Promise<boolean[]> {
  const results: boolean[] = new Array<boolean>(jobs.length);
  const live = JOBS === 1 || jobs.length === 1;
  const outDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-test-output-'));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const index = next++;
      const job = jobs[index]!;
      const started = Date.now();
      if (live) console.log(`\n=== npm test: ${job.heading} ===`);
      else console.log(`npm test: started ${job.heading}`);
      const outFile = path.join(outDir, `${index}.log`);
      const fd = live ? undefined : openSync(outFile, 'w');
      const status = await new Promise<number | null>((resolve) => {
        const child = spawn(job.command, job.args, { stdio: fd === undefined ? 'inherit' : ['ignore', fd, fd], env: job.env ?? process.env });
        child.once('error', () => resolve(1));
        child.once('exit', (code) => resolve(code));
      });
      if (fd !== undefined) {
        closeSync(fd);
        console.log(`\n=== npm test: ${job.heading} (${seconds(started)}, run alongside the others) ===`);
        process.stdout.write(readFileSync(outFile));
      }
      results[index] = status === 0;
    }
  };
  await Promise.all(Array.from({ length: Math.min(JOBS, jobs.length) }, worker));
  rmSync(outDir, { recursive: true, force: true });
  return results;
}

/**
 * `npm run build` (dist/) and the SDK's build (sdk/dist/), for the files that start Vidmill's
 * programs as child processes; true when both succeeded (the children then start from them).
 */
function buildPrograms(): boolean {
  const started = Date.now();
  console.log('\n=== npm test: npm run build and the SDK build (child processes start from dist/) ===');
  for (const args of [
    ['run', 'build'],
    ['run', 'build', '--workspace', 'sdk'],
  ]) {
    if (spawnSync('npm', args, { stdio: 'inherit' }).status !== 0) {
      console.log(`npm ${args.join(' ')} failed: child processes start from the sources through tsx.`);
      return false;
    }
  }
  console.log(`built in ${seconds(started)}`);
  return true;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const nodeRuntime = args.includes('--node-runtime');
  const parsed = parseArgs(args.filter((a) => a !== '--passes' && a !== '--skip-lint' && a !== '--node-runtime'));
  const { options } = parsed;
  const files = nodeRuntime ? parsed.files.filter(dependsOnNodeVersion) : parsed.files;
  const databaseFiles = files.filter((f) => usesTestDatabase(f));
  const dialectFree = files.filter((f) => !databaseFiles.includes(f));
  const postgresFiles = nodeRuntime ? [] : databaseFiles.filter((f) => !oneDatabase(f));
  if (args.includes('--passes')) {
    console.log(`dialect-free, once (${dialectFree.length}):\n  ${dialectFree.join('\n  ')}`);
    console.log(`on SQLite (${databaseFiles.length}):\n  ${databaseFiles.join('\n  ')}`);
    console.log(`on PostgreSQL (${postgresFiles.length}):\n  ${postgresFiles.join('\n  ')}`);
    return;
  }
  const results: string[] = [];
  let failed = false;
  const started = Date.now();

  console.log(`npm test on Node ${process.version} (${process.execPath}), ${JOBS} at a time (VIDMILL_TEST_JOBS)`);
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (files.some((f) => reaches(f, ENTRY_POINTS_HELPER))) {
    if (buildPrograms()) env.VIDMILL_TEST_BUILT = 'true';
  }
  // Longest first, so that the last to end is not one that could have started earlier.
  const jobs: Job[] = [];
  const notes: string[] = [];
  if (nodeRuntime) {
    notes.push('PostgreSQL not run (--node-runtime: the driver does not depend on the Node version)');
  } else if (postgresFiles.length) {
    if (await postgresReachable()) {
      jobs.push(mochaJob('postgres', postgresFiles, options, env));
    } else {
      const required = process.env.VIDMILL_TEST_REQUIRE_PG === 'true';
      const outcome = required ? 'FAILED (unreachable)' : 'skipped (unreachable)';
      notes.push(`PostgreSQL ${outcome}`);
      failed ||= required;
      console.log(`\nPostgreSQL at ${PG_URL} is not reachable: PostgreSQL run ${outcome}.`);
    }
  }
  if (databaseFiles.length) jobs.push(mochaJob('sqlite', databaseFiles, options, env));
  if (dialectFree.length) jobs.push(mochaJob('dialect-free', dialectFree, options, env));
  // Lint runs with the whole suite (a run of chosen files skips it), unless --skip-lint.
  if (args.includes('--skip-lint')) {
    results.push('lint skipped (--skip-lint)');
  } else if (!nodeRuntime && files.length === testFilesUnder(TEST_DIR).length) {
    jobs.push({ heading: 'npm run lint', label: 'lint', command: 'npm', args: ['run', 'lint'] });
  }
  applyTimeoutScale(jobs);
  const outcomes = await runJobs(jobs);
  if (jobs.some((job) => job.label === 'PostgreSQL')) await dropRunDatabases();
  // The summary in the usual order: lint, dialect-free, SQLite, PostgreSQL.
  const order = ['lint', 'dialect-free', 'SQLite', 'PostgreSQL'];
  const done = jobs.map((job, i) => ({ job, ok: outcomes[i]! })).sort((a, b) => order.indexOf(a.job.label) - order.indexOf(b.job.label));
  for (const { job, ok } of done) {
    results.push(job.count === undefined ? `${job.label} ${ok ? 'passed' : 'FAILED'}` : `${job.label} (${job.count} files) ${ok ? 'passed' : 'FAILED'}`);
    failed ||= !ok;
  }
  results.push(...notes);
  if (!files.length) {
    results.push('no test files matched');
    failed = true;
  }
  printDurations();
  console.log(`\nnpm test took ${seconds(started)} (${JOBS} at a time)`);
  console.log(`\n=== npm test summary (Node ${process.version}): ${results.join('; ')} ===`);
  process.exit(failed ? 1 : 0);
}

void main();
