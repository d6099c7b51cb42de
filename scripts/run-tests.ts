/**
 * `npm test`: `npm run lint` once (eslint, prettier --check, import boundaries), then the whole
 * mocha suite on SQLite, then again on PostgreSQL when it is reachable
 * (VIDMILL_TEST_PG_URL, default postgres://postgres@127.0.0.1:5432/test). Says which ran; lint
 * errors fail the run like a failing test.
 * VIDMILL_TEST_REQUIRE_PG=true turns "PostgreSQL unreachable" into a failure (CI sets it).
 * Extra arguments go to mocha (for example a single file).
 */
import { spawnSync } from 'node:child_process';
import { Client } from 'pg';

const PG_URL = process.env.VIDMILL_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

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

function runMocha(dialect: 'sqlite' | 'postgres'): boolean {
  console.log(`\n=== npm test: whole suite on ${dialect === 'sqlite' ? 'SQLite' : `PostgreSQL (${PG_URL})`} ===`);
  const files = process.argv.length > 2 ? process.argv.slice(2) : ['test/**/*.test.ts'];
  const result = spawnSync('npx', ['mocha', ...files], {
    stdio: 'inherit',
    env: { ...process.env, VIDMILL_TEST_DB: dialect },
  });
  return result.status === 0;
}

async function main(): Promise<void> {
  const results: Record<string, string> = {};
  results.lint = runLint() ? 'passed' : 'FAILED';
  results.sqlite = runMocha('sqlite') ? 'passed' : 'FAILED';
  if (await postgresReachable()) {
    results.postgres = runMocha('postgres') ? 'passed' : 'FAILED';
  } else {
    results.postgres = process.env.VIDMILL_TEST_REQUIRE_PG === 'true' ? 'FAILED (unreachable)' : 'skipped (unreachable)';
    console.log(`\nPostgreSQL at ${PG_URL} is not reachable: PostgreSQL run ${results.postgres}.`);
  }
  console.log(`\n=== npm test summary: lint ${results.lint}; SQLite ${results.sqlite}; PostgreSQL ${results.postgres} ===`);
  process.exit(Object.values(results).some((r) => r.startsWith('FAILED')) ? 1 : 0);
}

void main();
