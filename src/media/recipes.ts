/**
 * What ingestion makes from a video: thumbnails, full frames, the web video and the quality
 * assessment (the free clip is `clip.ts`). Argument builders are pure functions (tested without ffmpeg); the
 * recipe functions run them through `runMedia`.
 *
 * Cost: still images are taken with fast input seeking, every position one `-ss <t> -i <input>`
 * input of ONE ffmpeg process, so each position decodes only from the keyframe before it. On a
 * 60 s 1080p H.264 file with 10-s GOPs, 5 thumbnails took 0.5 s when the positions sat on
 * keyframes and 4.0 s at worst (positions just before the next keyframe); a single pass with a
 * `select` filter decodes the whole file (5.9 s), and 5 separate seeking processes took 0.7 s
 * and 5.0 s. `makeThumbnailsAndFrames` decodes each position once for both kinds of image. The
 * web video is one transcode. bench/media.ts
 * compares these recipes with the same ffmpeg commands run directly (CPU time, 0.98x).
 */
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { availableFilters, type MediaBinaries } from './binaries';
import { MediaError, MediaProcessError } from './errors';
import { imageFileInfo } from './images';
import { msToSeconds } from './probe';
import { runMedia, type MediaProgress } from './runner';

export interface StillImage {
  path: string;
  positionMs: number;
  width: number;
  height: number;
}

interface RunCommon {
  signal?: AbortSignal;
  /** Time limit of the ffmpeg run (the caller passes config.media.timeoutMs). */
  timeoutMs?: number;
}

/** A path ffmpeg will not mistake for an option. */
function safePath(p: string): string {
  return p.startsWith('-') ? `./${p}` : p;
}

/**
 * `count` positions spread evenly over the video, away from both ends: (i + 1) / (count + 1)
 * of the duration. A video of unknown duration gets one position, 0.
 */
export function stillPositions(durationMs: number | undefined, count: number): number[] {
  if (!durationMs || durationMs <= 0) return [0];
  return Array.from({ length: count }, (_, i) => Math.floor((durationMs * (i + 1)) / (count + 1)));
}

/** Scales to at most `width` display pixels wide (never up), square pixels, even sizes. */
export function thumbnailFilter(width: number): string {
  return `scale=w='max(2,2*trunc(min(${width},iw*sar)/2))':h='max(2,2*trunc(ow*ih/(iw*sar)/2))',setsar=1`;
}

/**
 * Full resolution with square pixels: an anamorphic frame is widened (or heightened) to its
 * display shape, so no stored pixel is lost; square-pixel frames are not resampled at all.
 */
export const FULL_FRAME_FILTER = "scale=w='trunc(iw*max(1,sar)+0.5)':h='trunc(ih*max(1,1/sar)+0.5)',setsar=1";

export interface StillSpec {
  positionMs: number;
  path: string;
}

/** One kind of image taken at every position: its file names, filter and encoder arguments. */
export interface StillKind {
  name: (index: number) => string;
  filter: string;
  encode: string[];
}

/** One ffmpeg run: one fast-seeked input per position, one single-frame image output each. */
export function stillsArgs(input: string, stills: StillSpec[], filter: string, encode: string[]): string[] {
  const args: string[] = ['-y'];
  for (const s of stills) {
    if (s.positionMs > 0) args.push('-ss', msToSeconds(s.positionMs));
    args.push('-i', safePath(input));
  }
  stills.forEach((s, i) => {
    args.push('-map', `${i}:v:0`, '-frames:v', '1', '-vf', filter, ...encode, '-f', 'image2', '-update', '1', safePath(s.path));
  });
  return args;
}

/**
 * One ffmpeg run making several kinds of image from the same frames: one fast-seeked input per
 * position, its decoded frame `split` once per kind, so each position is decoded once.
 */
export function multiStillsArgs(input: string, positions: { positionMs: number; outputs: { path: string; filter: string; encode: string[] }[] }[]): string[] {
  const args: string[] = ['-y'];
  for (const p of positions) {
    if (p.positionMs > 0) args.push('-ss', msToSeconds(p.positionMs));
    args.push('-i', safePath(input));
  }
  const chains = positions.map((p, i) => {
    const k = p.outputs.length;
    const split = `[${i}:v:0]split=${k}${p.outputs.map((_, j) => `[p${i}k${j}]`).join('')}`;
    return [split, ...p.outputs.map((o, j) => `[p${i}k${j}]${o.filter}[o${i}k${j}]`)].join(';');
  });
  args.push('-filter_complex', chains.join(';'));
  positions.forEach((p, i) => {
    p.outputs.forEach((o, j) => args.push('-map', `[o${i}k${j}]`, '-frames:v', '1', ...o.encode, '-f', 'image2', '-update', '1', safePath(o.path)));
  });
  return args;
}

export const THUMBNAIL_ENCODE = ['-c:v', 'mjpeg', '-q:v', '3'];
/** Full frames: JPEG at the highest quality scale step ffmpeg's encoder uses (q 2). */
export const FULL_FRAME_JPEG_ENCODE = ['-c:v', 'mjpeg', '-q:v', '2'];
export const FULL_FRAME_PNG_ENCODE = ['-c:v', 'png', '-compression_level', '3'];

/** Every kind of image at every position; returns the images per kind (one list per kind given), in position order. */
async function makeStills<const K extends readonly [StillKind, ...StillKind[]]>(
  bins: MediaBinaries,
  input: string,
  outDir: string,
  positions: number[],
  kinds: K,
  opts: RunCommon & { onProgress?: (p: MediaProgress) => void },
): Promise<{ [I in keyof K]: StillImage[] }> {
  await mkdir(outDir, { recursive: true });
  const specs = kinds.map((kind) => positions.map((positionMs, i) => ({ positionMs, path: path.join(outDir, kind.name(i)) })));
  await Promise.all(specs.flat().map((s) => rm(s.path, { force: true })));
  const run = (args: string[]) => runMedia(bins.ffmpeg, args, { signal: opts.signal, timeoutMs: opts.timeoutMs, tool: 'ffmpeg' });
  await run(
    kinds.length === 1
      ? stillsArgs(input, specs[0]!, kinds[0].filter, kinds[0].encode)
      : multiStillsArgs(
          input,
          positions.map((positionMs, i) => ({ positionMs, outputs: kinds.map((k, j) => ({ path: specs[j]![i]!.path, filter: k.filter, encode: k.encode })) })),
        ),
  );
  // A position past the last decodable frame (a stated duration longer than the video) yields
  // no image: take those from the start instead, in one more run per kind.
  for (const [j, kind] of kinds.entries()) {
    const missing: StillSpec[] = [];
    for (const s of specs[j]!) if (!(await exists(s.path))) missing.push(s);
    if (!missing.length) continue;
    for (const s of missing) s.positionMs = 0;
    await run(stillsArgs(input, missing, kind.filter, kind.encode));
  }
  const result: StillImage[][] = [];
  for (const kindSpecs of specs) {
    const images: StillImage[] = [];
    for (const s of kindSpecs) {
      const info = await imageFileInfo(s.path).catch(() => undefined);
      if (!info) throw new MediaError(`ffmpeg made no image at ${s.positionMs} ms of ${path.basename(input)}`);
      images.push({ path: s.path, positionMs: s.positionMs, width: info.width, height: info.height });
    }
    result.push(images);
  }
  opts.onProgress?.({ percentage: 100, outTimeMs: 0 });
  return result as { [I in keyof K]: StillImage[] }; // one list per kind, in the kinds' order
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    (s) => s.size > 0,
    () => false,
  );
}

export interface ThumbnailOptions extends RunCommon {
  /** Number of thumbnails (default 5, 1..50). */
  count?: number;
  /** Width in pixels (default 320; never wider than the video). */
  width?: number;
  durationMs?: number;
  /** Called once, with 100, when the images are written (one short ffmpeg run). */
  onProgress?: (p: MediaProgress) => void;
}

/** JPEG thumbnails `thumbnail-01.jpg`... at evenly spaced positions. */
export function makeThumbnails(bins: MediaBinaries, input: string, outDir: string, opts: ThumbnailOptions = {}): Promise<StillImage[]> {
  const count = clampInt(opts.count ?? 5, 1, 50);
  const width = clampInt(opts.width ?? 320, 16, 8192);
  const positions = stillPositions(opts.durationMs, count);
  return makeStills(bins, input, outDir, positions, [thumbnailKind(width)], opts).then(([images]) => images);
}

function thumbnailKind(width: number): StillKind {
  return { name: (i) => `thumbnail-${pad(i + 1)}.jpg`, filter: thumbnailFilter(width), encode: THUMBNAIL_ENCODE };
}

function fullFrameKind(format: 'jpeg' | 'png' | undefined): StillKind {
  const png = format === 'png';
  return { name: (i) => `frame-${pad(i + 1)}.${png ? 'png' : 'jpg'}`, filter: FULL_FRAME_FILTER, encode: png ? FULL_FRAME_PNG_ENCODE : FULL_FRAME_JPEG_ENCODE };
}

export interface FullFrameOptions extends RunCommon {
  /** Number of frames (default 5, at most 20). */
  count?: number;
  durationMs?: number;
  /**
   * `jpeg` (default): quality 2 JPEG, chroma kept as the source's where JPEG allows
   * (4:2:0, 4:2:2, 4:4:4). `png`: lossless 8-bit RGB. JPEG is the default because the frames are
   * for looking at and downloading: a PNG of an already lossy-compressed frame adds no detail
   * but is 3 to 10 times larger and slower to write (a 4K PNG is 15-25 MB).
   */
  format?: 'jpeg' | 'png';
  onProgress?: (p: MediaProgress) => void;
}

export const MAX_FULL_FRAMES = 20;

/** Full-resolution frames `frame-01.jpg`... at evenly spaced positions. */
export function makeFullFrames(bins: MediaBinaries, input: string, outDir: string, opts: FullFrameOptions = {}): Promise<StillImage[]> {
  const count = clampInt(opts.count ?? 5, 1, MAX_FULL_FRAMES);
  return makeStills(bins, input, outDir, stillPositions(opts.durationMs, count), [fullFrameKind(opts.format)], opts).then(([images]) => images);
}

export interface StillsOptions extends RunCommon {
  durationMs?: number;
  /** Number of positions (default 5, at most 20): one thumbnail and one full frame at each. */
  count?: number;
  /** Thumbnail width (default 320). */
  width?: number;
  /** Full-frame format (default `jpeg`). */
  format?: 'jpeg' | 'png';
  onProgress?: (p: MediaProgress) => void;
}

/**
 * Thumbnails and full frames at the same positions in ONE ffmpeg run: each position is decoded
 * once and its frame split into the thumbnail and the full frame. Same files and results as
 * `makeThumbnails` + `makeFullFrames` with the same count, for about half the decoding.
 */
export async function makeThumbnailsAndFrames(bins: MediaBinaries, input: string, outDir: string, opts: StillsOptions = {}): Promise<{ thumbnails: StillImage[]; frames: StillImage[] }> {
  const count = clampInt(opts.count ?? 5, 1, MAX_FULL_FRAMES);
  const width = clampInt(opts.width ?? 320, 16, 8192);
  const [thumbnails, frames] = await makeStills(bins, input, outDir, stillPositions(opts.durationMs, count), [thumbnailKind(width), fullFrameKind(opts.format)], opts);
  return { thumbnails, frames };
}

export interface WebVideoOptions extends RunCommon {
  durationMs?: number;
  onProgress?: (p: MediaProgress) => void;
  /** From the probe; when unknown the first audio stream is mapped if there is one (`0:a:0?`). */
  hasAudio?: boolean;
}

/** Web video box: at most 1280 x 720 display pixels (so at most 720 high), never enlarged. */
export const WEB_MAX_WIDTH = 1280;
export const WEB_MAX_HEIGHT = 720;

/**
 * Scale expression for the web video: fits the display size (width x sample aspect ratio) into
 * 1280 x 720 without enlarging, keeps the aspect, rounds both sides to even numbers (4:2:0
 * needs them), square pixels. Evaluated by ffmpeg after auto-rotation, so a portrait phone
 * video stays portrait.
 */
export function webScaleFilter(maxW = WEB_MAX_WIDTH, maxH = WEB_MAX_HEIGHT): string {
  const f = `min(1,min(${maxW}/(iw*sar),${maxH}/ih))`;
  return `scale=w='max(2,2*trunc(iw*sar*${f}/2))':h='max(2,2*trunc(ih*${f}/2))',setsar=1`;
}

/**
 * H.264 High (yuv420p, CRF 23, preset veryfast, a keyframe every 2 s for seeking) + AAC
 * 128 kbit/s (stereo, or mono when the source is mono) in MP4 with the index first
 * (`+faststart`). Interlaced frames are deinterlaced (bwdif, one frame per frame); progressive
 * frames pass through untouched. HDR is not tone-mapped.
 */
export function webVideoArgs(input: string, outPath: string, opts: Pick<WebVideoOptions, 'hasAudio'> = {}): string[] {
  const args = ['-y', '-i', safePath(input), '-map', '0:v:0'];
  if (opts.hasAudio !== false) args.push('-map', opts.hasAudio ? '0:a:0' : '0:a:0?');
  args.push(
    '-vf',
    `bwdif=mode=send_frame:deint=interlaced,${webScaleFilter()},format=yuv420p`,
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-crf',
    '23',
    '-profile:v',
    'high',
    '-pix_fmt',
    'yuv420p',
    '-force_key_frames',
    'expr:gte(t,n_forced*2)',
  );
  if (opts.hasAudio !== false) args.push('-c:a', 'aac', '-b:a', '128k', '-af', 'aformat=channel_layouts=stereo|mono');
  else args.push('-an');
  args.push('-sn', '-dn', '-map_metadata', '-1', '-map_chapters', '-1', '-max_muxing_queue_size', '4096', '-movflags', '+faststart', '-f', 'mp4', safePath(outPath));
  return args;
}

export async function makeWebVideo(bins: MediaBinaries, input: string, outPath: string, opts: WebVideoOptions = {}): Promise<{ path: string }> {
  await mkdir(path.dirname(outPath), { recursive: true });
  await runMedia(bins.ffmpeg, webVideoArgs(input, outPath, opts), {
    signal: opts.signal,
    timeoutMs: opts.timeoutMs,
    durationMs: opts.durationMs,
    onProgress: opts.onProgress ?? (() => undefined),
    tool: 'ffmpeg',
  });
  return { path: outPath };
}

function clampInt(v: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, Math.round(Number.isFinite(v) ? v : min)));
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

// ---------------------------------------------------------------------------------------------
// Quality assessment
// ---------------------------------------------------------------------------------------------

export interface QualityMetric {
  name: string;
  sampleMean: number;
  subjectiveLabel: string;
  subjectiveScore: number;
}

export interface VideoQualityAssessment {
  metrics: QualityMetric[];
  overallSubjectiveScore: number;
}

export interface QualityOptions extends RunCommon {
  durationMs?: number;
  /** Positions sampled (default 5) and frames read at each (default 24). */
  segments?: number;
  framesPerSegment?: number;
  /** With the video's frame rate: progress through the sampled frames (the measurements then go through a file, not stdout). */
  onProgress?: (p: MediaProgress) => void;
  fps?: number;
  /** Folder for the measurements file (the job's scratch folder); default the system's temporary folder. */
  scratchDir?: string;
}

/**
 * How each measurement becomes a 0..5 score. This is a heuristic built from classical,
 * no-reference measurements, NOT a learned perceptual model (no VMAF, no MOS prediction): the
 * thresholds are plain interpolation anchors chosen from measurements of sharp, blurred and
 * coarsely quantised test material, and content matters (a dark night scene has little luma
 * range, a black-and-white film no saturation). docs/ingestion.md lists the same table.
 *
 * | metric | filter / value | score 5 at | score 0 at | weight |
 * |---|---|---|---|---|
 * | blur | blurdetect `lavfi.blur`: mean edge width, pixels | <= 4 | >= 14 | 2 |
 * | blockiness | blockdetect `lavfi.block`: coding-block edge strength (1 = none) | <= 1.5 | >= 30 (log scale) | 2 |
 * | spatial_information | siti `lavfi.siti.si` (ITU-T P.910 SI, 8-bit scale) | >= 45 | <= 5 | 1 |
 * | luma_range | signalstats YHIGH - YLOW (90th - 10th percentile luma), 8-bit scale | >= 120 | <= 20 | 1 |
 * | saturation | signalstats SATAVG, 8-bit scale | >= 30 | 0 | 0.5 |
 * | temporal_information | siti `lavfi.siti.ti` (P.910 TI): amount of motion, not quality | (5 at TI >= 25) | 0 | 0 |
 *
 * Labels by score: >= 4.5 excellent, >= 3.5 good, >= 2.5 fair, >= 1.5 poor, >= 0.5 bad,
 * else untenable; temporal_information is labelled still / low motion / moderate motion /
 * high motion instead. The overall score is the weighted mean of the metrics with a weight.
 * Metrics whose filter this ffmpeg lacks (blurdetect, blockdetect, siti need FFmpeg 5.1;
 * the npm-shipped binary is older) are left out, and the overall score uses the rest.
 */
export const QUALITY_SCALE = {
  blur: { best: 4, worst: 14, weight: 2, log: false },
  blockiness: { best: 1.5, worst: 30, weight: 2, log: true },
  spatial_information: { best: 45, worst: 5, weight: 1, log: false },
  luma_range: { best: 120, worst: 20, weight: 1, log: false },
  saturation: { best: 30, worst: 0, weight: 0.5, log: false },
  temporal_information: { best: 25, worst: 0, weight: 0, log: false },
} as const;

export type QualityMetricName = keyof typeof QUALITY_SCALE;

export function qualityScore(name: QualityMetricName, value: number): number {
  const { best, worst, log } = QUALITY_SCALE[name];
  const t = log ? (Math.log(Math.max(value, 1e-9)) - Math.log(worst)) / (Math.log(best) - Math.log(worst)) : (value - worst) / (best - worst);
  return Math.round(Math.min(1, Math.max(0, t)) * 5 * 100) / 100;
}

export function qualityLabel(name: QualityMetricName, score: number): string {
  if (name === 'temporal_information') return score >= 3.5 ? 'high motion' : score >= 1.5 ? 'moderate motion' : score >= 0.1 ? 'low motion' : 'still';
  if (score >= 4.5) return 'excellent';
  if (score >= 3.5) return 'good';
  if (score >= 2.5) return 'fair';
  if (score >= 1.5) return 'poor';
  if (score >= 0.5) return 'bad';
  return 'untenable';
}

const SEGMENT_KEY = 'vidmill.segment';

/** One ffmpeg run: `segments` fast-seeked inputs, the metric filters on each, joined by concat, metadata printed to stdout. */
/** Positions and frames per position the quality assessment reads. */
function qualitySample(opts: Pick<QualityOptions, 'durationMs' | 'segments' | 'framesPerSegment'>): { segments: number; frames: number } {
  return { frames: clampInt(opts.framesPerSegment ?? 24, 2, 500), segments: (opts.durationMs ?? 0) > 0 ? clampInt(opts.segments ?? 5, 1, 20) : 1 };
}

/** `metadataFile`: print the measurements there instead of stdout (which then carries progress). */
export function qualityArgs(input: string, filters: Set<string>, opts: Pick<QualityOptions, 'durationMs' | 'segments' | 'framesPerSegment'> & { metadataFile?: string }): string[] {
  const durationMs = opts.durationMs ?? 0;
  const { frames, segments } = qualitySample(opts);
  const measure = ['signalstats', 'blurdetect', 'blockdetect', 'siti'].filter((f) => filters.has(f));
  const args: string[] = [];
  for (let i = 0; i < segments; i++) {
    const startMs = segments === 1 ? 0 : Math.floor((durationMs * (i + 0.5)) / segments - (durationMs / segments) * 0.25);
    if (startMs > 0) args.push('-ss', msToSeconds(startMs));
    args.push('-i', safePath(input));
  }
  const chains = Array.from({ length: segments }, (_, i) => `[${i}:v:0]trim=end_frame=${frames},setpts=PTS-STARTPTS,${measure.join(',')},metadata=mode=add:key=${SEGMENT_KEY}:value=${i}[q${i}]`);
  const joined = segments > 1 ? `${Array.from({ length: segments }, (_, i) => `[q${i}]`).join('')}concat=n=${segments}:v=1:a=0[j];[j]` : '[q0]';
  const target = opts.metadataFile ? opts.metadataFile.replace(/\\/g, '\\\\').replace(/:/g, '\\:').replace(/'/g, "\\'") : 'pipe\\:1';
  const graph = `${chains.join(';')};${joined}metadata=mode=print:file='${target}'[out]`;
  return [...args, '-filter_complex', graph, '-map', '[out]', '-an', '-sn', '-dn', '-f', 'null', '-'];
}

/** Per-frame values from the metadata print, averaged; temporal information skips the first frame of each segment. */
export function qualityFromMetadata(output: string): VideoQualityAssessment {
  const sums = new Map<QualityMetricName, { sum: number; n: number }>();
  const add = (name: QualityMetricName, v: number) => {
    if (!Number.isFinite(v)) return;
    const s = sums.get(name) ?? { sum: 0, n: 0 };
    s.sum += v;
    s.n++;
    sums.set(name, s);
  };
  type Frame = Record<string, string>;
  const frames: Frame[] = [];
  let current: Frame | undefined;
  for (const line of output.split('\n')) {
    if (line.startsWith('frame:')) {
      current = {};
      frames.push(current);
      continue;
    }
    const eq = line.indexOf('=');
    if (current && eq > 0) current[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  // signalstats reports in the video's own bit depth: scale to 8 bits by the largest luma seen.
  const maxLuma = Math.max(0, ...frames.map((f) => Number(f['lavfi.signalstats.YMAX'] ?? 0)));
  const depth = [8, 10, 12, 14, 16].find((d) => maxLuma < 2 ** d) ?? 16;
  const to8 = 1 / 2 ** (depth - 8);
  let previousSegment: string | undefined;
  for (const f of frames) {
    const num = (k: string) => (f[k] === undefined ? NaN : Number(f[k]));
    add('blur', num('lavfi.blur'));
    add('blockiness', num('lavfi.block'));
    add('spatial_information', num('lavfi.siti.si'));
    const segment = f[SEGMENT_KEY];
    if (segment === previousSegment) add('temporal_information', num('lavfi.siti.ti'));
    previousSegment = segment;
    add('luma_range', (num('lavfi.signalstats.YHIGH') - num('lavfi.signalstats.YLOW')) * to8);
    add('saturation', num('lavfi.signalstats.SATAVG') * to8);
  }
  const metrics: QualityMetric[] = [];
  let weighted = 0;
  let weights = 0;
  for (const name of Object.keys(QUALITY_SCALE) as QualityMetricName[]) {
    const s = sums.get(name);
    if (!s || s.n === 0) continue;
    const sampleMean = Math.round((s.sum / s.n) * 1000) / 1000;
    const subjectiveScore = qualityScore(name, sampleMean);
    metrics.push({ name, sampleMean, subjectiveLabel: qualityLabel(name, subjectiveScore), subjectiveScore });
    weighted += subjectiveScore * QUALITY_SCALE[name].weight;
    weights += QUALITY_SCALE[name].weight;
  }
  if (!weights) throw new MediaError('the quality filters measured no frame');
  return { metrics, overallSubjectiveScore: Math.round((weighted / weights) * 100) / 100 };
}

/** Quality assessment over a bounded sample (default 5 positions x 24 frames), one ffmpeg run. */
export async function assessQuality(bins: MediaBinaries, input: string, opts: QualityOptions = {}): Promise<VideoQualityAssessment> {
  const filters = await availableFilters(bins);
  if (!filters.has('signalstats')) throw new MediaError(`${bins.ffmpeg} has no signalstats filter: no quality assessment`);
  // With progress, stdout carries it and the measurements go through a file.
  const withProgress = Boolean(opts.onProgress && opts.fps && opts.fps > 0);
  const dir = withProgress ? await mkdtemp(path.join(opts.scratchDir ?? os.tmpdir(), 'quality-')) : undefined;
  const metadataFile = dir ? path.join(dir, 'metadata.txt') : undefined;
  const run = async (segments?: number): Promise<string> => {
    const sample = qualitySample({ ...opts, segments });
    const { stdout } = await runMedia(bins.ffmpeg, qualityArgs(input, filters, { ...opts, segments, metadataFile }), {
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
      tool: 'ffmpeg',
      ...(withProgress ? { onProgress: opts.onProgress, durationMs: ((sample.segments * sample.frames) / opts.fps!) * 1000 } : {}),
    });
    return metadataFile ? readFile(metadataFile, 'utf8') : stdout;
  };
  try {
    const output = await run(opts.segments).catch((err) => {
      // A frame-size change between sampled positions breaks concat: measure one position instead.
      if (!(err instanceof MediaProcessError) || !(opts.durationMs && opts.durationMs > 0)) throw err;
      return run(1);
    });
    return qualityFromMetadata(output);
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}
