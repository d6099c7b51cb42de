/**
 * Processing benchmark (issue 6, "Benchmarks"): a 30-second 720p H.264 source processed to
 * 1080p H.264 through Vidmill (ProcessingService.start -> the durable job on a Worker -> the
 * ffmpeg engine -> the result stored in platform storage, on SQLite and local disk) against the
 * SAME ffmpeg command run directly (`processingArgs` of the same plan), in the same run,
 * interleaved. Target: Vidmill at most 1.05x the direct command's wall time (median of
 * BENCH_PROCESSING_ROUNDS, default 3). Timed from the start call to the processing stage being
 * DONE (the job's ingestion of its result is not part of processing and is not timed).
 *
 * Also prints how good the processing stage's time-left estimates were over these runs: every
 * estimate after 10 % progress against the time the run actually took from then (median
 * absolute error as a share of the time left; target under 25 %).
 *
 *   npm run bench -- processing
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROCESS_JOB } from '../src/features/processing';
import { findVideo } from '../src/features/videos';
import { probeMedia, resolveMediaBinaries } from '../src/media';
import { buildProcessingPlan, processingArgs, ProcessingOptions } from '../src/processing-planner';
import { etaError, EtaRun, onEtaRun } from '../src/shared/progress-eta';
import { benchWorker, embeddedVidmill, ingestedMaster } from './embedded-vidmill';

const ROUNDS = Number(process.env.BENCH_PROCESSING_ROUNDS ?? 3);
const LIMIT = 1.05;
/** Median absolute error of the time-left estimates after 10 % progress, as a share of the time actually left. */
const ETA_LIMIT = 0.25;
const OPTIONS: ProcessingOptions = { container: 'MP4', encodingConfiguration: { codec: 'H264' }, filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'FULL_HD' } } };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function runDirect(ffmpeg: string, args: string[]): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpeg, args, { stdio: ['ignore', 'ignore', 'ignore'] });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`ffmpeg exited with ${code}`))));
  });
}

export async function processingBenchmark(): Promise<boolean> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-bench-processing-'));
  const bins = await resolveMediaBinaries({});
  const source = path.join(dir, 'source-720p.mp4');
  execFileSync(bins.ffmpeg, [
    '-hide_banner',
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    'testsrc2=size=1280x720:rate=30:duration=30',
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=440:duration=30',
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-pix_fmt',
    'yuv420p',
    '-c:a',
    'aac',
    '-shortest',
    source,
  ]);
  const probe = await probeMedia(bins, source);
  const range = { startMs: 0, endMs: probe.durationMs };

  const vidmill = await embeddedVidmill(dir);
  const { db, s } = vidmill;
  const user = { id: vidmill.userId };
  const masterId = await ingestedMaster(vidmill, source, probe, { name: 'source-720p.mp4', type: 'video/mp4', containerName: 'MPEG-4' });

  const worker = benchWorker(s, [PROCESS_JOB.kind]);

  const plan = buildProcessingPlan(OPTIONS, probe, range);
  const directArgs = processingArgs(plan, source, path.join(dir, `direct${plan.fileExtension}`));
  const direct: number[] = [];
  const throughVidmill: number[] = [];
  // The time-left estimates of the processing runs (src/shared/progress-eta.ts).
  const etaRuns: EtaRun[] = [];
  const offEta = onEtaRun((run) => run.label === 'processing' && etaRuns.push(run));
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      direct.push(await runDirect(bins.ffmpeg, directArgs));
      const t0 = performance.now();
      const video = await s.processing.start(user.id, masterId, { options: OPTIONS as unknown as Record<string, unknown> }, { videoName: `Bench ${round}` });
      for (;;) {
        const v = await findVideo(db, video.id);
        if (v?.processing?.status === 'DONE') break;
        if (v?.processing?.status === 'FAILED') throw new Error(`processing failed: ${v.processing.error?.message}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      throughVidmill.push(performance.now() - t0);
      console.log(`  round ${round}: direct ${(direct.at(-1)! / 1000).toFixed(2)} s, through Vidmill ${(throughVidmill.at(-1)! / 1000).toFixed(2)} s`);
    }
  } finally {
    offEta();
    await worker.stop({ graceMs: 1000 });
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  const ratio = median(throughVidmill) / median(direct);
  const pass = ratio <= LIMIT;
  console.log(
    `\n  30 s 720p H.264 -> 1080p H.264 (${plan.output.width}x${plan.output.height}): direct median ${(median(direct) / 1000).toFixed(2)} s, Vidmill median ${(median(throughVidmill) / 1000).toFixed(2)} s`,
  );
  console.log(`  ratio ${ratio.toFixed(3)}x (target <= ${LIMIT}x): ${pass ? 'PASS' : 'FAIL'}`);
  const eta = etaError(etaRuns);
  const pct = (x?: number) => (x === undefined ? '-' : `${(x * 100).toFixed(1)} %`);
  const etaPass = eta.median !== undefined && eta.median < ETA_LIMIT;
  console.log(
    `\n  time left (etaSeconds) of the ${etaRuns.length} runs: ${eta.reports} estimates after 10 % progress, median absolute error ${pct(eta.median)} of the time actually left (90th percentile ${pct(eta.p90)}; target < ${pct(ETA_LIMIT)}): ${etaPass ? 'PASS' : 'FAIL'}`,
  );
  return pass && etaPass;
}

if (require.main === module) {
  processingBenchmark().then(
    (ok) => process.exit(ok ? 0 : 1),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
