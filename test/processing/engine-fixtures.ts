/**
 * The engine with real ffmpeg, for the processing tests: tiny generated sources (testsrc2, 1-2 s),
 * a plan run on one of them and probed back, and readers of what came out (stream facts, HDR
 * side data, decoded picture statistics). x264/x265 run at `ultrafast` (an installation
 * setting) to keep run times short; the arguments are otherwise the production ones.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { probeMedia, type MediaBinaries, type ProbeResult } from '../../src/media';
import {
  buildProcessingPlan,
  engineCapabilities,
  runAudioPass,
  runJoin,
  runProcessing,
  runSegment,
  type EngineCapabilities,
  type ProcessingOptions,
  type ProcessingProgress,
  type SegmentedProcessingPlan,
} from '../../src/processing-planner';
import { encodeCached } from '../helpers/media-cache';
import { bins } from '../media/fixtures';
import { scaled } from '../helpers/timeouts';

export const run = promisify(execFile);
export const workDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-processing-'));
process.on('exit', () => rmSync(workDir, { recursive: true, force: true }));

const L = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'];

/** x265 mastering display of a 1000-nit P3 monitor and of a 4000-nit BT.2020 one (0.00002 / 0.0001 cd/m2 units). */
export const MASTER_P3_1000 = 'G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50)';
export const MASTER_BT2020_4000 = 'G(8500,39850)B(6550,2300)R(35400,14600)WP(15635,16450)L(40000000,50)';
const hdr10 = (masterDisplay: string, maxCll: string) => [
  '-c:v',
  'libx265',
  '-preset',
  'ultrafast',
  '-pix_fmt',
  'yuv420p10le',
  '-color_primaries',
  'bt2020',
  '-color_trc',
  'smpte2084',
  '-colorspace',
  'bt2020nc',
  '-x265-params',
  `log-level=error:hdr10=1:master-display=${masterDisplay}:max-cll=${maxCll}`,
];

/**
 * A generated sound track (seeded pink noise at 48 kHz, as the second input): unlike a pure tone,
 * the output checker can tell where its content is to the sample (audioContentLate).
 */
export const pinkNoise = (seconds: number) => ['-f', 'lavfi', '-i', `anoisesrc=color=pink:sample_rate=48000:amplitude=0.3:seed=24:duration=${seconds}`];

export const SOURCES = {
  /** Interlaced PAL SD, 16:9 anamorphic, top field first, MPEG-2 + MP2 in MPEG-TS, 2 s (50 fields/s). */
  palInterlaced: [
    'pal.ts',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=720x576:rate=50:duration=2',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=48000:duration=2',
      '-vf',
      'interlace=scan=tff,setfield=tff,setsar=64/45',
      '-c:v',
      'mpeg2video',
      '-flags',
      '+ilme+ildct',
      '-b:v',
      '6M',
      '-g',
      '12',
      '-c:a',
      'mp2',
      '-b:a',
      '192k',
    ],
  ],
  /** H.264 + AAC in MP4, 640x360, 25 frames/s, 1 s. */
  small: [
    'small.mp4',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=640x360:rate=25:duration=1',
      '-f',
      'lavfi',
      '-i',
      'sine=duration=1',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      '-shortest',
    ],
  ],
  /** H.264 in MP4, 320x180, 25 frames/s, 1 s, no audio: pictures measured pixel by pixel. */
  tiny: ['tiny.mp4', ['-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25:duration=1', '-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', '-pix_fmt', 'yuv420p']],
  /** H.264 + AAC in MP4, 320x180, 25 frames/s, 2 s, a keyframe every second: ranges cut between frames. */
  clip25: [
    'clip25.mp4',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=320x180:rate=25:duration=2',
      '-f',
      'lavfi',
      '-i',
      'sine=duration=2',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-g',
      '25',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      '-shortest',
    ],
  ],
  /** H.264 + PCM in Matroska, 320x180, 25 frames/s: the video (2 s) starts 0.52 s after the audio (2.52 s). */
  videoLate: [
    'video-late.mkv',
    [
      ...['-f', 'lavfi', '-itsoffset', '0.52', '-i', 'testsrc2=size=320x180:rate=25:duration=2', '-f', 'lavfi', '-i', 'sine=sample_rate=48000:duration=2.52'],
      ...['-map', '0:v', '-map', '1:a', '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-pix_fmt', 'yuv420p', '-c:a', 'pcm_s16le'],
    ],
  ],
  /** H.264 in MP4, 320x180, 30000/1001 frames/s, 2 s. */
  ntsc: ['ntsc.mp4', ['-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=30000/1001:duration=2', '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '30', '-pix_fmt', 'yuv420p']],
  /** Progressive 50 frames/s, 640x360, 1 s, no audio. */
  fast: ['fast.mp4', ['-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=50:duration=1', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p']],
  /** HEVC Main 10, PQ / BT.2020 without static metadata (PQ10), 320x180, 1 s. */
  pq: [
    'pq.mp4',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=320x180:rate=25:duration=1',
      '-c:v',
      'libx265',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p10le',
      '-color_primaries',
      'bt2020',
      '-color_trc',
      'smpte2084',
      '-colorspace',
      'bt2020nc',
      '-x265-params',
      'log-level=error',
    ],
  ],
  /** HDR10: HEVC Main 10 PQ / BT.2020, mastered on a 1000-nit P3 display, MaxCLL 1000, MaxFALL 400, 320x180, 1 s. */
  hdr10At1000: ['hdr10-1000.mp4', ['-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25:duration=1', ...hdr10(MASTER_P3_1000, '1000,400')]],
  /** HDR10 mastered on a 4000-nit BT.2020 display, MaxCLL 4000, MaxFALL 1000, 320x180, 1 s. */
  hdr10At4000: ['hdr10-4000.mp4', ['-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25:duration=1', ...hdr10(MASTER_BT2020_4000, '4000,1000')]],
} as const;
export type SourceName = keyof typeof SOURCES;

export interface EngineSource {
  file: string;
  probe: ProbeResult;
}

const made = new Map<SourceName, Promise<EngineSource>>();

/** A source made once per process (encoded once across processes: test/helpers/media-cache.ts), with its probe. */
export function source(name: SourceName): Promise<EngineSource> {
  let p = made.get(name);
  if (!p) {
    p = (async () => {
      const b = await bins();
      const [file, args] = SOURCES[name];
      const out = path.join(workDir, file);
      await encodeCached(b.ffmpeg, [...L, ...args], out);
      return { file: out, probe: await probeMedia(b, out) };
    })();
    made.set(name, p);
  }
  return p;
}

let capsPromise: Promise<EngineCapabilities> | undefined;
export async function capabilities(): Promise<EngineCapabilities> {
  capsPromise ??= bins().then((b) => engineCapabilities(b));
  return capsPromise;
}

/** Plans `options` for a source, runs the plan and probes the output (with the scanning analysis). */
export async function processed(name: SourceName, options: ProcessingOptions, outName: string, range?: { startMs: number; endMs: number }) {
  const b = await bins();
  const src = await source(name);
  const r = range ?? { startMs: 0, endMs: src.probe.durationMs };
  const plan = buildProcessingPlan(options, src.probe, r, { capabilities: await capabilities(), encoderPreset: 'ultrafast' });
  const output = path.join(workDir, outName + plan.fileExtension);
  const progress: ProcessingProgress[] = [];
  const result = await runProcessing(b, src.file, output, plan, { durationMs: plan.output.durationMs, timeoutMs: scaled(60_000), onProgress: (p) => progress.push(p) });
  const probe = await probeMedia(b, output, { detectScanning: true });
  return { plan, output, result, progress, probe, src };
}

/** When a stream (`v:0`, `a:0`) of a file starts, seconds. */
export async function streamStart(file: string, stream: string): Promise<number> {
  const { ffprobe } = await bins();
  const { stdout } = await run(ffprobe, ['-v', 'error', '-select_streams', stream, '-show_entries', 'stream=start_time', '-of', 'csv=p=0', file]);
  return Number(stdout.trim());
}

export async function streamInfo(file: string): Promise<Record<string, string>> {
  const { ffprobe } = await bins();
  const { stdout } = await run(ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=codec_name,profile,pix_fmt,field_order,bit_rate,sample_aspect_ratio', '-of', 'json', file]);
  return JSON.parse(stdout).streams[0];
}

export async function audioCodec(file: string): Promise<string | undefined> {
  const { ffprobe } = await bins();
  const { stdout } = await run(ffprobe, ['-v', 'error', '-select_streams', 'a:0', '-show_entries', 'stream=codec_name,sample_rate', '-of', 'json', file]);
  return JSON.parse(stdout).streams[0]?.codec_name;
}

/** The side data of the first video frame (`Mastering display metadata`, `Content light level metadata`...), by type. */
export async function firstFrameSideData(file: string): Promise<Record<string, Record<string, string | number>>> {
  const { ffprobe } = await bins();
  const { stdout } = await run(ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-read_intervals', '%+#1', '-show_frames', '-show_entries', 'frame=side_data_list', '-of', 'json', file]);
  const out: Record<string, Record<string, string | number>> = {};
  for (const d of JSON.parse(stdout).frames?.[0]?.side_data_list ?? []) out[d.side_data_type] = d;
  return out;
}

/** The video frames: count (decoded) and the presentation time of the first, in seconds. */
export async function frameCount(file: string): Promise<{ frames: number; firstPts: number }> {
  const { ffprobe } = await bins();
  const { stdout } = await run(ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-count_frames', '-show_entries', 'stream=nb_read_frames', '-of', 'json', file]);
  const frames = Number(JSON.parse(stdout).streams[0].nb_read_frames);
  const first = await run(ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-read_intervals', '%+#1', '-show_entries', 'frame=pts_time', '-of', 'json', file]);
  return { frames, firstPts: Number(JSON.parse(first.stdout).frames[0].pts_time) };
}

/** Decoded 4:2:0 pictures: Y, U and V planes of each frame (8 bits, or 16-bit little-endian words for `bitDepth` 10). */
export interface DecodedVideo {
  width: number;
  height: number;
  frames: { y: Float64Array; u: Float64Array; v: Float64Array }[];
}

/** Decodes the first `maxFrames` frames of a file to 4:2:0 planes at 8 or 10 bits (`-vf` may select frames first). */
export async function decodeYuv(file: string, width: number, height: number, opts: { bitDepth?: 8 | 10; maxFrames?: number; vf?: string } = {}): Promise<DecodedVideo> {
  const { ffmpeg } = await bins();
  const deep = opts.bitDepth === 10;
  const args = ['-v', 'error', '-i', file, ...(opts.vf ? ['-vf', opts.vf] : []), '-frames:v', String(opts.maxFrames ?? 1000), '-f', 'rawvideo', '-pix_fmt', deep ? 'yuv420p10le' : 'yuv420p', '-'];
  const { stdout } = await run(ffmpeg, args, { encoding: 'buffer', maxBuffer: 512 * 1024 * 1024 });
  const raw = stdout as unknown as Buffer;
  const luma = width * height;
  const chroma = (width / 2) * (height / 2);
  const bytes = deep ? 2 : 1;
  const frameBytes = (luma + 2 * chroma) * bytes;
  const frames: DecodedVideo['frames'] = [];
  for (let o = 0; o + frameBytes <= raw.length; o += frameBytes) {
    const plane = (start: number, n: number) => {
      const a = new Float64Array(n);
      for (let i = 0; i < n; i++) a[i] = deep ? raw.readUInt16LE(o + (start + i) * 2) : raw[o + start + i]!;
      return a;
    };
    frames.push({ y: plane(0, luma), u: plane(luma, chroma), v: plane(luma + chroma, chroma) });
  }
  return { width, height, frames };
}

/** Mean of one plane over all frames. */
export function planeMean(video: DecodedVideo, plane: 'y' | 'u' | 'v'): number {
  let sum = 0;
  let n = 0;
  for (const f of video.frames) {
    for (const x of f[plane]) sum += x;
    n += f[plane].length;
  }
  return sum / n;
}

/**
 * The luma difference `a - b` over the frames both have: its standard deviation and its
 * horizontal lag-1 correlation (near 0 for pixel-fine noise, towards 1 for coarse grain).
 */
export function lumaDifference(a: DecodedVideo, b: DecodedVideo): { stddev: number; correlation: number } {
  const w = a.width;
  let n = 0;
  let sum = 0;
  let sum2 = 0;
  let lagSum = 0;
  let lagN = 0;
  for (let f = 0; f < Math.min(a.frames.length, b.frames.length); f++) {
    const ya = a.frames[f]!.y;
    const yb = b.frames[f]!.y;
    const d = new Float64Array(ya.length);
    for (let i = 0; i < ya.length; i++) {
      d[i] = ya[i]! - yb[i]!;
      sum += d[i]!;
      sum2 += d[i]! * d[i]!;
    }
    n += d.length;
    for (let i = 0; i < d.length - 1; i++) {
      if ((i + 1) % w === 0) continue;
      lagSum += d[i]! * d[i + 1]!;
      lagN++;
    }
  }
  const mean = sum / n;
  const variance = sum2 / n - mean * mean;
  return { stddev: Math.sqrt(variance), correlation: (lagSum / lagN - mean * mean) / variance };
}

/** PSNR of `a` against `b` on luma (8-bit scale). */
export function lumaPsnr(a: DecodedVideo, b: DecodedVideo): number {
  let se = 0;
  let n = 0;
  for (let f = 0; f < Math.min(a.frames.length, b.frames.length); f++) {
    for (let i = 0; i < a.frames[f]!.y.length; i++) {
      const d = a.frames[f]!.y[i]! - b.frames[f]!.y[i]!;
      se += d * d;
      n++;
    }
  }
  return 10 * Math.log10((255 * 255) / (se / n));
}

export type { MediaBinaries };

/** A segmented plan run as the workers run it: each segment, the audio pass, the join into `out`. */
export async function processSplit(file: string, plan: SegmentedProcessingPlan, out: string): Promise<void> {
  const b = await bins();
  const parts: string[] = [];
  for (const seg of plan.segmented.segments) {
    const f = `${out}.part${seg.index}${plan.segmented.segmentExtension}`;
    await runSegment(b, file, f, plan, seg.index, { timeoutMs: scaled(120_000) });
    parts.push(f);
  }
  const audio = plan.segmented.audio && (await runAudioPass(b, file, `${out}.audio${plan.segmented.audio.extension}`, plan, { timeoutMs: scaled(120_000) }));
  await runJoin(b, parts, audio?.outputPath, out, plan, { timeoutMs: scaled(120_000) });
}
