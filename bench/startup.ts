/**
 * `npm run bench -- startup`: cold start of the compiled server (`node [flags] dist/src/main.js`
 * with the flags and environment of package.json's start script: what `npm start` runs) on an
 * existing database, against the tsx start (`tsx src/main.ts`, what `npm start` ran before the
 * build) measured in the same run.
 *
 * A temporary data dir gets a migrated SQLite database with its owner (one start, not measured).
 * Then, alternating (compiled, tsx, compiled, ...), each start is timed from spawn to the first
 * `200` of `/readyz` (polled every 10 ms), while the resident memory of the process tree is
 * sampled every 10 ms until one second after ready. The RSS figure is the peak of the server's
 * own processes (tsx runs a second node process and esbuild); the ffmpeg and ffprobe that the
 * first `/readyz` runs for their versions are shown beside it, not counted in it. The CPU time the tree used until ready is shown too: on a
 * shared machine it says whether a slow start was slow or starved. After that second, one API
 * request (`GET /api/v1/api-keys`, signed in) shows what the first request costs, and the RSS
 * after it (information, no target: the contract validator is prepared on the first API request).
 *
 * Targets (compiled, medians): ready within 1.5 s, peak RSS under 130 MB.
 * Knobs (env): BENCH_STARTUP_ROUNDS (5), BENCH_KEEP=1 (keep the temp dir),
 * BENCH_STARTUP_BASELINE_DIR=<checkout> (the tsx start of another checkout as the baseline, e.g.
 * the code before a change; its database schema must be the same or older).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Benchmark, buildDist, Check, freePort, median, onExit, productionStart, Result, ROOT, sleep, spawnTracked, stopChild } from './lib';

const ROUNDS = Number(process.env.BENCH_STARTUP_ROUNDS || 5);
const TARGET_READY_MS = 1500;
const TARGET_RSS_MB = 130;
const SETTLE_MS = 1000;
const EMAIL = 'bench@vidmill.local';
const PASSWORD = 'a-long-bench-password';
const TICK_MS = 10; // USER_HZ

interface Variant {
  name: string;
  cmd: string;
  args: string[];
  cwd: string;
  /** Environment the start script sets (productionStart). */
  env?: Record<string, string>;
}

/** Another checkout (e.g. `git worktree add /tmp/before <commit>`, node_modules linked) whose tsx start is the baseline. */
const BASELINE_ROOT = process.env.BENCH_STARTUP_BASELINE_DIR ? path.resolve(process.env.BENCH_STARTUP_BASELINE_DIR) : ROOT;
const START = productionStart();
const COMPILED: Variant = { name: 'compiled (node dist)', cmd: process.execPath, args: START.args, cwd: ROOT, env: START.env };
const TSX: Variant = {
  name: BASELINE_ROOT === ROOT ? 'tsx (baseline)' : 'tsx (baseline checkout)',
  cmd: path.join(ROOT, 'node_modules', '.bin', 'tsx'),
  args: [path.join(BASELINE_ROOT, 'src', 'main.ts')],
  cwd: BASELINE_ROOT,
};

interface Start {
  readyMs: number;
  peakRssMb: number;
  peakTreeRssMb: number;
  cpuMs: number;
  processes: number;
  firstRequestMs: number;
  rssAfterRequestMb: number;
}

/** `pid` and every process below it (from /proc: parent of each process). */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      /* exited meanwhile */
    }
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** The media tools the server runs (the first /readyz runs `ffmpeg -version` and `ffprobe -version`). */
const MEDIA_TOOLS = new Set(['ffmpeg', 'ffprobe']);

interface Usage {
  /** Resident memory of the server's own processes (node; for tsx also esbuild), MB. */
  rssMb: number;
  /** The same plus the media tools running at that moment, MB. */
  treeRssMb: number;
  /** CPU time of the server's own processes so far, ms. */
  cpuMs: number;
  processes: number;
}

/** Sums over the tree below `root`. */
function treeUsage(root: number): Usage {
  let rssKb = 0;
  let mediaKb = 0;
  let ticks = 0;
  let processes = 0;
  for (const pid of processTree(root)) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      if (MEDIA_TOOLS.has(/Name:\s+(\S+)/.exec(status)?.[1] ?? '')) {
        mediaKb += kb;
        continue;
      }
      rssKb += kb;
      ticks += Number(f[11]) + Number(f[12]);
      processes++;
    } catch {
      /* exited meanwhile */
    }
  }
  return { rssMb: rssKb / 1024, treeRssMb: (rssKb + mediaKb) / 1024, cpuMs: ticks * TICK_MS, processes };
}

function serverEnv(dataDir: string, port: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('VIDMILL_')) env[k] = v;
  return { ...env, VIDMILL_DATA_DIR: dataDir, VIDMILL_HOST: '127.0.0.1', VIDMILL_PORT: String(port), VIDMILL_BOOTSTRAP_EMAIL: EMAIL, VIDMILL_BOOTSTRAP_PASSWORD: PASSWORD, VIDMILL_LOG_LEVEL: 'warn' };
}

async function startOnce(variant: Variant, dataDir: string): Promise<Start> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const child = spawnTracked(variant.cmd, variant.args, { cwd: variant.cwd, env: { ...serverEnv(dataDir, port), ...variant.env }, stdio: ['ignore', 'ignore', 'inherit'], detached: true });
  let peakRssMb = 0;
  let peakTreeRssMb = 0;
  const track = (u: Usage) => {
    peakRssMb = Math.max(peakRssMb, u.rssMb);
    peakTreeRssMb = Math.max(peakTreeRssMb, u.treeRssMb);
    return u;
  };
  const sampler = setInterval(() => track(treeUsage(child.pid!)), 10);
  try {
    let readyMs: number | undefined;
    while (readyMs === undefined) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${variant.name} exited (${child.exitCode ?? child.signalCode}) before it was ready`);
      if (performance.now() - t0 > 60_000) throw new Error(`${variant.name} not ready after 60 s`);
      try {
        const res = await fetch(`${url}/readyz`);
        await res.arrayBuffer();
        if (res.status === 200) readyMs = performance.now() - t0;
      } catch {
        /* not listening yet */
      }
      if (readyMs === undefined) await sleep(10);
    }
    const atReady = track(treeUsage(child.pid!));
    await sleep(SETTLE_MS);
    clearInterval(sampler);
    track(treeUsage(child.pid!));
    const r0 = performance.now();
    const res = await fetch(`${url}/api/v1/api-keys`, { headers: { authorization: `Basic ${Buffer.from(`${EMAIL}:${PASSWORD}`).toString('base64')}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${variant.name}: GET /api/v1/api-keys answered ${res.status}`);
    const firstRequestMs = performance.now() - r0;
    const after = treeUsage(child.pid!);
    return { readyMs, peakRssMb, peakTreeRssMb, cpuMs: atReady.cpuMs, processes: atReady.processes, firstRequestMs, rssAfterRequestMb: after.rssMb };
  } finally {
    clearInterval(sampler);
    await stopChild(child, 10_000);
    try {
      process.kill(-child.pid!, 'SIGKILL'); // anything of its group left behind
    } catch {
      /* none */
    }
  }
}

export const startupBenchmark: Benchmark = {
  name: 'startup',
  description: 'cold start to /readyz and peak RSS on an existing database: node dist (npm start) vs tsx src/main.ts',
  async run(): Promise<Result> {
    buildDist();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-bench-startup-'));
    const removeTmp = () => {
      if (process.env.BENCH_KEEP !== '1') rmSync(dataDir, { recursive: true, force: true });
    };
    const cancelRemoveOnExit = onExit(removeTmp);
    try {
      await startOnce(COMPILED, dataDir); // creates and migrates the database, bootstraps the owner
      const starts = new Map<Variant, Start[]>([
        [COMPILED, []],
        [TSX, []],
      ]);
      for (let round = 0; round < ROUNDS; round++) {
        for (const variant of [COMPILED, TSX]) starts.get(variant)!.push(await startOnce(variant, dataDir));
      }
      const summary = (v: Variant) => {
        const s = starts.get(v)!;
        return {
          readyMs: median(s.map((x) => x.readyMs)),
          peakRssMb: median(s.map((x) => x.peakRssMb)),
          peakTreeRssMb: median(s.map((x) => x.peakTreeRssMb)),
          cpuMs: median(s.map((x) => x.cpuMs)),
          processes: Math.max(...s.map((x) => x.processes)),
          firstRequestMs: median(s.map((x) => x.firstRequestMs)),
          rssAfterRequestMb: median(s.map((x) => x.rssAfterRequestMb)),
          range: `${Math.round(Math.min(...s.map((x) => x.readyMs)))}-${Math.round(Math.max(...s.map((x) => x.readyMs)))}`,
        };
      };
      const compiled = summary(COMPILED);
      const tsx = summary(TSX);
      const table = [COMPILED, TSX].map((v) => {
        const s = summary(v);
        return {
          start: v.name,
          'ready ms (median)': Math.round(s.readyMs),
          'ready ms (range)': s.range,
          'CPU ms to ready': Math.round(s.cpuMs),
          'peak RSS MB': s.peakRssMb.toFixed(1),
          'with ffmpeg/ffprobe MB': s.peakTreeRssMb.toFixed(1),
          processes: s.processes,
          'first API request ms': Math.round(s.firstRequestMs),
          'RSS after it MB': s.rssAfterRequestMb.toFixed(1),
        };
      });
      const checks: Check[] = [
        { name: `compiled ready / ${TARGET_READY_MS} ms`, ratio: compiled.readyMs / TARGET_READY_MS, kind: 'max', limit: 1 },
        { name: `compiled peak RSS / ${TARGET_RSS_MB} MB`, ratio: compiled.peakRssMb / TARGET_RSS_MB, kind: 'max', limit: 1 },
        { name: 'compiled / tsx ready time', ratio: compiled.readyMs / tsx.readyMs, kind: 'max', limit: 1, info: true },
        { name: 'compiled / tsx CPU to ready', ratio: compiled.cpuMs / tsx.cpuMs, kind: 'max', limit: 1, info: true },
        { name: 'compiled / tsx peak RSS', ratio: compiled.peakRssMb / tsx.peakRssMb, kind: 'max', limit: 1, info: true },
      ];
      const notes = [
        `${ROUNDS} starts each, alternating, on one SQLite database migrated beforehand; medians${BASELINE_ROOT === ROOT ? '' : `; baseline: tsx start of ${BASELINE_ROOT}`}`,
        "ready: spawn to the first 200 of /readyz; peak RSS: the server's processes (tsx: its CLI process, the node process it starts, esbuild), summed, sampled every 10 ms until 1 s after ready",
        'with ffmpeg/ffprobe: the same plus the `ffmpeg -version` and `ffprobe -version` that /readyz runs (about 40 MB each, mostly shared libraries; information)',
        'first API request: GET /api/v1/api-keys after that second; it prepares the contract validator (loaded on first use, not at start)',
        `load average at the end: ${os
          .loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')} on ${os.availableParallelism?.() ?? os.cpus().length} cores (ready time is wall time; CPU to ready is not inflated by other processes)`,
      ];
      return { table, checks, notes };
    } finally {
      cancelRemoveOnExit();
      removeTmp();
    }
  },
};
