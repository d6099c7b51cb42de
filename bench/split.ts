/**
 * Split-and-stitch benchmark (issue 16, "Segmented processing"): a 4-minute 1080p25 H.264 source
 * (testsrc2 and a sine tone, generated once; long GOP of 250 frames) processed to H.264 MP4 by real
 * worker processes (`npm run worker`'s `node dist/src/main.js`, VIDMILL_ROLE=worker) on one
 * PostgreSQL database and one local-disk data directory, each worker pinned to a core of its own
 * (taskset) with ffmpeg limited to one thread (VIDMILL_FFMPEG_THREADS=1) and one job at a time
 * (VIDMILL_WORKER_CONCURRENCY=1, VIDMILL_WORKER_POLL_MS=250), so N workers stand for
 * N machines on this box. Three runs, in this order, each timed from the `start` call to the
 * processing stage being DONE (the ingestion of the result is not timed, but is let finish before
 * the workers stop):
 *
 *   1. unsplit on 1 worker (VIDMILL_SEGMENT_SECONDS=0): the baseline T1;
 *   2. split on 1 worker (VIDMILL_SEGMENT_SECONDS=BENCH_SPLIT_SEGMENT_SECONDS): the splitting overhead;
 *   3. split on 2 workers (cores 0 and 1): the speed-up.
 *
 * Targets: split on 1 worker at most 1.05x T1; split on 2 workers at most 1.15x T1 / 2.
 * Also prints when each part (segment, audio pass, join) ran and on which worker, the workers'
 * warnings and errors, the outputs' frame counts and stream durations, whether the split outputs of
 * 1 and 2 workers have the same video stream, and the PSNR of the split output against the
 * unsplit one: min and mean over the frames within 3 frames of each seam and over every frame (no
 * target: both are lossy encodes of the same frames; a lost or doubled frame at a seam would show
 * as a collapse from there on).
 *
 * The bench process only creates the user, the stored master and the processing (in-process
 * services on the same database and blob folder, no job handlers); the workers do all the jobs.
 *
 *   npm run bench -- split
 *
 * Knobs (env): BENCH_SPLIT_SECONDS (source length, 240), BENCH_SPLIT_SEGMENT_SECONDS (60),
 * BENCH_SPLIT_PRESET (x264 preset of the workers, veryfast: the encoder's share of the work closer to an installation's default medium than ultrafast's; ultrafast makes the audio pass and the join a larger share), VIDMILL_TEST_PG_URL (an admin
 * connection to the PostgreSQL server, postgres://postgres@127.0.0.1:5432/test; a database of its
 * own is created and dropped), BENCH_KEEP=1 (keep the temp dir: worker logs, outputs).
 */
import { ChildProcess, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../src/config';
import type { Services } from '../src/composition';
import type { Db } from '../src/db/database';
import { JOIN_JOB, PROCESS_JOB, SEGMENT_JOB } from '../src/features/processing';
import { findVideo } from '../src/features/videos';
import { MediaBinaries, probeMedia, ProbeResult, resolveMediaBinaries } from '../src/media';
import { buildProcessingPlan, ProcessingOptions, X26xPreset } from '../src/processing-planner';
import { EmbeddedVidmill, embeddedVidmill, ingestedMaster } from './embedded-vidmill';
import { buildDist, Check, cpuCount, hasTaskset, installCleanupHandlers, onExit, printTable, report, sleep, startWorkerProcess, stopChild, untilQueueIdle } from './lib';

const SECONDS = Number(process.env.BENCH_SPLIT_SECONDS || 240);
const SEGMENT_SECONDS = Number(process.env.BENCH_SPLIT_SEGMENT_SECONDS || 60);
const PRESET = (process.env.BENCH_SPLIT_PRESET || 'veryfast') as X26xPreset;
const PG_ADMIN_URL = process.env.VIDMILL_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const FPS = 25;
const OVERHEAD_LIMIT = 1.05;
const SPEEDUP_LIMIT = 1.15;
/** Frames on each side of a seam whose PSNR is reported. */
const SEAM_FRAMES = 3;
const OPTIONS: ProcessingOptions = { container: 'MP4', encodingConfiguration: { codec: 'H264' } };
/** Longest a run may take (generous: a one-thread encode of the whole source, several times over). */
const RUN_TIMEOUT_MS = Math.max(600_000, SECONDS * 5_000);
const POLL_MS = 100;

interface Run {
  name: string;
  workers: number;
  segmentSeconds: number;
}

const RUNS: Run[] = [
  { name: 'unsplit, 1 worker', workers: 1, segmentSeconds: 0 },
  { name: 'split, 1 worker', workers: 1, segmentSeconds: SEGMENT_SECONDS },
  { name: 'split, 2 workers', workers: 2, segmentSeconds: SEGMENT_SECONDS },
];

/** One job of a run as the bench saw it: queued (created), first seen running (by whom), done. */
interface JobTiming {
  id: string;
  kind: string;
  part?: number;
  queuedMs: number;
  startedMs?: number;
  doneMs?: number;
  worker?: number;
  attempts: number;
  status: string;
  lastError?: string;
}

interface RunResult {
  run: Run;
  wallMs: number;
  videoId: string;
  jobs: JobTiming[];
  /** processing_segments rows of the video left once the queue is idle (the join removes them). */
  segmentRowsLeft: number;
  workerLogs: string[];
}

interface Worker {
  child: ChildProcess;
  core: number;
  log: string;
}

// ---------------------------------------------------------------------------------------------
// Source, database

function makeSource(ffmpeg: string, file: string): void {
  // prettier-ignore
  execFileSync(ffmpeg, [
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', `testsrc2=size=1920x1080:rate=${FPS}:duration=${SECONDS}`,
    '-f', 'lavfi', '-i', `sine=frequency=440:duration=${SECONDS}`,
    '-c:v', 'libx264', '-preset', 'veryfast', '-g', '250', '-pix_fmt', 'yuv420p',
    '-c:a', 'aac', '-shortest', file,
  ]);
}

function psql(sql: string): void {
  execFileSync('psql', ['-q', '-v', 'ON_ERROR_STOP=1', '-d', PG_ADMIN_URL, '-c', sql], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, PGOPTIONS: '--client-min-messages=warning' },
  });
}

/** A fresh database on the admin connection's server; returns its URL and a synchronous drop. */
function createDatabase(): { url: string; drop: () => void } {
  const name = `vidmill_bench_split_${process.pid}`;
  psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  psql(`CREATE DATABASE ${name}`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

// ---------------------------------------------------------------------------------------------
// Workers

function processingSettings(segmentSeconds: number): Config['processing'] {
  return { segmentSeconds, threads: 1, encoderPreset: PRESET };
}

/** N worker processes (`npm run worker`'s command), worker i on core i, ready when their /metrics answer. */
async function startWorkers(n: number, env: NodeJS.ProcessEnv, logDir: string, tag: string): Promise<Worker[]> {
  const workers: Worker[] = [];
  for (let i = 0; i < n; i++) {
    const core = i % cpuCount();
    const log = path.join(logDir, `${tag}-worker-${i}.log`);
    workers.push({ child: await startWorkerProcess(env, log, core), core, log });
  }
  return workers;
}

/** A worker's log (warn and above), one short line per distinct message with its count. */
function warnLines(log: string): string {
  const counts = new Map<string, number>();
  for (const line of readFileSync(log, 'utf8').split('\n').filter(Boolean)) {
    let text = line;
    try {
      const e = JSON.parse(line) as { level?: number; msg?: string; task?: string; err?: { message?: string } };
      text = `level ${e.level}: ${e.msg}${e.task ? ` (${e.task})` : ''}${e.err?.message ? `: ${e.err.message}` : ''}`;
    } catch {
      /* not JSON: as written */
    }
    text = text.length > 400 ? `${text.slice(0, 400)}...` : text;
    counts.set(text, (counts.get(text) ?? 0) + 1);
  }
  return [...counts].map(([text, n]) => `${n}x ${text}`).join('\n');
}

// ---------------------------------------------------------------------------------------------
// One run

const JOB_KINDS = [PROCESS_JOB.kind, SEGMENT_JOB.kind, JOIN_JOB.kind];

/** The run's jobs as of now, merged into `seen` (first time running, by which worker; when done). */
async function observeJobs(db: Db, videoId: string, t0: number, workers: Worker[], seen: Map<string, JobTiming>): Promise<void> {
  const rows = await db('jobs').whereIn('kind', JOB_KINDS).andWhere('payload', 'like', `%${videoId}%`);
  const now = Date.now() - t0;
  for (const r of rows) {
    const job = seen.get(r.id) ?? {
      id: r.id as string,
      kind: r.kind as string,
      part: (JSON.parse(r.payload) as { part?: number }).part,
      queuedMs: new Date(r.created_at).getTime() - t0,
      attempts: 0,
      status: '',
    };
    if (r.status === 'running' && job.startedMs === undefined) {
      job.startedMs = now;
      const pid = Number(/:(\d+)#/.exec(String(r.lease_owner))?.[1]);
      const index = workers.findIndex((w) => w.child.pid === pid);
      if (index >= 0) job.worker = index;
    }
    if ((r.status === 'done' || r.status === 'failed') && job.doneMs === undefined) job.doneMs = new Date(r.updated_at).getTime() - t0;
    job.status = r.status;
    job.attempts = Number(r.attempts);
    job.lastError = r.last_error ?? undefined;
    seen.set(r.id, job);
  }
}

/** Starts the processing and polls until its stage is DONE; returns the wall time from the start call. */
async function processOnce(s: Services, db: Db, userId: string, masterId: string, workers: Worker[], name: string) {
  const seen = new Map<string, JobTiming>();
  const t0 = Date.now();
  const started = performance.now();
  const video = await s.processing.start(userId, masterId, { options: OPTIONS as unknown as Record<string, unknown> }, { videoName: name });
  for (;;) {
    const v = await findVideo(db, video.id);
    if (v?.processing?.status === 'DONE') break;
    if (v?.processing?.status === 'FAILED') throw new Error(`processing failed (${name}): ${v.processing.error?.code}: ${v.processing.error?.message}`);
    if (performance.now() - started > RUN_TIMEOUT_MS) throw new Error(`processing not DONE after ${RUN_TIMEOUT_MS} ms (${name})`);
    for (const w of workers) if (w.child.exitCode !== null || w.child.signalCode !== null) throw new Error(`a worker exited during ${name}: ${warnLines(w.log)}`);
    await observeJobs(db, video.id, t0, workers, seen);
    await sleep(POLL_MS);
  }
  const wallMs = performance.now() - started;
  // The jobs once the queue is idle (the join finishes after marking the stage DONE).
  const jobs = async () => {
    await observeJobs(db, video.id, t0, workers, seen);
    return [...seen.values()].sort((a, b) => a.queuedMs - b.queuedMs || (a.part ?? 0) - (b.part ?? 0));
  };
  return { wallMs, videoId: video.id, jobs };
}

async function runOnce(run: Run, v: EmbeddedVidmill, masterId: string, workerEnv: NodeJS.ProcessEnv, dir: string, index: number): Promise<RunResult> {
  const s = v.servicesWith({ processing: processingSettings(run.segmentSeconds) });
  const env = { ...workerEnv, VIDMILL_SEGMENT_SECONDS: String(run.segmentSeconds) };
  const workers = await startWorkers(run.workers, env, dir, `run${index + 1}`);
  try {
    const { wallMs, videoId, jobs } = await processOnce(s, v.db, v.userId, masterId, workers, run.name);
    console.log(`  ${run.name}: ${(wallMs / 1000).toFixed(2)} s`);
    await untilQueueIdle(v.db);
    const segmentRowsLeft = Number((await v.db('processing_segments').where({ video_id: videoId }).count({ n: '*' }).first())?.n);
    return { run, wallMs, videoId, jobs: await jobs(), segmentRowsLeft, workerLogs: workers.map((w) => warnLines(w.log)) };
  } finally {
    await Promise.all(workers.map((w) => stopChild(w.child, 40_000)));
  }
}

// ---------------------------------------------------------------------------------------------
// Seams

/** The output's file on local disk (the processed video's blob). */
async function outputFile(v: EmbeddedVidmill, videoId: string): Promise<string> {
  const video = await findVideo(v.db, videoId);
  const file = video?.blobKey ? v.blobs.localPath(video.blobKey) : undefined;
  if (!file) throw new Error(`video ${videoId} has no stored file`);
  return file;
}

/** The video's frame count and each stream's duration (s) as the container states them: `6000 frames, video 240.00 s, audio 240.00 s`. */
function streamFacts(bins: MediaBinaries, file: string): string {
  const out = execFileSync(bins.ffprobe, ['-v', 'error', '-count_packets', '-show_entries', 'stream=codec_type,duration,nb_read_packets', '-of', 'json', file], { encoding: 'utf8' });
  const streams = (JSON.parse(out) as { streams: { codec_type: string; duration?: string; nb_read_packets?: string }[] }).streams;
  const video = streams.find((st) => st.codec_type === 'video');
  const durations = streams.map((st) => `${st.codec_type} ${Number(st.duration).toFixed(2)} s`);
  return [`${video?.nb_read_packets ?? '?'} frames`, ...durations].join(', ');
}

/** MD5 of the video stream's packets (a stream copy): equal for the same encoded frames. */
function videoMd5(bins: MediaBinaries, file: string): string {
  return execFileSync(bins.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-i', file, '-map', '0:v:0', '-c', 'copy', '-f', 'md5', '-'], { encoding: 'utf8' }).trim();
}

/** Per-frame PSNR (average over the planes, dB; Infinity for identical frames) of `a` against `b`, frame 0 first. */
function framePsnr(bins: MediaBinaries, a: string, b: string, dir: string): number[] {
  // The stats file is named relative to the working directory: no path escaping inside the filter graph.
  execFileSync(bins.ffmpeg, ['-hide_banner', '-loglevel', 'error', '-i', a, '-i', b, '-lavfi', '[0:v][1:v]psnr=stats_file=psnr.log', '-f', 'null', '-'], { cwd: dir });
  return readFileSync(path.join(dir, 'psnr.log'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const m = /psnr_avg:(\S+)/.exec(line);
      return m?.[1] === 'inf' ? Infinity : Number(m?.[1]);
    });
}

/** The first frame of each segment but the first: where the split output's parts meet. */
function seamFrames(probe: ProbeResult): number[] {
  const plan = buildProcessingPlan(OPTIONS, probe, { startMs: 0, endMs: probe.durationMs }, { segmentSeconds: SEGMENT_SECONDS, encoderPreset: PRESET, threads: 1 });
  return (plan.segmented?.segments ?? []).slice(1).map((s) => Math.round(s.startS * FPS));
}

const db1 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : x > 0 ? 'inf' : 'n/a');
/** Mean over the frames that differ (identical frames have an infinite PSNR), and how many were identical. */
function mean(xs: number[]): { db: number; identical: number } {
  const finite = xs.filter(Number.isFinite);
  return { db: finite.length ? finite.reduce((a, b) => a + b, 0) / finite.length : Infinity, identical: xs.length - finite.length };
}
const meanText = (xs: number[]) => {
  const m = mean(xs);
  return `${db1(m.db)} dB${m.identical ? ` (${m.identical} identical left out)` : ''}`;
};

/** Per seam: the PSNR of the frames within SEAM_FRAMES of it; and min and mean over all those frames. */
function seamReport(psnr: number[], seams: number[]) {
  const windows = seams.map((seam) => psnr.slice(Math.max(0, seam - SEAM_FRAMES), seam + SEAM_FRAMES + 1));
  const rows = seams.map((seam, i) => ({
    seam: `frame ${seam} (${(seam / FPS).toFixed(2)} s)`,
    'min dB': db1(Math.min(...windows[i]!)),
    mean: meanText(windows[i]!),
    [`frames -${SEAM_FRAMES}..+${SEAM_FRAMES} (dB)`]: windows[i]!.map(db1).join(' '),
  }));
  const all = windows.flat();
  return { rows, min: Math.min(...all), mean: meanText(all) };
}

/** The outputs of the three runs compared: the seams' PSNR printed; frame counts, PSNR and sameness as report notes. */
async function compareOutputs(v: EmbeddedVidmill, bins: MediaBinaries, probe: ProbeResult, results: RunResult[], dir: string): Promise<string[]> {
  const [unsplit, split1, split2] = await Promise.all(results.map((r) => outputFile(v, r.videoId)));
  const seams = seamFrames(probe);
  const psnr = framePsnr(bins, split1!, unsplit!, dir);
  const seam = seamReport(psnr, seams);
  console.log(`\n  seams of the split output (1 worker) against the unsplit output, PSNR (dB):`);
  printTable(seam.rows);
  const same = videoMd5(bins, split1!) === videoMd5(bins, split2!);
  return [
    `outputs: unsplit ${streamFacts(bins, unsplit!)}; split (1 worker) ${streamFacts(bins, split1!)}; split (2 workers) ${streamFacts(bins, split2!)}`,
    `PSNR split (1 worker) vs unsplit: within ${SEAM_FRAMES} frames of the ${seams.length} seams min ${db1(seam.min)} dB, mean ${seam.mean}; over all ${psnr.length} frames min ${db1(Math.min(...psnr))} dB, mean ${meanText(psnr)}`,
    `video stream of split on 2 workers ${same ? 'identical to' : 'DIFFERENT from'} split on 1 worker (MD5 of the packets)`,
  ];
}

// ---------------------------------------------------------------------------------------------
// Report

const sec = (ms?: number) => (ms === undefined ? '-' : (ms / 1000).toFixed(1));

function printJobs(r: RunResult): void {
  console.log(`\n  ${r.run.name}: jobs (s from the start call; "started" as first seen running, polled every ${POLL_MS} ms)`);
  printTable(
    r.jobs.map((j) => ({
      job: j.kind,
      part: j.part ?? '-',
      worker: j.worker ?? '?',
      queued: sec(j.queuedMs),
      started: sec(j.startedMs),
      done: sec(j.doneMs),
      'ran s': j.startedMs !== undefined && j.doneMs !== undefined ? sec(j.doneMs - j.startedMs) : '-',
      attempts: j.attempts,
      status: j.status,
    })),
  );
  for (const j of r.jobs) if (j.lastError) console.log(`  ${j.kind} ${j.part ?? ''}: last error: ${j.lastError}`);
  if (r.segmentRowsLeft) console.log(`  ${r.segmentRowsLeft} processing_segments rows of the video left after the join`);
  r.workerLogs.forEach((text, i) => text && console.log(`  worker ${i} log (warn and above, first lines):\n${text.replace(/^/gm, '    ')}`));
}

export async function splitBenchmark(): Promise<boolean> {
  installCleanupHandlers();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-bench-split-'));
  const dataDir = path.join(dir, 'data');
  mkdirSync(dataDir);
  const removeTmp = () => process.env.BENCH_KEEP !== '1' && rmSync(dir, { recursive: true, force: true });
  const cancelRemove = onExit(removeTmp);
  const database = createDatabase();
  const cancelDrop = onExit(database.drop);
  let v: EmbeddedVidmill | undefined;
  try {
    buildDist();
    const bins = await resolveMediaBinaries({});
    const source = path.join(dir, 'source-1080p.mp4');
    console.log(`generating the ${SECONDS} s 1080p${FPS} source ...`);
    makeSource(bins.ffmpeg, source);
    const probe = await probeMedia(bins, source);
    v = await embeddedVidmill(dir, { database: { client: 'pg', connectionString: database.url }, blobDir: path.join(dataDir, 'blobs') });
    const masterId = await ingestedMaster(v, source, probe, { name: 'source-1080p.mp4', type: 'video/mp4', containerName: 'MPEG-4' });
    const workerEnv: NodeJS.ProcessEnv = {
      NODE_ENV: 'production',
      VIDMILL_DATA_DIR: dataDir,
      VIDMILL_DATABASE_URL: database.url,
      VIDMILL_MASTER_KEY: v.masterKey.toString('base64'),
      VIDMILL_HOST: '127.0.0.1',
      VIDMILL_LOG_LEVEL: 'warn',
      VIDMILL_FFMPEG_THREADS: '1',
      // One job at a time per one-core worker (a machine); other processes' jobs found within 250 ms.
      VIDMILL_WORKER_CONCURRENCY: '1',
      VIDMILL_WORKER_POLL_MS: '250',
      VIDMILL_ENCODER_PRESET: PRESET,
    };
    console.log(
      `runs: ${SECONDS} s source, segments of ${SEGMENT_SECONDS} s, x264 ${PRESET}, 1 ffmpeg thread per worker${hasTaskset() ? ', workers pinned with taskset' : ' (no taskset: workers NOT pinned)'}`,
    );
    const results: RunResult[] = [];
    for (const [i, run] of RUNS.entries()) results.push(await runOnce(run, v, masterId, workerEnv, dir, i));
    results.forEach(printJobs);

    const outputs = await compareOutputs(v, bins, probe, results, dir);
    const [unsplit, split1, split2] = results.map((r) => r.wallMs) as [number, number, number];

    const checks: Check[] = [
      { name: 'split 1 worker / unsplit', ratio: split1 / unsplit, kind: 'max', limit: OVERHEAD_LIMIT },
      { name: 'split 2 workers / (unsplit / 2)', ratio: split2 / (unsplit / 2), kind: 'max', limit: SPEEDUP_LIMIT },
    ];
    return report('split', {
      table: results.map((r) => ({ run: r.run.name, workers: r.run.workers, 'segment s': r.run.segmentSeconds || '-', 'wall s': (r.wallMs / 1000).toFixed(2), jobs: r.jobs.length })),
      checks,
      notes: [
        `${SECONDS} s 1920x1080 ${FPS} fps source (testsrc2, x264 veryfast, GOP 250, AAC) -> H.264 MP4, x264 ${PRESET}, VIDMILL_FFMPEG_THREADS=1, one core per worker; PostgreSQL, local disk`,
        ...outputs,
      ],
    });
  } finally {
    await v?.db.destroy();
    database.drop();
    cancelDrop();
    removeTmp();
    cancelRemove();
  }
}

if (require.main === module) {
  splitBenchmark().then(
    (ok) => process.exit(ok ? 0 : 1),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
