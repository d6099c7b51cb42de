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
 * `npm test -- --skip-lint` runs the whole suite without it (CI's second Node version: lint
 * checks the source, which does not change with the Node version).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
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

type Pass = 'dialect-free' | 'sqlite' | 'postgres';

function runMocha(pass: Pass, files: string[], options: string[]): boolean {
  const where = { 'dialect-free': 'dialect-free files, once (no test database)', sqlite: 'database files on SQLite', postgres: `database files on PostgreSQL (${PG_URL})` }[pass];
  console.log(`\n=== npm test: ${files.length} ${where} ===`);
  // The dialect-free run names no dialect: test/helpers/database.ts refuses to load there.
  const result = spawnSync('npx', ['mocha', ...options, ...files], {
    stdio: 'inherit',
    env: { ...process.env, VIDMILL_TEST_DB: pass === 'dialect-free' ? 'none' : pass },
  });
  return result.status === 0;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const { files, options } = parseArgs(args.filter((a) => a !== '--passes' && a !== '--skip-lint'));
  const databaseFiles = files.filter((f) => usesTestDatabase(f));
  const dialectFree = files.filter((f) => !databaseFiles.includes(f));
  if (args.includes('--passes')) {
    console.log(`dialect-free, once (${dialectFree.length}):\n  ${dialectFree.join('\n  ')}`);
    console.log(`on SQLite and on PostgreSQL (${databaseFiles.length}):\n  ${databaseFiles.join('\n  ')}`);
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
  } else if (files.length === testFilesUnder(TEST_DIR).length) {
    const linted = runLint();
    results.push(`lint ${linted ? 'passed' : 'FAILED'}`);
    failed ||= !linted;
  }
  if (dialectFree.length) record('dialect-free', dialectFree.length, runMocha('dialect-free', dialectFree, options));
  if (databaseFiles.length) {
    record('SQLite', databaseFiles.length, runMocha('sqlite', databaseFiles, options));
    if (await postgresReachable()) {
      record('PostgreSQL', databaseFiles.length, runMocha('postgres', databaseFiles, options));
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
  console.log(`\n=== npm test summary (Node ${process.version}): ${results.join('; ')} ===`);
  process.exit(failed ? 1 : 0);
}

void main();
