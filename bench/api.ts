/**
 * `npm run bench -- api`: authenticated GET /api/v1/projects?pageSize=20 through the whole real
 * pipeline (request id, access log at info to a file, API-key auth, rate limit,
 * express-openapi-validator, team-scoped store) against bench/baseline-app.ts serving the same 20 rows
 * with the same validator and no auth or rate limit, measured in the same run: on SQLite (the
 * baseline reads a copy of the table with better-sqlite3), then on PostgreSQL (Vidmill on a fresh
 * database with its PostgreSQL rate limiter; the baseline reads the same table with a `pg` pool).
 *
 * Servers run one at a time under load, each pinned to core 0; autocannon (50 connections) is
 * pinned to core 1. Order A B A B (baseline, vidmill, ...) with a warmup before each measurement;
 * the median of each side is compared. Targets: throughput >= 0.85x baseline, p99 <= 1.5x.
 *
 * Knobs (env): BENCH_WARMUP_S (3), BENCH_DURATION_S (10), BENCH_ROUNDS (2), BENCH_CONNECTIONS (50),
 * BENCH_CPU_PROF=<dir> (run the Vidmill server with --cpu-prof, profile written on stop),
 * BENCH_VIDMILL_LOG=<file> (default: a file in the temp dir; /dev/null allowed),
 * BENCH_BASELINE_VALIDATE_RESPONSES=1 (baseline validates responses like the real app does),
 * BENCH_KEEP=1 (keep the temp dir), BENCH_API_DATABASES (sqlite,pg; either alone),
 * VIDMILL_TEST_PG_URL (an admin URL of the PostgreSQL server, postgres://postgres@127.0.0.1:5432/test).
 */
import { strict as assert } from 'node:assert';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import {
  autocannon,
  benchDatabase,
  Benchmark,
  cpuCount,
  CpuUse,
  cpuUse,
  cleanEnv,
  freePort,
  hasTaskset,
  LoadResult,
  median,
  onExit,
  pinned,
  pinPid,
  Result,
  ROOT,
  sampleCpu,
  spawnTracked,
  stopChild,
  waitForHttp,
} from './lib';

const num = (name: string, dflt: number) => {
  const v = process.env[name];
  return v === undefined || v === '' ? dflt : Number(v);
};

const WARMUP_S = num('BENCH_WARMUP_S', 3);
const DURATION_S = num('BENCH_DURATION_S', 10);
const ROUNDS = num('BENCH_ROUNDS', 2);
const CONNECTIONS = num('BENCH_CONNECTIONS', 50);
const PAGE_SIZE = 20;
const EXTRA_PROJECTS = 20;

const DATABASES = (process.env.BENCH_API_DATABASES ?? 'sqlite,pg').split(',').map((d) => d.trim()) as Dialect[];
type Dialect = 'sqlite' | 'pg';

const TARGET_THROUGHPUT = 0.85;
const TARGET_P99 = 1.5;

const EMAIL = 'bench@vidmill.local';
const PASSWORD = 'bench-password-1234';
// The configuration caps the limit at 1,000,000 per minute; far above what one core can serve.
const RATE_LIMIT = '1000000';

async function json(res: Response, what: string): Promise<any> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text}`);
  return JSON.parse(text);
}

export const apiBenchmark: Benchmark = {
  name: 'api',
  description: `authenticated GET /api/v1/projects?pageSize=${PAGE_SIZE} (SQLite, PostgreSQL) vs minimal Express+validator+better-sqlite3 / pg baselines`,
  async run(): Promise<Result> {
    const merged: Result = { table: [], notes: [], checks: [] };
    for (const dialect of DATABASES) {
      if (dialect !== 'sqlite' && dialect !== 'pg') throw new Error(`BENCH_API_DATABASES: unknown database ${String(dialect)}`);
      console.log(`  -- ${dialect === 'pg' ? 'PostgreSQL' : 'SQLite'}`);
      const r = await measure(dialect);
      merged.table.push(...r.table.map((row) => ({ ...row, run: `${dialect} ${String(row.run)}` })));
      merged.notes.push(...r.notes.map((n) => `${dialect}: ${n}`));
      merged.checks.push(...r.checks.map((c) => ({ ...c, name: `${dialect}: ${c.name}` })));
    }
    return merged;
  },
};

async function measure(dialect: Dialect): Promise<Result> {
  {
    const notes: string[] = [];
    const cores = cpuCount();
    const serverCore = 0;
    const loadCore = cores >= 2 ? 1 : 0;
    if (!hasTaskset()) notes.push('taskset not found: processes are NOT pinned to cores; ratios are less reliable');
    else if (cores < 2) notes.push(`only ${cores} core: server and load generator share core 0`);
    else {
      notes.push(`servers pinned to core ${serverCore}, autocannon to core ${loadCore} (${cores} cores available)`);
      // Keep this (mostly idle) process off the server's core as well.
      pinPid(process.pid, loadCore);
    }

    const tmp = mkdtempSync(path.join(os.tmpdir(), 'vidmill-bench-'));
    const removeTmp = () => {
      if (process.env.BENCH_KEEP !== '1') rmSync(tmp, { recursive: true, force: true });
    };
    const cancelRemoveOnExit = onExit(removeTmp); // also on SIGINT and crashes
    const dataDir = path.join(tmp, 'data');
    mkdirSync(dataDir);
    const logFile = process.env.BENCH_VIDMILL_LOG || path.join(tmp, 'vidmill.log');
    const errFile = path.join(tmp, 'vidmill.stderr');
    const baselineDb = path.join(tmp, 'baseline.sqlite');
    const cpuProfDir = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : undefined;
    const pg = dialect === 'pg' ? await benchDatabase('api', { migrate: false }) : undefined;

    const vidmillPort = await freePort();
    const baselinePort = await freePort();
    const vidmillBase = `http://127.0.0.1:${vidmillPort}`;
    const baselineBase = `http://127.0.0.1:${baselinePort}`;

    const logFd = openSync(logFile, 'a');
    const errFd = openSync(errFile, 'a');
    const nodeArgs = ['--import', 'tsx', ...(cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfDir] : [])];
    const [vCmd, vArgs] = pinned(serverCore, process.execPath, [...nodeArgs, 'src/main.ts']);
    const vidmill = spawnTracked(vCmd, vArgs, {
      cwd: ROOT,
      stdio: ['ignore', logFd, errFd],
      env: {
        ...cleanEnv(),
        NODE_ENV: 'production',
        VIDMILL_DATA_DIR: dataDir,
        VIDMILL_HOST: '127.0.0.1',
        VIDMILL_PORT: String(vidmillPort),
        VIDMILL_BOOTSTRAP_EMAIL: EMAIL,
        VIDMILL_BOOTSTRAP_PASSWORD: PASSWORD,
        VIDMILL_RATE_LIMIT_PER_MINUTE: RATE_LIMIT,
        VIDMILL_LOG_LEVEL: 'info',
        ...(pg ? { VIDMILL_DATABASE_URL: pg.url, VIDMILL_MASTER_KEY: randomBytes(32).toString('base64') } : {}),
      },
    });
    let baseline: ReturnType<typeof spawnTracked> | undefined;

    try {
      try {
        await waitForHttp(`${vidmillBase}/healthz`, vidmill, 'Vidmill server');
      } catch (err) {
        throw new Error(`${(err as Error).message}\n--- stderr ---\n${readFileSync(errFile, 'utf8')}`, { cause: err });
      }

      // -- Data: an API key (Basic auth) and 20 projects beside the bootstrap Default Project.
      const basic = 'Basic ' + Buffer.from(`${EMAIL}:${PASSWORD}`).toString('base64');
      const created = await json(
        await fetch(`${vidmillBase}/api/v1/api-keys`, {
          method: 'POST',
          headers: { authorization: basic, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'bench', active: true }),
        }),
        'create API key',
      );
      const apiKey: string = created.apiKey;
      assert.ok(apiKey, 'create API key: no apiKey in the response');
      const auth = { 'X-API-Key': apiKey };
      for (let i = 1; i <= EXTRA_PROJECTS; i++) {
        await json(
          await fetch(`${vidmillBase}/api/v1/projects`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `Bench project ${String(i).padStart(2, '0')}` }),
          }),
          `create project ${i}`,
        );
      }
      const path_ = `/api/v1/projects?pageSize=${PAGE_SIZE}`;
      const vidmillPage = await json(await fetch(vidmillBase + path_, { headers: auth }), 'Vidmill GET projects');
      assert.equal(vidmillPage.items.length, PAGE_SIZE, 'Vidmill page does not hold 20 rows');

      // -- Baseline database (SQLite): Vidmill's own `projects` DDL and rows, copied. On PostgreSQL
      // the baseline reads Vidmill's own table (one team's projects, as here).
      if (!pg) {
        const src = new Database(path.join(dataDir, 'vidmill.sqlite'), { readonly: true, fileMustExist: true });
        const ddl = src.prepare(`select sql from sqlite_master where tbl_name = 'projects' and sql is not null order by type = 'table' desc`).all() as { sql: string }[];
        const rows = src.prepare('select * from projects').all() as Record<string, unknown>[];
        src.close();
        const dst = new Database(baselineDb);
        dst.pragma('journal_mode = WAL');
        dst.pragma('foreign_keys = OFF'); // the copied DDL references teams, which is not copied
        for (const { sql } of ddl) dst.exec(sql);
        const cols = Object.keys(rows[0]!);
        const insert = dst.prepare(`insert into projects (${cols.join(', ')}) values (${cols.map((c) => '@' + c).join(', ')})`);
        dst.transaction(() => rows.forEach((r) => insert.run(r)))();
        dst.close();
      }

      const [bCmd, bArgs] = pinned(serverCore, process.execPath, ['--import', 'tsx', 'bench/baseline-app.ts']);
      baseline = spawnTracked(bCmd, bArgs, {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'inherit'],
        env: {
          ...cleanEnv(),
          NODE_ENV: 'production',
          BASELINE_PORT: String(baselinePort),
          ...(pg ? { BASELINE_PG_URL: pg.url } : { BASELINE_DB: baselineDb }),
          BASELINE_VALIDATE_RESPONSES: process.env.BENCH_BASELINE_VALIDATE_RESPONSES === '1' ? '1' : '0',
        },
      });
      await waitForHttp(`${baselineBase}/healthz`, baseline, 'baseline server');
      const baselinePage = await json(await fetch(baselineBase + path_, { headers: auth }), 'baseline GET projects');
      assert.deepEqual(baselinePage, vidmillPage, 'baseline and Vidmill answer different bodies');
      notes.push(`both servers answer the identical ProjectsPage (${PAGE_SIZE} of ${vidmillPage.totalElements} projects, ${JSON.stringify(vidmillPage).length} bytes)`);
      if (process.env.BENCH_BASELINE_VALIDATE_RESPONSES === '1') notes.push('baseline validates responses too (BENCH_BASELINE_VALIDATE_RESPONSES=1)');
      else notes.push('baseline validates requests only; Vidmill also validates responses (validateResponses with onError)');

      // -- Load: A B A B, warmup before each measurement.
      const targets = {
        baseline: { url: baselineBase + path_ },
        vidmill: { url: vidmillBase + path_ },
      } as const;
      const runs: { target: keyof typeof targets; round: number; r: LoadResult; cpu?: CpuUse }[] = [];
      const logBytesBefore = statSafe(logFile);
      let vidmillRequests = 0; // warmups included, to relate to the log volume
      for (let round = 1; round <= ROUNDS; round++) {
        for (const target of ['baseline', 'vidmill'] as const) {
          const common = { url: targets[target].url, connections: CONNECTIONS, headers: auth, core: loadCore };
          process.stdout.write(`  ${target} round ${round}: warmup ${WARMUP_S}s, measure ${DURATION_S}s ... `);
          const w = WARMUP_S > 0 ? await autocannon({ ...common, seconds: WARMUP_S }) : undefined;
          const pid = (target === 'vidmill' ? vidmill : baseline).pid!;
          const before = sampleCpu(pid, serverCore);
          const r = await autocannon({ ...common, seconds: DURATION_S });
          const cpu = cpuUse(before, sampleCpu(pid, serverCore));
          if (target === 'vidmill') vidmillRequests += r.total + (w?.total ?? 0);
          process.stdout.write(`${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms\n`);
          runs.push({ target, round, r, cpu });
        }
      }
      const logBytes = statSafe(logFile) - logBytesBefore;

      // -- Result
      const pct = (x: number | undefined) => (x === undefined ? '?' : (x * 100).toFixed(0));
      const usPerReq = (x: { r: LoadResult; cpu?: CpuUse }) => (x.cpu ? (x.cpu.procMs * 1000) / x.r.total : NaN);
      type Row = Pick<LoadResult, 'rps' | 'p50' | 'p90' | 'p99'> & { total?: number; us?: number; cpu?: CpuUse };
      const row = (label: string, r: Row) => ({
        run: label,
        'req/s': r.rps.toFixed(0),
        'p50 ms': r.p50.toFixed(1),
        'p90 ms': r.p90.toFixed(1),
        'p99 ms': r.p99.toFixed(1),
        requests: r.total === undefined ? '' : String(r.total),
        'CPU us/req': r.us === undefined || Number.isNaN(r.us) ? '?' : r.us.toFixed(0),
        'srv CPU%': r.cpu ? pct(r.cpu.procShare) : '',
        'other%': r.cpu ? pct(r.cpu.otherShare) : '',
        'steal%': r.cpu ? pct(r.cpu.stealShare) : '',
      });
      const med = (t: 'baseline' | 'vidmill') => {
        const xs = runs.filter((x) => x.target === t);
        const rs = xs.map((x) => x.r);
        return {
          rps: median(rs.map((r) => r.rps)),
          p50: median(rs.map((r) => r.p50)),
          p90: median(rs.map((r) => r.p90)),
          p99: median(rs.map((r) => r.p99)),
          us: median(xs.map(usPerReq)),
        };
      };
      const mb = med('baseline');
      const mv = med('vidmill');
      const table = [...runs.map((x) => row(`${x.target} #${x.round}`, { ...x.r, us: usPerReq(x), cpu: x.cpu })), row('baseline median', mb), row('vidmill median', mv)];
      // Logging is part of what is measured: a run in which Vidmill logged nothing does not count.
      if (logFile !== '/dev/null' && logBytes < vidmillRequests * 20) {
        throw new Error(`Vidmill wrote ${logBytes} bytes of log for ${vidmillRequests} requests: the access log must stay on at level info`);
      }
      if (logFile !== '/dev/null') {
        notes.push(
          `Vidmill access log on (level info): ${(logBytes / 1024 / 1024).toFixed(1)} MiB written to ${process.env.BENCH_KEEP === '1' || process.env.BENCH_VIDMILL_LOG ? logFile : 'a temp file'} ` +
            `during load (${Math.round(logBytes / Math.max(1, vidmillRequests))} bytes/request)`,
        );
      } else notes.push('Vidmill access log on (level info), written to /dev/null');
      const contended = runs.filter((x) => x.cpu && x.cpu.otherShare + x.cpu.stealShare > 0.1);
      if (contended.length) {
        notes.push(
          `core ${serverCore} was shared during ${contended.map((x) => `${x.target} #${x.round}`).join(', ')} (other% + steal% > 10): ` +
            'req/s and latency of those runs are depressed; compare the CPU us/req based capacity ratio',
        );
      }
      notes.push(`${CONNECTIONS} connections, warmup ${WARMUP_S}s + ${DURATION_S}s measured per run, ${ROUNDS} rounds (A B A B), medians compared`);
      if (cpuProfDir) notes.push(`Vidmill CPU profile (--cpu-prof) written to ${cpuProfDir} when the server stops`);

      return {
        table,
        notes,
        checks: [
          { name: 'throughput vidmill/baseline', ratio: mv.rps / mb.rps, kind: 'min', limit: TARGET_THROUGHPUT },
          { name: 'p99 latency vidmill/baseline', ratio: mv.p99 / mb.p99, kind: 'max', limit: TARGET_P99 },
          // Server CPU per request is barely affected by other load on the machine: its inverse
          // ratio is the throughput ratio the two servers would reach on an otherwise idle core.
          { name: 'capacity (baseline/vidmill CPU/req)', ratio: mb.us / mv.us, kind: 'min', limit: TARGET_THROUGHPUT, info: true },
        ],
      };
    } finally {
      await Promise.all([stopChild(vidmill, cpuProfDir ? 15_000 : 5000), baseline && stopChild(baseline)]);
      await pg?.drop();
      closeSync(logFd);
      closeSync(errFd);
      if (process.env.BENCH_KEEP === '1') console.log(`kept ${tmp}`);
      removeTmp();
      cancelRemoveOnExit();
    }
  }
}

function statSafe(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
