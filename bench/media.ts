/**
 * Benchmark: the ingestion media recipes (thumbnails + full frames + web video, through
 * src/media with progress parsing) against the same ffmpeg commands run directly, on a 60 s
 * 1080p H.264 + AAC file made in the same run (12-s GOPs, keyframes at 0, 12, 24, 36, 48 s, so
 * the thumbnail positions 10, 20, ... 50 s each decode 2 to 10 s of video: a pessimistic case for
 * seeking). Target: recipes at most 1.15x the direct commands.
 *
 * Cost is CPU time (user + system) of the ffmpeg processes plus this Node process's own CPU
 * time while the step runs, so other load on a shared machine does not decide the result; wall
 * times are printed too. Both sides run ffmpeg through the same tiny shell wrapper named
 * `ffmpeg` that appends the children's CPU times (`times`) to a log.
 *
 * Also measures, for information, the ways of taking 5 thumbnails that were considered: one
 * `select` filter pass over the whole file, 5 processes each seeking, and the chosen one
 * process with 5 fast-seeked inputs.
 *
 *   npx tsx bench/media.ts            (or npm run bench -- media)
 *   VIDMILL_BENCH_MEDIA_INPUT=<file> uses an existing video instead of generating one.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeFullFrames, makeThumbnails, makeThumbnailsAndFrames, makeWebVideo, probeMedia, resolveMediaBinaries } from '../src/media';
import { FULL_FRAME_FILTER, FULL_FRAME_JPEG_ENCODE, multiStillsArgs, stillPositions, stillsArgs, THUMBNAIL_ENCODE, thumbnailFilter, webVideoArgs } from '../src/media/recipes';
import { mediaArgs } from '../src/media/runner';
import type { Benchmark, Result } from './lib';

const ROUNDS = Number(process.env.VIDMILL_BENCH_MEDIA_ROUNDS ?? 2);

function ffmpegDirect(bin: string, args: string[]): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`ffmpeg exited with ${code}: ${args.join(' ')}`))));
  });
}

interface Cost {
  wallMs: number;
  cpuMs: number;
}

/** A shell wrapper named ffmpeg that runs the real one and appends its CPU time (ms) to `log`. */
function cpuLoggingWrapper(dir: string, ffmpeg: string): { bin: string; log: string } {
  const bin = path.join(dir, 'wrap', 'ffmpeg');
  const log = path.join(dir, 'cpu.log');
  mkdirSync(path.dirname(bin), { recursive: true });
  writeFileSync(bin, `#!/bin/sh\n"${ffmpeg}" "$@"\nrc=$?\ntimes >> "${log}"\nexit $rc\n`);
  chmodSync(bin, 0o755);
  writeFileSync(log, '');
  return { bin, log };
}

/** Children CPU time from the log's `times` outputs (second line of each: children user, system). */
function loggedChildCpuMs(log: string): number {
  const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  let ms = 0;
  for (let i = 1; i < lines.length; i += 2) {
    for (const m of lines[i].matchAll(/(\d+)m([\d.]+)s/g)) ms += (Number(m[1]) * 60 + Number(m[2])) * 1000;
  }
  return ms;
}

async function measure(log: string, fn: () => Promise<unknown>): Promise<Cost> {
  writeFileSync(log, '');
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wallMs = performance.now() - t0;
  const own = process.cpuUsage(cpu0);
  return { wallMs, cpuMs: loggedChildCpuMs(log) + (own.user + own.system) / 1000 };
}

export async function runMediaBenchmark(): Promise<Result> {
  const real = await resolveMediaBinaries({});
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-bench-media-'));
  const wrapper = cpuLoggingWrapper(dir, real.ffmpeg);
  const bins = { ...real, ffmpeg: wrapper.bin };
  try {
    let input = process.env.VIDMILL_BENCH_MEDIA_INPUT;
    let generateMs = 0;
    if (!input) {
      input = path.join(dir, 'source-1080p-60s.mp4');
      generateMs = await ffmpegDirect(real.ffmpeg, [
        '-hide_banner', '-loglevel', 'error', '-nostdin', '-y',
        '-f', 'lavfi', '-i', 'testsrc2=size=1920x1080:rate=25:duration=60',
        '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=60',
        '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '20', '-g', '300', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '128k', '-shortest', input,
      ]);
    }
    const probe = await probeMedia(bins, input);
    const durationMs = probe.durationMs;
    const positions = stillPositions(durationMs, 5);
    const out = (name: string) => path.join(dir, name);

    // The direct commands: exactly what the recipes run, minus the progress reporting.
    const direct = {
      thumbnails: mediaArgs(bins.ffmpeg, stillsArgs(input, positions.map((p, i) => ({ positionMs: p, path: out(`d-thumb-${i}.jpg`) })), thumbnailFilter(320), THUMBNAIL_ENCODE)),
      frames: mediaArgs(bins.ffmpeg, stillsArgs(input, positions.map((p, i) => ({ positionMs: p, path: out(`d-frame-${i}.jpg`) })), FULL_FRAME_FILTER, FULL_FRAME_JPEG_ENCODE)),
      web: mediaArgs(bins.ffmpeg, webVideoArgs(input, out('d-web.mp4'), { hasAudio: probe.hasAudio })),
      stills: mediaArgs(
        bins.ffmpeg,
        multiStillsArgs(input, positions.map((p, i) => ({
          positionMs: p,
          outputs: [
            { path: out(`d-s-thumb-${i}.jpg`), filter: thumbnailFilter(320), encode: THUMBNAIL_ENCODE },
            { path: out(`d-s-frame-${i}.jpg`), filter: FULL_FRAME_FILTER, encode: FULL_FRAME_JPEG_ENCODE },
          ],
        }))),
      ),
    };
    const recipes = {
      thumbnails: () => makeThumbnails(bins, input!, out('r-thumbs'), { durationMs }),
      frames: () => makeFullFrames(bins, input!, out('r-frames'), { durationMs }),
      web: () => makeWebVideo(bins, input!, out('r-web.mp4'), { durationMs, hasAudio: probe.hasAudio, onProgress: () => undefined }),
      stills: () => makeThumbnailsAndFrames(bins, input!, out('r-stills'), { durationMs }),
    };

    type Step = 'thumbnails' | 'frames' | 'web' | 'stills';
    const inf = (): Cost => ({ wallMs: Infinity, cpuMs: Infinity });
    const none = (): Record<Step, Cost> => ({ thumbnails: inf(), frames: inf(), web: inf(), stills: inf() });
    const best = { direct: none(), recipe: none() };
    for (let round = 0; round < ROUNDS; round++) {
      for (const step of ['thumbnails', 'frames', 'stills', 'web'] as const) {
        // Alternate which side goes first, so neither always runs on a warmer cache.
        const sides = round % 2 === 0 ? (['direct', 'recipe'] as const) : (['recipe', 'direct'] as const);
        for (const side of sides) {
          const cost = await measure(wrapper.log, () => (side === 'direct' ? ffmpegDirect(bins.ffmpeg, direct[step]) : recipes[step]()));
          const b = best[side][step];
          best[side][step] = { wallMs: Math.min(b.wallMs, cost.wallMs), cpuMs: Math.min(b.cpuMs, cost.cpuMs) };
        }
      }
    }
    const total = (s: 'direct' | 'recipe', k: keyof Cost) => best[s].thumbnails[k] + best[s].frames[k] + best[s].web[k];

    // Thumbnail strategies considered (information).
    const frameNumbers = positions.map((p) => Math.round((p / 1000) * probe.fps));
    const selectPass = await measure(wrapper.log, () => ffmpegDirect(bins.ffmpeg, [
      '-hide_banner', '-loglevel', 'error', '-nostdin', '-y', '-i', input,
      '-vf', `select='${frameNumbers.map((n) => `eq(n\\,${n})`).join('+')}',${thumbnailFilter(320)}`, '-vsync', '0', '-q:v', '3', out('s-thumb-%d.jpg'),
    ]));
    const separate = await measure(wrapper.log, async () => {
      for (const [i, p] of positions.entries()) {
        await ffmpegDirect(bins.ffmpeg, mediaArgs(bins.ffmpeg, stillsArgs(input!, [{ positionMs: p, path: out(`p-thumb-${i}.jpg`) }], thumbnailFilter(320), THUMBNAIL_ENCODE)));
      }
    });

    const s = (ms: number) => (ms / 1000).toFixed(2);
    const row = (step: string, d: Cost, r?: Cost) => ({
      step,
      'direct cpu s': s(d.cpuMs),
      'recipe cpu s': r ? s(r.cpuMs) : '-',
      'direct wall s': s(d.wallMs),
      'recipe wall s': r ? s(r.wallMs) : '-',
    });
    const totals = (side: 'direct' | 'recipe'): Cost => ({ wallMs: total(side, 'wallMs'), cpuMs: total(side, 'cpuMs') });
    return {
      table: [
        row('thumbnails (5, 320 wide)', best.direct.thumbnails, best.recipe.thumbnails),
        row('full frames (5, JPEG)', best.direct.frames, best.recipe.frames),
        row('web video (720p H.264/AAC)', best.direct.web, best.recipe.web),
        row('ingestion total', totals('direct'), totals('recipe')),
        row('thumbnails + frames, one run', best.direct.stills, best.recipe.stills),
        row('thumbnails: one select pass', selectPass),
        row('thumbnails: 5 seeking processes', separate),
      ],
      checks: [
        { name: 'ingestion recipes / direct (CPU)', ratio: total('recipe', 'cpuMs') / total('direct', 'cpuMs'), kind: 'max', limit: 1.15 },
        { name: 'ingestion recipes / direct (wall)', ratio: total('recipe', 'wallMs') / total('direct', 'wallMs'), kind: 'max', limit: 1.15, info: true },
        {
          name: 'stills one run / separate (CPU)',
          ratio: best.recipe.stills.cpuMs / (best.recipe.thumbnails.cpuMs + best.recipe.frames.cpuMs),
          kind: 'max',
          limit: 1,
          info: true,
        },
        { name: 'thumbnails: select pass / chosen (CPU)', ratio: selectPass.cpuMs / best.direct.thumbnails.cpuMs, kind: 'min', limit: 1, info: true },
        { name: 'thumbnails: 5 processes / chosen (CPU)', ratio: separate.cpuMs / best.direct.thumbnails.cpuMs, kind: 'min', limit: 1, info: true },
      ],
      notes: [
        `input: ${process.env.VIDMILL_BENCH_MEDIA_INPUT ?? `generated 60 s 1920x1080 H.264 + AAC (${s(generateMs)} s)`}; ffmpeg ${real.ffmpegVersion} (${real.source.ffmpeg}); ${os.cpus().length} cores`,
        `best of ${ROUNDS} rounds per step and side (CPU and wall time each), sides alternating; load average at the end ${os.loadavg()[0].toFixed(1)}`,
      ],
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const mediaBenchmark: Benchmark = {
  name: 'media',
  description: 'ingestion recipes (thumbnails, full frames, web video) vs the same ffmpeg commands run directly, 60 s 1080p',
  run: runMediaBenchmark,
};

if (require.main === module) {
  void import('./lib').then(async ({ report }) => {
    const ok = report('media', await runMediaBenchmark());
    process.exit(ok ? 0 : 1);
  });
}
