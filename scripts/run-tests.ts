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
 *   version): the files under NODE_RUNTIME_DIRS (the native SQLite addon, the HTTP parser and
 *   sockets, TLS, streams, crypto, fetch, child processes and signals, the CLI and SDK), database
 *   files on SQLite only (the PostgreSQL driver is plain JavaScript). Media work (ffmpeg) and the
 *   end-to-end scenarios are the same on any Node version and run on the first one only.
 * Each mocha run reports its files' durations (test/helpers/file-times.ts); the run ends with the
 * list, slowest first, so the next cut is made from data.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';

const PG_URL = process.env.VIDMILL_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TEST_DIR = path.resolve('test');
const DATABASE_HELPER = path.join(TEST_DIR, 'helpers', 'database.ts');

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

function runLint(): boolean {
  console.log('\n=== npm test: npm run lint ===');
  return spawnSync('npm', ['run', 'lint'], { stdio: 'inherit' }).status === 0;
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

/** Whether `file` reaches test/helpers/database.ts through its relative imports inside test/. */
function usesTestDatabase(file: string, seen = new Set<string>()): boolean {
  const full = path.resolve(file);
  if (full === DATABASE_HELPER) return true;
  if (seen.has(full) || !full.startsWith(TEST_DIR + path.sep)) return false;
  seen.add(full);
  for (const [, spec] of readFileSync(full, 'utf8').matchAll(RELATIVE_IMPORT)) {
    const target = path.resolve(path.dirname(full), spec!); // the pattern's one group always matches
    const resolved = [target, `${target}.ts`, path.join(target, 'index.ts')].find((c) => existsSync(c) && statSync(c).isFile());
    if (resolved && usesTestDatabase(resolved, seen)) return true;
  }
  return false;
}

/** Directories whose files depend on the Node version (see the module comment). */
const NODE_RUNTIME_DIRS = ['test/cli', 'test/contract', 'test/db', 'test/jobs', 'test/net', 'test/process', 'test/sdk', 'test/storage', 'test/unit'];

/** Whether `file` declares that its subject is not SQL (`// test-databases: one`): SQLite pass only. */
function oneDatabase(file: string): boolean {
  return /^\/\/ test-databases: one$/m.test(readFileSync(file, 'utf8'));
}

const TIMES = path.join(mkdtempSync(path.join(os.tmpdir(), 'vidmill-test-times-')), 'times.jsonl');

/** Every file's duration in every pass, slowest first (from test/helpers/file-times.ts). */
function printDurations(): void {
  if (!existsSync(TIMES)) return;
  const rows: [number, string, string][] = [];
  for (const line of readFileSync(TIMES, 'utf8').split('\n').filter(Boolean)) {
    const { pass, times } = JSON.parse(line) as { pass: string; times: Record<string, number> };
    for (const [file, ms] of Object.entries(times)) rows.push([ms, pass === 'none' ? 'dialect-free' : pass, file]);
  }
  rows.sort((a, b) => b[0] - a[0]);
  const total = rows.reduce((sum, [ms]) => sum + ms, 0);
  console.log(`\n=== npm test: file durations (${(total / 1000).toFixed(0)} s in tests and hooks), slowest first ===`);
  for (const [ms, pass, file] of rows) console.log(`${(ms / 1000).toFixed(1).padStart(7)} s  ${pass.padEnd(12)} ${file}`);
  rmSync(path.dirname(TIMES), { recursive: true, force: true });
}

type Pass = 'dialect-free' | 'sqlite' | 'postgres';

function runMocha(pass: Pass, files: string[], options: string[]): boolean {
  const where = { 'dialect-free': 'dialect-free files, once (no test database)', sqlite: 'database files on SQLite', postgres: `database files on PostgreSQL (${PG_URL})` }[pass];
  console.log(`\n=== npm test: ${files.length} ${where} ===`);
  // The dialect-free run names no dialect: test/helpers/database.ts refuses to load there.
  const result = spawnSync('npx', ['mocha', ...options, ...files], {
    stdio: 'inherit',
    env: { ...process.env, VIDMILL_TEST_DB: pass === 'dialect-free' ? 'none' : pass, VIDMILL_TEST_TIMES: TIMES },
  });
  return result.status === 0;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const nodeRuntime = args.includes('--node-runtime');
  const parsed = parseArgs(args.filter((a) => a !== '--passes' && a !== '--skip-lint' && a !== '--node-runtime'));
  const { options } = parsed;
  const files = nodeRuntime ? parsed.files.filter((f) => NODE_RUNTIME_DIRS.some((d) => f.startsWith(`${d}/`))) : parsed.files;
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
  const record = (label: string, count: number, ok: boolean) => {
    results.push(`${label} (${count} files) ${ok ? 'passed' : 'FAILED'}`);
    failed ||= !ok;
  };

  console.log(`npm test on Node ${process.version} (${process.execPath})`);
  // Lint runs with the whole suite (a run of chosen files skips it), unless --skip-lint.
  if (args.includes('--skip-lint')) {
    results.push('lint skipped (--skip-lint)');
  } else if (!nodeRuntime && files.length === testFilesUnder(TEST_DIR).length) {
    const linted = runLint();
    results.push(`lint ${linted ? 'passed' : 'FAILED'}`);
    failed ||= !linted;
  }
  if (dialectFree.length) record('dialect-free', dialectFree.length, runMocha('dialect-free', dialectFree, options));
  if (databaseFiles.length) {
    record('SQLite', databaseFiles.length, runMocha('sqlite', databaseFiles, options));
  }
  if (nodeRuntime) {
    results.push('PostgreSQL not run (--node-runtime: the driver does not depend on the Node version)');
  } else if (postgresFiles.length) {
    if (await postgresReachable()) {
      record('PostgreSQL', postgresFiles.length, runMocha('postgres', postgresFiles, options));
    } else {
      const required = process.env.VIDMILL_TEST_REQUIRE_PG === 'true';
      const outcome = required ? 'FAILED (unreachable)' : 'skipped (unreachable)';
      results.push(`PostgreSQL ${outcome}`);
      failed ||= required;
      console.log(`\nPostgreSQL at ${PG_URL} is not reachable: PostgreSQL run ${outcome}.`);
    }
  }
  if (!files.length) {
    results.push('no test files matched');
    failed = true;
  }
  printDurations();
  console.log(`\n=== npm test summary (Node ${process.version}): ${results.join('; ')} ===`);
  process.exit(failed ? 1 : 0);
}

void main();
