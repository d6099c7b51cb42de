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
 * The free clip (`cutClip`: 10 s to the frame, re-encoding only what a stream copy cannot cut)
 * against a plain stream copy of the same window (what the clip was before: it starts at the
 * keyframe before the window), as a CPU ratio, on two sources: the 60 s file above, whose window
 * 25..35 s holds no keyframe (12-s GOPs: the whole window is re-encoded, the worst case), and a
 * 40 s 1080p file with x264's default GOP of 250 frames (10 s; window 15..25 s: 5 s re-encoded up
 * to the keyframe at 20 s, the rest copied). ffprobe runs of the clip count too.
 *
 *   npx tsx bench/media.ts            (or npm run bench -- media)
 *   VIDMILL_BENCH_MEDIA_INPUT=<file> uses an existing video instead of generating one.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clipContainer, clipWindow, cutClip, makeFullFrames, makeThumbnails, makeThumbnailsAndFrames, makeWebVideo, probeMedia, resolveMediaBinaries, type ClipResult } from '../src/media';
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

/** A shell wrapper with the binary's name that runs the real one and appends its CPU time (ms) to `log`. */
function cpuLoggingWrapper(dir: string, real: string, name = 'ffmpeg'): { bin: string; log: string } {
  const bin = path.join(dir, 'wrap', name);
  const log = path.join(dir, 'cpu.log');
  mkdirSync(path.dirname(bin), { recursive: true });
  writeFileSync(bin, `#!/bin/sh\n"${real}" "$@"\nrc=$?\ntimes >> "${log}"\nexit $rc\n`);
  chmodSync(bin, 0o755);
  writeFileSync(log, '');
  return { bin, log };
}

/** Children CPU time from the log's `times` outputs (second line of each: children user, system). */
function loggedChildCpuMs(log: string): number {
  const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  let ms = 0;
  for (let i = 1; i < lines.length; i += 2) {
    for (const m of lines[i]!.matchAll(/(\d+)m([\d.]+)s/g)) ms += (Number(m[1]) * 60 + Number(m[2])) * 1000;
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
  // The clip's ffprobe runs (packet lists) count too; same log.
  const clipBins = { ...bins, ffprobe: cpuLoggingWrapper(dir, real.ffprobe, 'ffprobe').bin };
  try {
    let input = process.env.VIDMILL_BENCH_MEDIA_INPUT;
    let generateMs = 0;
    if (!input) {
      input = path.join(dir, 'source-1080p-60s.mp4');
      generateMs = await ffmpegDirect(real.ffmpeg, [
        '-hide_banner',
        '-loglevel',
        'error',
        '-nostdin',
        '-y',
        '-f',
        'lavfi',
        '-i',
        'testsrc2=size=1920x1080:rate=25:duration=60',
        '-f',
        'lavfi',
        '-i',
        'sine=frequency=440:sample_rate=48000:duration=60',
        '-c:v',
        'libx264',
        '-preset',
        'veryfast',
        '-crf',
        '20',
        '-g',
        '300',
        '-pix_fmt',
        'yuv420p',
        '-c:a',
        'aac',
        '-b:a',
        '128k',
        '-shortest',
        input,
      ]);
    }
    const probe = await probeMedia(bins, input);
    const durationMs = probe.durationMs;
    const positions = stillPositions(durationMs, 5);
    const out = (name: string) => path.join(dir, name);

    // The direct commands: exactly what the recipes run, minus the progress reporting.
    const direct = {
      thumbnails: mediaArgs(
        bins.ffmpeg,
        stillsArgs(
          input,
          positions.map((p, i) => ({ positionMs: p, path: out(`d-thumb-${i}.jpg`) })),
          thumbnailFilter(320),
          THUMBNAIL_ENCODE,
        ),
      ),
      frames: mediaArgs(
        bins.ffmpeg,
        stillsArgs(
          input,
          positions.map((p, i) => ({ positionMs: p, path: out(`d-frame-${i}.jpg`) })),
          FULL_FRAME_FILTER,
          FULL_FRAME_JPEG_ENCODE,
        ),
      ),
      web: mediaArgs(bins.ffmpeg, webVideoArgs(input, out('d-web.mp4'), { hasAudio: probe.hasAudio })),
      stills: mediaArgs(
        bins.ffmpeg,
        multiStillsArgs(
          input,
          positions.map((p, i) => ({
            positionMs: p,
            outputs: [
              { path: out(`d-s-thumb-${i}.jpg`), filter: thumbnailFilter(320), encode: THUMBNAIL_ENCODE },
              { path: out(`d-s-frame-${i}.jpg`), filter: FULL_FRAME_FILTER, encode: FULL_FRAME_JPEG_ENCODE },
            ],
          })),
        ),
      ),
    };
    const recipes = {
      thumbnails: () => makeThumbnails(bins, input, out('r-thumbs'), { durationMs }),
      frames: () => makeFullFrames(bins, input, out('r-frames'), { durationMs }),
      web: () => makeWebVideo(bins, input, out('r-web.mp4'), { durationMs, hasAudio: probe.hasAudio, onProgress: () => undefined }),
      stills: () => makeThumbnailsAndFrames(bins, input, out('r-stills'), { durationMs }),
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
    const selectPass = await measure(wrapper.log, () =>
      ffmpegDirect(bins.ffmpeg, [
        '-hide_banner',
        '-loglevel',
        'error',
        '-nostdin',
        '-y',
        '-i',
        input,
        '-vf',
        `select='${frameNumbers.map((n) => `eq(n\\,${n})`).join('+')}',${thumbnailFilter(320)}`,
        '-vsync',
        '0',
        '-q:v',
        '3',
        out('s-thumb-%d.jpg'),
      ]),
    );
    const separate = await measure(wrapper.log, async () => {
      for (const [i, p] of positions.entries()) {
        await ffmpegDirect(bins.ffmpeg, mediaArgs(bins.ffmpeg, stillsArgs(input, [{ positionMs: p, path: out(`p-thumb-${i}.jpg`) }], thumbnailFilter(320), THUMBNAIL_ENCODE)));
      }
    });

    // The free clip against a plain stream copy of the same window (one run each: the clip of
    // the 12-s GOP file re-encodes 10 s of 1080p).
    const gop10 = path.join(dir, 'source-1080p-40s-gop250.mp4');
    await ffmpegDirect(real.ffmpeg, [
      '-hide_banner',
      '-loglevel',
      'error',
      '-nostdin',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=1920x1080:rate=25:duration=40',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=48000:duration=40',
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-crf',
      '20',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      '-b:a',
      '128k',
      '-shortest',
      gop10,
    ]);
    const clipCost = async (file: string, tag: string) => {
      const p = await probeMedia(bins, file);
      const window = clipWindow(p.durationMs);
      const ext = clipContainer(p.metadata.containerName)?.extension ?? '.mkv';
      const copy = await measure(wrapper.log, () =>
        ffmpegDirect(
          bins.ffmpeg,
          mediaArgs(bins.ffmpeg, [
            '-y',
            '-ss',
            (window.startMs / 1000).toFixed(3),
            '-i',
            file,
            '-t',
            '10',
            '-map',
            '0:v',
            '-map',
            '0:a?',
            '-c',
            'copy',
            '-avoid_negative_ts',
            'make_zero',
            out(`copy-${tag}${ext}`),
          ]),
        ),
      );
      let result: ClipResult | undefined;
      const clip = await measure(wrapper.log, async () => {
        result = await cutClip(clipBins, file, out(`clip-${tag}${ext}`), { ...window, container: p.metadata.containerName });
      });
      const copied = await probeMedia(bins, out(`copy-${tag}${ext}`));
      return { copy, clip, result: result!, copiedMs: copied.durationMs };
    };
    const clip12 = await clipCost(input, 'gop12');
    const clip10 = await clipCost(gop10, 'gop10');

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
        row(`clip, 12-s GOPs (${clip12.result.method}, ${clip12.result.encodedFrames}/${clip12.result.frames} frames encoded) vs stream copy`, clip12.copy, clip12.clip),
        row(`clip, 10-s GOPs (${clip10.result.method}, ${clip10.result.encodedFrames}/${clip10.result.frames} frames encoded) vs stream copy`, clip10.copy, clip10.clip),
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
        // Information: a stream copy decodes nothing, so any re-encoding is hundreds of times its cost.
        { name: 'clip / stream copy, 12-s GOPs, window re-encoded (CPU)', ratio: clip12.clip.cpuMs / clip12.copy.cpuMs, kind: 'max', limit: 1000, info: true },
        { name: 'clip / stream copy, 10-s GOPs, smart cut (CPU)', ratio: clip10.clip.cpuMs / clip10.copy.cpuMs, kind: 'max', limit: 1000, info: true },
        // Half the window re-encoded should cost about half of re-encoding all of it.
        { name: 'clip smart cut / window re-encoded (CPU)', ratio: clip10.clip.cpuMs / clip12.clip.cpuMs, kind: 'max', limit: 0.75, info: true },
      ],
      notes: [
        `input: ${process.env.VIDMILL_BENCH_MEDIA_INPUT ?? `generated 60 s 1920x1080 H.264 + AAC (${s(generateMs)} s)`}; ffmpeg ${real.ffmpegVersion} (${real.source.ffmpeg}); ${os.cpus().length} cores`,
        `best of ${ROUNDS} rounds per step and side (CPU and wall time each), sides alternating; load average at the end ${os.loadavg()[0]!.toFixed(1)}`,
        `clip lengths: stream copy ${s(clip12.copiedMs)} s / ${s(clip10.copiedMs)} s (from the keyframe before the window), clip ${clip12.result.frames / 25} s / ${clip10.result.frames / 25} s (12-s / 10-s GOPs)`,
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
