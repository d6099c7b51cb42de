/**
 * `npm run bench -- overhead` (issue 28): what the platform adds to the media work of a short
 * video. A 4 s 1280x720 25 fps H.264 + AAC file, served by the test range server (HTTPS), is
 * requested as a video from that URL by this process (as an API process does: `createFromHttps`
 * on the same PostgreSQL database) and copied and ingested by a worker process
 * (`npm run worker`'s `node dist/src/main.js`, VIDMILL_ROLE=worker, woken by LISTEN/NOTIFY). Each
 * video is timed from the request to its ingestion DONE (polled every 5 ms); the worker's ffmpeg
 * and ffprobe are wrappers that log when each run started and ended, and "the ffmpeg steps" are
 * the time covered by those runs (their union, as some overlap). Overhead = request-to-ingested
 * over the ffmpeg steps, minus 1: the copy, the two job pickups, the database writes and the
 * process starts between steps. Both ingestion modes, 5 videos each, one at a time (the free clip
 * off, the queue idle before the next request); medians.
 *
 * Target: an overhead of at most 15 % in each mode: full ingestion (thumbnails, frames, web video,
 * quality) and metadata-only (the API's default: a probe and the scanning check, a few hundred
 * milliseconds, so the fixed costs weigh most there). Printed beside: the time before the first
 * ffmpeg run (the request, the copy, two job pickups) and after the last (the last writes and this
 * process's poll).
 *
 * Knobs (env): BENCH_OVERHEAD_VIDEOS (5), BENCH_OVERHEAD_LOG_LEVEL (the worker's, warn), VIDMILL_TEST_PG_URL (an admin URL, a database of its
 * own is created and dropped), BENCH_KEEP=1 (keep the temp dir: the worker's log, the step log).
 */
import { ChildProcess, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setFreeClipEnabled } from '../src/features/ingestion/testing';
import { findVideo } from '../src/features/videos';
import { resolveMediaBinaries } from '../src/media';
import { embeddedVidmill, EmbeddedVidmill } from './embedded-vidmill';
import { benchDatabase, buildDist, installCleanupHandlers, median, onExit, printTable, sleep, startRangeServerProcess, startWorkerProcess, stopChild, untilQueueIdle } from './lib';

const VIDEOS = Number(process.env.BENCH_OVERHEAD_VIDEOS ?? 5);
const TARGET_OVERHEAD = 0.15;

/** Shell wrappers of ffmpeg and ffprobe that append `<tool> <start ns> <end ns>` to `log` for each run. */
function timingWrappers(dir: string, bins: { ffmpeg: string; ffprobe: string }, log: string): { ffmpeg: string; ffprobe: string } {
  const wrap = (tool: 'ffmpeg' | 'ffprobe') => {
    const file = path.join(dir, tool);
    writeFileSync(file, `#!/bin/sh\nstart=$(date +%s%N)\n'${bins[tool]}' "$@"\nrc=$?\necho "${tool} $start $(date +%s%N)" >> '${log}'\nexit $rc\n`);
    chmodSync(file, 0o755);
    return file;
  };
  return { ffmpeg: wrap('ffmpeg'), ffprobe: wrap('ffprobe') };
}

/** The runs logged between `fromMs` and `toMs` (epoch ms): their count, the time their union covers, when the first started and the last ended. */
function stepsBetween(log: string, fromMs: number, toMs: number): { runs: number; coveredMs: number; firstStartMs: number; lastEndMs: number } {
  if (!existsSync(log)) return { runs: 0, coveredMs: 0, firstStartMs: toMs, lastEndMs: toMs };
  const runs = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' '))
    .map(([, start, end]) => [Number(start) / 1e6, Number(end) / 1e6] as [number, number])
    .filter(([start]) => start >= fromMs && start <= toMs)
    .sort((a, b) => a[0] - b[0]);
  let covered = 0;
  let until = -Infinity;
  for (const [start, end] of runs) {
    if (end <= until) continue;
    covered += end - Math.max(start, until);
    until = end;
  }
  return { runs: runs.length, coveredMs: covered, firstStartMs: runs[0]?.[0] ?? toMs, lastEndMs: until === -Infinity ? toMs : until };
}

interface Timed {
  totalMs: number;
  stepsMs: number;
  runs: number;
  /** From the request to the first ffmpeg run (the copy and two job pickups). */
  beforeMs: number;
  /** From the last run's end to DONE seen (the last writes, and this process's 5 ms poll). */
  afterMs: number;
}

async function timeOne(v: EmbeddedVidmill, url: string, fullIngestion: boolean, stepLog: string, n: number): Promise<Timed> {
  const started = Date.now();
  const video = await v.s.videoIn.createFromHttps(v.userId, { name: `overhead-${n}.mp4`, url, fullIngestion });
  for (;;) {
    const now = await findVideo(v.db, video.id);
    const status = now?.ingestion?.status;
    if (status === 'DONE') break;
    if (status === 'FAILED' || now?.upload?.status === 'FAILED') throw new Error(`video ${video.id} failed: ${JSON.stringify(now?.ingestion?.error ?? now?.upload)}`);
    if (Date.now() - started > 120_000) throw new Error(`video ${video.id} not ingested after 120 s`);
    await sleep(5);
  }
  const ended = Date.now();
  const steps = stepsBetween(stepLog, started, ended);
  // Nothing of this video may run into the next one's time.
  await untilQueueIdle(v.db, { pollMs: 20 });
  return { totalMs: ended - started, stepsMs: steps.coveredMs, runs: steps.runs, beforeMs: steps.firstStartMs - started, afterMs: ended - steps.lastEndMs };
}

export async function overheadBenchmark(): Promise<boolean> {
  installCleanupHandlers();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-bench-overhead-'));
  const cancelRemove = onExit(() => process.env.BENCH_KEEP !== '1' && rmSync(dir, { recursive: true, force: true }));
  const database = await benchDatabase('overhead');
  let server: ChildProcess | undefined;
  let worker: ChildProcess | undefined;
  let v: EmbeddedVidmill | undefined;
  try {
    buildDist();
    const bins = await resolveMediaBinaries({});
    const source = path.join(dir, 'source-4s.mp4');
    // prettier-ignore
    execFileSync(bins.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y',
      '-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25:duration=4', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=4',
      '-c:v', 'libx264', '-preset', 'veryfast', '-g', '50', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', source]);

    const range = await startRangeServerProcess({ '/source-4s.mp4': source });
    server = range.child;
    const { origin, ca } = range;
    const caFile = path.join(dir, 'ca.pem');
    writeFileSync(caFile, ca);

    const dataDir = path.join(dir, 'data');
    mkdirSync(dataDir);
    v = await embeddedVidmill(dir, { database: { client: 'pg', connectionString: database.url }, blobDir: path.join(dataDir, 'blobs'), config: { extraCa: [ca] } });
    // No free clip: its cut starts as the master's ingestion ends and would run into the next video's time.
    await setFreeClipEnabled(v.db, v.teamId, false);
    const stepLog = path.join(dir, 'steps.log');
    const wrappers = timingWrappers(dir, bins, stepLog);
    worker = await startWorkerProcess(
      {
        NODE_ENV: 'production',
        VIDMILL_DATA_DIR: dataDir,
        VIDMILL_DATABASE_URL: database.url,
        VIDMILL_MASTER_KEY: v.masterKey.toString('base64'),
        VIDMILL_HOST: '127.0.0.1',
        VIDMILL_LOG_LEVEL: process.env.BENCH_OVERHEAD_LOG_LEVEL ?? 'warn',
        VIDMILL_ALLOW_PRIVATE_URLS: 'true',
        VIDMILL_EXTRA_CA_FILE: caFile,
        VIDMILL_FFMPEG_PATH: wrappers.ffmpeg,
        VIDMILL_FFPROBE_PATH: wrappers.ffprobe,
      },
      path.join(dir, 'worker.log'),
    );

    const url = `${origin}/source-4s.mp4`;
    // One video of each mode first, not counted: the worker's first job loads what it needs.
    await timeOne(v, url, true, stepLog, 0);
    await timeOne(v, url, false, stepLog, 0);
    const results: Record<'full' | 'metadata', Timed[]> = { full: [], metadata: [] };
    for (let n = 1; n <= VIDEOS; n++) {
      results.full.push(await timeOne(v, url, true, stepLog, n));
      results.metadata.push(await timeOne(v, url, false, stepLog, n));
    }
    const summary = (mode: 'full' | 'metadata') => {
      const xs = results[mode];
      const total = median(xs.map((x) => x.totalMs));
      const steps = median(xs.map((x) => x.stepsMs));
      const overhead = median(xs.map((x) => x.totalMs / x.stepsMs - 1));
      return {
        mode,
        videos: xs.length,
        'ffmpeg runs': median(xs.map((x) => x.runs)),
        'request to ingested ms': Math.round(total),
        'ffmpeg steps ms': Math.round(steps),
        'before 1st step ms': Math.round(median(xs.map((x) => x.beforeMs))),
        'after last step ms': Math.round(median(xs.map((x) => x.afterMs))),
        overhead: `${(overhead * 100).toFixed(1)} %`,
        ratio: overhead,
      };
    };
    const full = summary('full');
    const metadata = summary('metadata');
    console.log('\n== overhead (PostgreSQL, this process requests, a worker process copies and ingests; medians) ==');
    printTable([full, metadata].map(({ ratio: _ratio, ...row }) => row));
    console.log('note: 4 s 1280x720 25 fps H.264 + AAC (testsrc2), served over HTTPS by the test range server; the copy is part of the overhead');
    let pass = true;
    for (const [name, r] of [
      ['full ingestion', full.ratio],
      ['metadata-only ingestion', metadata.ratio],
    ] as const) {
      const ok = r <= TARGET_OVERHEAD;
      pass &&= ok;
      console.log(`${`${name} overhead`.padEnd(40)} ${(r * 100).toFixed(1)} %  (target <= ${TARGET_OVERHEAD * 100} %)  ${ok ? 'PASS' : 'FAIL'}`);
    }
    return pass;
  } finally {
    if (worker) await stopChild(worker);
    if (server) await stopChild(server);
    await v?.db.destroy();
    await database.drop();
    cancelRemove();
    if (process.env.BENCH_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
  }
}
