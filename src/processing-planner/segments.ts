/**
 * Segmented processing (split and stitch): a long range is cut into segments that separate ffmpeg
 * runs (separate jobs, any worker) process, then joined without re-encoding; the audio is encoded
 * once over the whole range by a pass of its own, so it has no seams.
 *
 * - Boundaries are exact frames: multiples of a time grid on which both the source's frames and
 *   the output's frames fall (the least common multiple of their durations), counted from the
 *   range's first frame. Each segment decodes from its seek point (ffmpeg's exact seek decodes
 *   from the keyframe before it and drops what comes first: the re-encoded lead-in).
 * - Filters that look at neighbouring frames get context: a lead-in before the segment and a
 *   tail after it (whole grid steps), decoded and filtered, then cut off by a `trim` at the end of
 *   the graph (half an output frame inside the boundary, so no frame is kept twice or lost).
 * - Every segment is encoded with the plan's own encoder arguments (same codec, rate control,
 *   pixel format, colour tags); each starts with a keyframe (a separate encode), and no frame
 *   refers across a boundary. x264 codes that keyframe at a P-frame's quantiser in every segment
 *   after the first, so the seam does not stand out (withoutSeamPulse).
 * - The audio pass is MOV (AUDIO_PASS_EXTENSION): it keeps the AAC priming out of the presentation.
 * - One job instead (and a note in the applied options saying why): a stabilizer (its motion is
 *   smoothed over the whole video), film grain (one noise sequence per run), MPEG-2 and XDCAM, MXF,
 *   a source of unknown frame rate, a source shaped so that segments would not line up (a
 *   container without exact seeking such as MPEG-TS, a variable frame rate, audio starting more
 *   than one audio frame apart from the video, or a probe too old to tell), a graph with a filter
 *   not known here, or a grid too coarse
 *   for the segment length.
 */
import { secondsArg } from './ffmpeg-syntax';
import type { MediaContainer, OutputCodec } from './options';
import type { PlanBuilder } from './plan-builder';
import type { PlanSegment, SegmentedPlan } from './plan-types';
import { seeksExactly, type SourceFacts } from './source-facts';
import { gcd, reduce, type Rational } from './rational';

/** Source frames of context a filter needs before and after a frame (or seconds before, `beforeS`). */
const FILTER_CONTEXT: Record<string, { before: number; after: number; beforeS?: number }> = {
  // Per frame (or per field pair, which a whole-frame boundary keeps together).
  setparams: { before: 0, after: 0 },
  setsar: { before: 0, after: 0 },
  setfield: { before: 0, after: 0 },
  fieldorder: { before: 0, after: 0 },
  scale: { before: 0, after: 0 },
  crop: { before: 0, after: 0 },
  pad: { before: 0, after: 0 },
  format: { before: 0, after: 0 },
  colorspace: { before: 0, after: 0 },
  zscale: { before: 0, after: 0 },
  tonemap: { before: 0, after: 0 },
  eq: { before: 0, after: 0 },
  vibrance: { before: 0, after: 0 },
  grayworld: { before: 0, after: 0 },
  unsharp: { before: 0, after: 0 },
  gradfun: { before: 0, after: 0 },
  deband: { before: 0, after: 0 },
  nlmeans: { before: 0, after: 0 },
  interlace: { before: 0, after: 0 },
  tpad: { before: 0, after: 0 },
  // Rate conversion: the next input frame decides the last output frame before a boundary.
  fps: { before: 0, after: 1 },
  // Deinterlacers read the fields around the current one.
  bwdif: { before: 4, after: 4 },
  yadif: { before: 4, after: 4 },
  w3fdif: { before: 4, after: 4 },
  // Blending and motion-compensated interpolation read a few frames on each side.
  framerate: { before: 4, after: 4 },
  minterpolate: { before: 8, after: 8 },
  // hqdn3d's temporal part is recursive (each output feeds the next): 3 seconds of lead-in.
  hqdn3d: { before: 0, after: 0, beforeS: 3 },
};

/** Why a filter makes the plan one job (the applied note's text). */
const ONE_JOB_FILTERS: Record<string, { field: string; note: string }> = {
  vidstabdetect: { field: 'filters.stabilizer', note: 'the stabilizer smooths the camera path over the whole video (a two-pass analysis), so the video is processed as one job' },
  vidstabtransform: { field: 'filters.stabilizer', note: 'the stabilizer smooths the camera path over the whole video (a two-pass analysis), so the video is processed as one job' },
  deshake: { field: 'filters.stabilizer', note: 'the stabilizer carries its motion estimate from frame to frame, so the video is processed as one job' },
  noise: { field: 'filters.postProcessor', note: 'film grain is one noise sequence over the whole video, so the video is processed as one job' },
};

const JOINABLE_CODECS: readonly OutputCodec[] = ['H264', 'HEVC', 'PRORES', 'DNXHD', 'DNXHR', 'FFV1'];
const SEGMENT_MUXER: Partial<Record<MediaContainer, { muxer: string; extension: string }>> = {
  MP4: { muxer: 'mp4', extension: '.mp4' },
  MOV: { muxer: 'mov', extension: '.mov' },
  MPEGTS: { muxer: 'mpegts', extension: '.ts' },
};

/**
 * The audio pass is written as MOV: its edit list keeps the encoder's priming (AAC's first 1024
 * samples) out of the presentation, so the join copies audio that starts where the picture does.
 * Matroska, used before, stores no priming for AAC: the priming frame was played, and every split
 * output's audio came out one AAC frame (21.3 ms at 48 kHz) late, its last 13 ms cut by the join.
 */
const AUDIO_PASS_EXTENSION = '.mov';

/** The filter names in a graph (labels and option values skipped). */
export function filterNames(graph: string): string[] {
  const names: string[] = [];
  for (const m of graph.matchAll(/(?:^|[,;\]])\s*([a-z][a-z0-9_]*)(?==|,|;|\[|$)/g)) names.push(m[1]!);
  return names;
}

export interface SegmentationInput {
  segmentSeconds: number;
  /** The range: where it starts in the source (seconds) and its length. */
  startS: number;
  durationS: number;
  /** The source's input options of the whole range (the audio pass uses them). */
  rangeInputArgs: string[];
  outFps: Rational;
  codec: OutputCodec;
  container: MediaContainer;
  /** The filter chain (comma-joined stages) and whether there is an analysis pass. */
  chain: string;
  analysis: boolean;
  parts: { streams: string[]; video: string[]; muxer: string[] };
}

/**
 * The segmented form of a plan, or undefined (one job). Ranges no longer than `segmentSeconds`
 * (or `segmentSeconds` 0) stay one job without a note; a longer range that cannot be split gets
 * a note saying why.
 */
export function planSegments(b: PlanBuilder, x: SegmentationInput): SegmentedPlan | undefined {
  if (!(x.segmentSeconds > 0) || x.durationS <= x.segmentSeconds) return undefined;
  const oneJob = (field: string, note: string) => {
    b.note(field, `segments of ${x.segmentSeconds} s`, 'one job', note);
    return undefined;
  };
  const names = filterNames(x.chain);
  for (const name of names) {
    const reason = ONE_JOB_FILTERS[name];
    if (reason) return oneJob(reason.field, reason.note);
  }
  if (x.analysis) return oneJob('filters.stabilizer', ONE_JOB_FILTERS.vidstabdetect!.note);
  const unknown = names.find((n) => !(n in FILTER_CONTEXT));
  if (unknown) return oneJob('filters', `the filter ${unknown} is not known to give the same frames when split, so the video is processed as one job`);
  if (!JOINABLE_CODECS.includes(x.codec))
    return oneJob('encodingConfiguration.codec', `${x.codec} segments are not joined here (GOP and buffer rules across a join), so the video is processed as one job`);
  const muxer = SEGMENT_MUXER[x.container];
  if (!muxer) return oneJob('container', `${x.container} files are not joined here, so the video is processed as one job`);
  if (!b.src.fpsKnown) return oneJob('source', 'the source frame rate is unknown, so segment boundaries cannot be placed on frames; the video is processed as one job');
  const shape = unsplittableShape(b.src);
  if (shape) return oneJob('source', `${shape}, so the video is processed as one job`);

  const srcFps = b.src.fps;
  const grid = lcmOfDurations({ num: srcFps.den, den: srcFps.num }, { num: x.outFps.den, den: x.outFps.num });
  const gridS = grid.num / grid.den;
  let beforeS = 0;
  let afterS = 0;
  for (const name of names) {
    const c = FILTER_CONTEXT[name]!;
    beforeS = Math.max(beforeS, c.beforeS ?? 0, (c.before * srcFps.den) / srcFps.num);
    afterS = Math.max(afterS, (c.after * srcFps.den) / srcFps.num);
  }
  const steps = (s: number) => Math.max(0, Math.ceil(s / gridS - 1e-9));
  const totalSteps = Math.floor(x.durationS / gridS + 1e-9);
  const count = Math.ceil(x.durationS / x.segmentSeconds);
  const bounds: number[] = [0];
  for (let k = 1; k < count; k++) {
    const step = Math.round((k * totalSteps) / count);
    if (step > 0 && step < totalSteps && step > bounds.at(-1)!) bounds.push(step);
  }
  if (bounds.length < 2) {
    return oneJob(
      'source',
      `segment boundaries fall on a grid of ${gridS.toFixed(3)} s (where source and output frames meet), too coarse for ${x.segmentSeconds} s segments; the video is processed as one job`,
    );
  }
  const leadSteps = steps(beforeS);
  const tailSteps = steps(afterS);
  const halfFrame = x.outFps.den / x.outFps.num / 2;
  const segments: PlanSegment[] = bounds.map((step, index) => {
    const last = index === bounds.length - 1;
    const startS = (step * grid.num) / grid.den;
    const endS = last ? x.durationS : (bounds[index + 1]! * grid.num) / grid.den;
    const lead = (Math.min(leadSteps, step) * grid.num) / grid.den;
    const tail = last ? 0 : Math.min((tailSteps * grid.num) / grid.den, x.durationS - endS);
    const seekS = x.startS + startS - lead;
    const inputArgs = [...(seekS > 0 ? ['-ss', secondsArg(seekS, 'floor')] : []), '-t', secondsArg(lead + (endS - startS) + tail)];
    const cutStart = lead > 0 ? lead - halfFrame : 0;
    const cutEnd = last ? lead + (endS - startS) : lead + (endS - startS) - halfFrame;
    const trim = `trim=${cutStart > 0 ? `start=${secondsArg(cutStart)}:` : ''}end=${secondsArg(cutEnd)},setpts=PTS-STARTPTS`;
    return { index, startS, durationS: endS - startS, inputArgs, filterGraph: `[0:v:0]${x.chain},${trim}[vout]` };
  });
  b.note(
    'processing',
    'one job',
    `${segments.length} segments`,
    `processed as ${segments.length} segments of about ${Math.round(x.durationS / segments.length)} s in parallel (boundaries on exact frames; ${lead(leadSteps, gridS)} decoded before each one for the filters that read earlier frames), joined without re-encoding; the audio is encoded once over the whole range`,
  );
  const tag = tagArgs(x.parts.video);
  const hasAudio = x.parts.streams.includes('0:a?');
  return {
    segmentSeconds: x.segmentSeconds,
    segments,
    leadInS: (leadSteps * grid.num) / grid.den,
    tailS: (tailSteps * grid.num) / grid.den,
    gridS,
    segmentArgs: segmentOutputArgs(x.parts.video, muxer.muxer),
    seamSegmentArgs: segmentOutputArgs(withoutSeamPulse(x.parts.video), muxer.muxer),
    segmentExtension: muxer.extension,
    ...(hasAudio ? { audio: { inputArgs: x.rangeInputArgs, args: ['-vn', ...x.parts.streams, '-f', 'mov'], extension: AUDIO_PASS_EXTENSION } } : {}),
    joinArgs: ['-map', '0:v:0', ...(hasAudio ? ['-map', '1:a?'] : []), '-c', 'copy', ...tag, ...x.parts.muxer],
  };
}

/**
 * The greatest difference between where the audio and the video start that a split may ignore:
 * one AAC frame at 44.1 kHz. Segments and the audio pass each start at the range's start, so a
 * larger offset would come out of the join as that much audio ahead of or behind the picture.
 */
export const MAX_SPLIT_AV_START_OFFSET_MS = 23;

/** Why a source's shape keeps a long plan one job (a phrase for the note), or undefined when it may be split. */
function unsplittableShape(src: SourceFacts): string | undefined {
  if (!seeksExactly(src)) {
    return `the source's container (${src.containerName ?? 'unknown'}) cannot be sought exactly to a segment's start`;
  }
  if (src.frameRateMode === undefined) return 'the source was ingested before its frame-rate mode was recorded';
  if (src.frameRateMode === 'VARIABLE') return 'the source has a variable frame rate, so no boundary grid falls on its frames';
  if (src.hasAudio) {
    if (src.audioStartMs === undefined) return "the source was ingested before its audio's start was recorded";
    const offset = Math.abs(src.audioStartMs - src.videoStartMs);
    if (offset > MAX_SPLIT_AV_START_OFFSET_MS)
      return `the source's audio starts ${offset} ms ${src.audioStartMs > src.videoStartMs ? 'after' : 'before'} its video, which the separately encoded audio would lose`;
  }
  return undefined;
}

/** Everything after a segment's video map: no audio, subtitles or data, the encoder, the segment muxer. */
function segmentOutputArgs(video: string[], muxer: string): string[] {
  return ['-an', '-sn', '-dn', ...video, '-max_muxing_queue_size', '4096', '-f', muxer];
}

/**
 * x264's quantiser for the first frame of every segment after the first: that of a P-frame (a
 * zone on frame 0 whose bit factor undoes x264's I/P ratio, 1.4), not the lower one of an
 * I-frame. The frame is an IDR frame only because a segment starts there; at the default preset
 * it came out 2 dB better than its neighbours (a clean test pattern), a pulse of sharpness at
 * every seam; with the zone 0.3 dB (docs/processing.md "Seams"). The first segment starts the
 * output as the unsplit encode does. x265 ignores zones and `ipratio` on the first frame of an
 * encode in CRF mode, so HEVC segments keep the pulse.
 */
function withoutSeamPulse(video: string[]): string[] {
  if (video[video.indexOf('-c:v') + 1] !== 'libx264') return video;
  const zone = 'zones=0,0,b=0.714';
  const i = video.indexOf('-x264-params');
  if (i < 0) return [...video, '-x264-params', zone];
  return [...video.slice(0, i + 1), `${video[i + 1]}:${zone}`, ...video.slice(i + 2)];
}

function lead(steps: number, gridS: number): string {
  return steps === 0 ? 'nothing' : `${(steps * gridS).toFixed(2)} s`;
}

/** The video stream tag of the encoder arguments (`-tag:v hvc1`), which a stream copy must repeat. */
/** The sample entry of the encode (and the strictness that lets the MOV muxer keep it), for the join. */
function tagArgs(video: string[]): string[] {
  const i = video.indexOf('-tag:v');
  const strict = video.indexOf('-strict');
  return [...(i >= 0 ? ['-tag:v', video[i + 1]!] : []), ...(strict >= 0 ? ['-strict', video[strict + 1]!] : [])];
}

/** The least common multiple of two durations a/b and c/d (reduced): lcm(a, c) / gcd(b, d). */
function lcmOfDurations(x: Rational, y: Rational): Rational {
  const rx = reduce(x);
  const ry = reduce(y);
  const num = (rx.num / gcd(rx.num, ry.num)) * ry.num;
  const den = gcd(rx.den, ry.den);
  const g = gcd(num, den);
  return { num: num / g, den: den / g };
}
