/**
 * The output checker: what a job produced, judged from the files (docs/processing.md, "Checking
 * an output"). Both files are decoded to tiny grey pictures (16x12, every frame at its own time,
 * nothing dropped or repeated by the decoder) and each output frame is matched to the source
 * frame it shows: the closest picture (mean removed, so a colour or level change does not move
 * the match) among the source frames within a few frames of where the output frame should be.
 * From that it reports:
 * - the frame count, against the planned one;
 * - which source frame each output frame shows; at the source's own frame rate, frames skipped
 *   (dropped) and frames shown twice in a row (repeated);
 * - presentation times that do not increase;
 * - whether the audio is in step with the picture: the output's frames are the source's moved by
 *   one shift, and the audio must start where the source's audio moved by that shift starts
 *   (audio before the first frame cut), within one audio frame of the output's audio codec; and
 *   end where it would end in step (no later than the last frame), within one audio frame (the
 *   decoded samples, not the container's duration: an MPEG-TS's is estimated short);
 * - where the audio's content is: both audios decoded to 8 kHz mono from their files' starts and
 *   the output's matched to the source's (normalised cross-correlation, 0.1 s each side of in
 *   step, over up to 10 s); more than 2 ms from the picture's shift is a problem (an encoder's
 *   priming played as sound: 21.3 ms late with its start stored in step). A sound that matches
 *   alike at several lags (silence, a pure tone) gives no verdict;
 * - the scanning (with the field order), pixel format, bit depth, codec profile, frame rate, size
 *   and colour tags against what was promised
 *   (`expected`, the applied output's facts).
 * `problems` lists each finding in words; an empty list is a pass. Used by the tests and by
 * `npm run check-output -- <source> <output>`.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { MediaBinaries } from './binaries';
import { probeFromFfprobe, type Scanning } from './probe';
import { runMedia } from './runner';

const W = 16;
const H = 12;
/** Audio is compared at this rate (mono): 0.125 ms steps. */
const AUDIO_RATE = 8000;
/** Audio compared: at most this much of the output's, seconds. */
const AUDIO_WINDOW_S = 10;
/** How far from in step the audio's content is looked for, each side, seconds. */
const AUDIO_SEARCH_S = 0.1;
/** The audio's content may be this far from in step with the picture, seconds (a lossy encode keeps it to the sample). */
export const AUDIO_CONTENT_TOLERANCE_S = 0.002;
/** Source frames searched each side of where an output frame should be. */
const SEARCH = 4;

export interface OutputCheckExpectation {
  /** The frames the plan made (plan.output.frames). */
  frames?: number;
  /** Where the output starts in the source, seconds from the source file's start (plan.output.startMs / 1000 on the video's grid). */
  startS?: number;
  /** Frames may be dropped or repeated (a frame-rate conversion, a filter that changes timing): only their order is checked. */
  timingChanged?: boolean;
  scanning?: Scanning;
  pixelFormat?: string;
  /** Bits per sample as the file is read (the probe's primaryBitDepth). */
  bitDepth?: number;
  /** The codec profile as ffprobe names it (`High`, `HQ`, `DNXHR SQ`). */
  codecProfile?: string;
  /** `25:1`, `30000:1001`. */
  frameRate?: string;
  /** The output keeps a variable frame rate: `frameRate` is an average (of the whole source), checked within 5 %. */
  variableRate?: boolean;
  width?: number;
  height?: number;
  /** ffprobe's names: `bt709`, `smpte170m`, `tv`... */
  colorSpace?: string;
  colorPrimaries?: string;
  colorTransfer?: string;
  colorRange?: string;
}

export interface OutputCheckReport {
  outputFrames: number;
  /** For each output frame, the index of the source frame it shows (-1 when nothing near matched). */
  sourceFrameOf: number[];
  /** Source frames between the first and the last one shown that no output frame shows (same-rate outputs). */
  dropped: number[];
  /** Output frames that show the same source frame as the frame before them. */
  repeated: number[];
  /** Output frames whose presentation time is not after the one before. */
  nonIncreasing: number[];
  /** Audio start minus first frame, seconds: in the output, and in step with the picture. */
  audioOffset?: { output: number; expected: number };
  /** Audio end minus first frame, seconds (the decoded samples): in the output, and in step with the picture (no later than the last frame's end). */
  audioEnd?: { output: number; expected: number };
  /**
   * How late the audio's content is against the picture, seconds (negative: early): the lag at
   * which the decoded output audio best matches the source's, minus the picture's. Absent when
   * the audio cannot tell (silence, a pure tone: several lags match alike).
   */
  audioContentLate?: number;
  problems: string[];
}

/** Every frame of the first video stream as 16x12 grey pictures with their mean removed. */
async function decode(bins: MediaBinaries, file: string, work: string, name: string): Promise<Float64Array[]> {
  const raw = path.join(work, `${name}.gray`);
  await runMedia(bins.ffmpeg, ['-y', '-i', file, '-map', '0:v:0', '-fps_mode', 'passthrough', '-vf', `scale=${W}:${H}:flags=area,format=gray`, '-f', 'rawvideo', raw], { tool: 'ffmpeg' });
  const bytes = await readFile(raw);
  const pictures: Float64Array[] = [];
  for (let at = 0; at + W * H <= bytes.length; at += W * H) {
    const p = new Float64Array(W * H);
    let mean = 0;
    for (let i = 0; i < W * H; i++) mean += p[i] = bytes[at + i]!;
    mean /= W * H;
    for (let i = 0; i < W * H; i++) p[i]! -= mean;
    pictures.push(p);
  }
  return pictures;
}

/**
 * The first audio stream as mono samples at AUDIO_RATE from the file's start (ffmpeg's time 0):
 * silence before the audio starts is filled in, so sample i plays at i / AUDIO_RATE.
 */
async function decodeAudio(bins: MediaBinaries, file: string, work: string, name: string): Promise<Float32Array> {
  const raw = path.join(work, `${name}.pcm`);
  await runMedia(bins.ffmpeg, ['-y', '-i', file, '-map', '0:a:0', '-af', `aresample=${AUDIO_RATE}:first_pts=0`, '-ac', '1', '-f', 'f32le', raw], { tool: 'ffmpeg' });
  const bytes = await readFile(raw);
  return new Float32Array(bytes.buffer, bytes.byteOffset, Math.floor(bytes.length / 4));
}

/**
 * The lag (samples) within `from..to` at which `out[n]` best matches `src[n - lag]` (normalised
 * correlation over `out[first..first + count)`), or undefined when no lag stands out: the best
 * correlation is weak, or another lag more than a millisecond away matches nearly as well.
 */
function bestLag(src: Float32Array, out: Float32Array, first: number, count: number, from: number, to: number): number | undefined {
  const srcEnergy = new Float64Array(src.length + 1);
  for (let i = 0; i < src.length; i++) srcEnergy[i + 1] = srcEnergy[i]! + src[i]! * src[i]!;
  const end = Math.min(out.length, first + count);
  let outEnergy = 0;
  for (let n = first; n < end; n++) outEnergy += out[n]! * out[n]!;
  if (!(outEnergy > 0)) return undefined;
  const scores: { lag: number; r: number }[] = [];
  for (let lag = from; lag <= to; lag++) {
    const lo = Math.max(first, lag);
    const hi = Math.min(end, src.length + lag);
    if (hi <= lo) continue;
    let dot = 0;
    for (let n = lo; n < hi; n++) dot += out[n]! * src[n - lag]!;
    const energy = srcEnergy[hi - lag]! - srcEnergy[lo - lag]!;
    if (energy > 0) scores.push({ lag, r: dot / Math.sqrt(energy * outEnergy) });
  }
  const best = scores.reduce<{ lag: number; r: number } | undefined>((a, x) => (!a || x.r > a.r ? x : a), undefined);
  if (!best || best.r < 0.5) return undefined;
  const apart = AUDIO_RATE / 1000;
  const rival = Math.max(-1, ...scores.filter((x) => Math.abs(x.lag - best.lag) > apart).map((x) => x.r));
  return rival > 0.9 * best.r ? undefined : best.lag;
}

/**
 * The output's audio against the source's, both as decoded from their files' starts (`shift`:
 * where a source time is in the output, file start to file start; `videoStart`, `videoEnd`: the
 * output's first frame and the end of its last, from the output's start): where the audio ends
 * against where in-step audio would (the source's end moved, no later than the picture's end),
 * relative to the first frame; and how late its content is (bestLag against the shift), over the
 * first AUDIO_WINDOW_S from the first frame.
 */
function audioContent(src: Float32Array, out: Float32Array, at: { shift: number; videoStart: number; videoEnd: number }): { end: { output: number; expected: number }; late?: number } {
  const end = { output: out.length / AUDIO_RATE - at.videoStart, expected: Math.min(src.length / AUDIO_RATE + at.shift, at.videoEnd) - at.videoStart };
  const inStep = Math.round(at.shift * AUDIO_RATE);
  const search = AUDIO_SEARCH_S * AUDIO_RATE;
  const lag = bestLag(src, out, Math.max(0, Math.ceil(at.videoStart * AUDIO_RATE)), AUDIO_WINDOW_S * AUDIO_RATE, inStep - search, inStep + search);
  return lag === undefined ? { end } : { end, late: lag / AUDIO_RATE - at.shift };
}

function distance(a: Float64Array, b: Float64Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d += Math.abs(a[i]! - b[i]!);
  return d / a.length;
}

interface StreamFacts {
  codec_type?: string;
  codec_name?: string;
  sample_rate?: string;
  profile?: string;
  start_time?: string;
  pix_fmt?: string;
  r_frame_rate?: string;
  avg_frame_rate?: string;
  width?: number;
  height?: number;
  color_space?: string;
  color_primaries?: string;
  color_transfer?: string;
  color_range?: string;
}

const STREAM_ENTRIES = 'codec_type,codec_name,sample_rate,profile,start_time,pix_fmt,r_frame_rate,avg_frame_rate,width,height,color_space,color_primaries,color_transfer,color_range';

interface Read {
  streams: StreamFacts[];
  /** Presentation times (seconds) of every frame of the first video stream, as ffprobe reads them (best effort). */
  times: number[];
  /** The file's start (ffmpeg's time 0), seconds. */
  start: number;
  /** ffprobe's JSON. */
  stdout: string;
}

/**
 * One ffprobe run on a file: its streams, and the frames of all of them (the first video
 * stream's times kept). With `probe`, also the format and every stream fact, and each frame's
 * scanning flags: all `probeFromFfprobe` needs, so the file is not probed again.
 */
async function read(bins: MediaBinaries, file: string, probe: boolean): Promise<Read> {
  const args = probe
    ? ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', '-show_entries', 'frame=stream_index,best_effort_timestamp_time,interlaced_frame,top_field_first', file]
    : ['-v', 'error', '-show_entries', `format=start_time:stream=index,${STREAM_ENTRIES}:frame=stream_index,best_effort_timestamp_time`, '-of', 'json', file];
  const { stdout } = await runMedia(bins.ffprobe, args, { tool: 'ffprobe', maxStdoutBytes: 256 * 1024 * 1024 });
  const data = JSON.parse(stdout) as {
    format?: { start_time?: string };
    streams?: (StreamFacts & { index?: number })[];
    frames?: { stream_index?: number; best_effort_timestamp_time?: string }[];
  };
  const streams = data.streams ?? [];
  // The first video stream (`-select_streams v:0`); frames without a time are left out.
  const video = streams.find((s) => s.codec_type === 'video');
  const times = (data.frames ?? [])
    .filter((f) => video !== undefined && f.stream_index === video.index && /^-?\d/.test(f.best_effort_timestamp_time ?? ''))
    .map((f) => Number(f.best_effort_timestamp_time));
  return { streams, times, start: Number(data.format?.start_time ?? 0) || 0, stdout };
}

const rate = (r: string | undefined) => {
  const [n, d] = String(r).split('/').map(Number);
  return n && d ? n / d : 0;
};

/**
 * One audio frame of a stream, seconds: what a stream copy can cut to (AAC 1024 samples, MPEG
 * audio 1152, AC-3 1536; 21.3 ms for AAC at 48 kHz, 42.7 ms at 24 kHz), at least 24 ms (an
 * encoder's priming).
 */
function audioFrameSeconds(s: StreamFacts): number {
  const samples = ({ aac: 1024, mp2: 1152, mp3: 1152, ac3: 1536, eac3: 1536 } as Record<string, number>)[s.codec_name ?? ''];
  const rate = Number(s.sample_rate);
  return Math.max(0.024, samples && rate > 0 ? samples / rate : 0);
}

/** Checks `output` against `source` (see the module comment). */
export async function checkOutput(bins: MediaBinaries, source: string, output: string, expected: OutputCheckExpectation = {}): Promise<OutputCheckReport> {
  const work = await mkdtemp(path.join(os.tmpdir(), 'vidmill-check-'));
  try {
    // Four processes: for each file, one ffprobe (its streams and frame times; for the output, its probe too) and one decode.
    const [srcRead, outRead, srcPictures, outPictures] = await Promise.all([
      read(bins, source, false),
      read(bins, output, true),
      decode(bins, source, work, 'source'),
      decode(bins, output, work, 'output'),
    ]);
    const src = { times: srcRead.times.slice(0, srcPictures.length), pictures: srcPictures };
    const out = { times: outRead.times.slice(0, outPictures.length), pictures: outPictures };
    const [srcStreams, outStreams] = [srcRead.streams, outRead.streams];
    const outProbe = await probeFromFfprobe(bins, output, outRead.stdout, { frames: true });
    const problems: string[] = [];
    const n = out.pictures.length;
    if (expected.frames !== undefined && n !== expected.frames) problems.push(`${n} frames, ${expected.frames} planned`);

    // The first output frame: the closest source picture near the expected start (anywhere when not given).
    const nearestByTime = (t: number) => {
      let best = 0;
      for (let i = 1; i < src.times.length; i++) if (Math.abs(src.times[i]! - t) < Math.abs(src.times[best]! - t)) best = i;
      return best;
    };
    const bestAmong = (picture: Float64Array, from: number, to: number) => {
      let best = -1;
      let bestD = Infinity;
      for (let j = Math.max(0, from); j <= Math.min(src.pictures.length - 1, to); j++) {
        const d = distance(picture, src.pictures[j]!);
        if (d < bestD - 1e-9) [best, bestD] = [j, d];
      }
      return best;
    };
    const steps = src.times
      .slice(1)
      .map((t, i) => t - src.times[i]!)
      .filter((d) => d > 0)
      .sort((a, b) => a - b);
    /** The source's usual frame duration (the median step). */
    const step = steps[Math.floor(steps.length / 2)] ?? 1 / 25;
    const sourceFrameOf: number[] = [];
    if (n > 0 && src.pictures.length > 0) {
      const guess = expected.startS !== undefined ? nearestByTime(expected.startS) : 0;
      const first = expected.startS !== undefined ? bestAmong(out.pictures[0]!, guess - SEARCH, guess + SEARCH) : bestAmong(out.pictures[0]!, 0, src.pictures.length - 1);
      sourceFrameOf.push(first);
      // Followed frame by frame: each output frame is looked for where the one before it was,
      // moved on by the time between them in source frames (so a gap or a repeat does not
      // throw the rest off).
      for (let i = 1; i < n; i++) {
        const previous = sourceFrameOf[i - 1]!;
        const at = (previous < 0 ? 0 : previous) + Math.max(0, Math.round((out.times[i]! - out.times[i - 1]!) / step));
        sourceFrameOf.push(bestAmong(out.pictures[i]!, at - SEARCH, at + SEARCH));
      }
    }
    const repeated: number[] = [];
    const dropped: number[] = [];
    for (let i = 1; i < sourceFrameOf.length; i++) {
      const [a, b] = [sourceFrameOf[i - 1]!, sourceFrameOf[i]!];
      if (b === a) repeated.push(i);
      if (b < a) problems.push(`output frame ${i} shows source frame ${b}, before frame ${a} shown by the frame before it`);
      if (!expected.timingChanged) for (let s = a + 1; s < b; s++) dropped.push(s);
    }
    if (!expected.timingChanged) {
      if (repeated.length) problems.push(`${repeated.length} output frames repeat the frame before them (output frames ${repeated.slice(0, 10).join(', ')})`);
      if (dropped.length) problems.push(`${dropped.length} source frames are not shown (source frames ${dropped.slice(0, 10).join(', ')})`);
    }
    const nonIncreasing: number[] = [];
    for (let i = 1; i < out.times.length; i++) if (!(out.times[i]! > out.times[i - 1]!)) nonIncreasing.push(i);
    if (nonIncreasing.length) problems.push(`presentation times do not increase at output frames ${nonIncreasing.slice(0, 10).join(', ')}`);

    // Audio against the picture: the output's video is the source's moved by a shift (the
    // median over the frames that are neither repeats nor repeated), and its audio must be moved
    // by the same shift; audio before the output's first frame is cut.
    let audioOffset: OutputCheckReport['audioOffset'];
    let audioEnd: OutputCheckReport['audioEnd'];
    let audioContentLate: number | undefined;
    const srcAudio = srcStreams.find((s) => s.codec_type === 'audio');
    const outAudio = outStreams.find((s) => s.codec_type === 'audio');
    const shifts: number[] = [];
    for (let i = 0; i < sourceFrameOf.length; i++) {
      const s = sourceFrameOf[i]!;
      if (s < 0 || (i > 0 && sourceFrameOf[i - 1] === s) || sourceFrameOf[i + 1] === s) continue;
      shifts.push(out.times[i]! - src.times[s]!);
    }
    shifts.sort((a, b) => a - b);
    const shift = shifts[Math.floor(shifts.length / 2)];
    if (srcAudio && outAudio && shift !== undefined) {
      const outVideoStart = out.times[0] ?? 0;
      const inStep = Number(srcAudio.start_time ?? 0) + shift;
      const expectedStart = Math.max(inStep, outVideoStart);
      audioOffset = { output: Number(outAudio.start_time ?? 0) - outVideoStart, expected: expectedStart - outVideoStart };
      // Audio cut where the output begins may start up to a frame before its first frame (a
      // variable-rate source's first frame in a range falls anywhere after the cut).
      const earliest = Math.max(inStep, outVideoStart - step) - outVideoStart;
      const slack = audioFrameSeconds(outAudio);
      if (audioOffset.output < earliest - slack || audioOffset.output > audioOffset.expected + slack) {
        problems.push(`the audio starts ${audioOffset.output.toFixed(3)} s after the first frame; in step with the picture it would start ${audioOffset.expected.toFixed(3)} s after it`);
      }
      const [srcPcm, outPcm] = await Promise.all([decodeAudio(bins, source, work, 'source'), decodeAudio(bins, output, work, 'output')]);
      const outSteps = out.times.slice(1).map((t, i) => t - out.times[i]!);
      const lastFrameEnd = (out.times.at(-1) ?? outVideoStart) + (outSteps.sort((a, b) => a - b)[Math.floor(outSteps.length / 2)] ?? step);
      const content = audioContent(srcPcm, outPcm, {
        shift: shift - outRead.start + srcRead.start,
        videoStart: outVideoStart - outRead.start,
        videoEnd: lastFrameEnd - outRead.start,
      });
      audioEnd = content.end;
      if (audioEnd.output < audioEnd.expected - slack || audioEnd.output > audioEnd.expected + slack) {
        problems.push(`the audio ends ${audioEnd.output.toFixed(3)} s after the first frame; in step with the picture it would end ${audioEnd.expected.toFixed(3)} s after it`);
      }
      if (content.late !== undefined) {
        audioContentLate = content.late;
        // A frame-rate conversion moves frames by up to a frame: the picture's shift is known to that.
        const tolerance = expected.timingChanged ? Math.max(AUDIO_CONTENT_TOLERANCE_S, step) : AUDIO_CONTENT_TOLERANCE_S;
        if (Math.abs(content.late) > tolerance) {
          problems.push(`the audio's content is ${(content.late * 1000).toFixed(1)} ms ${content.late > 0 ? 'late' : 'early'} against the picture`);
        }
      }
    } else if (srcAudio && !outAudio) {
      problems.push('the source has audio, the output none');
    }

    // Tags against what was promised.
    const v = outStreams.find((s) => s.codec_type === 'video') ?? {};
    const tag = (what: string, want: string | number | undefined, got: string | number | undefined) => {
      if (want !== undefined && String(want) !== String(got)) problems.push(`${what} is ${got ?? 'not tagged'}, ${want} promised`);
    };
    tag('the scanning', expected.scanning, outProbe.metadata.scanning?.metadata ?? 'PROGRESSIVE');
    tag('the pixel format', expected.pixelFormat, v.pix_fmt);
    tag('the bit depth', expected.bitDepth, outProbe.metadata.primaryBitDepth);
    tag('the codec profile', expected.codecProfile, v.profile && v.profile !== 'unknown' ? v.profile : undefined);
    if (expected.frameRate !== undefined) {
      const [num, den] = expected.frameRate.split(':').map(Number);
      const got = outProbe.metadata.averageFrameRate?.rational;
      const tolerance = expected.variableRate ? 0.05 * (num! / den!) : 1e-3;
      if (!got || Math.abs(rate(got.replace(':', '/')) - num! / den!) > tolerance) problems.push(`the frame rate is ${got ?? 'unknown'}, ${expected.frameRate} promised`);
    }
    tag('the width', expected.width, v.width);
    tag('the height', expected.height, v.height);
    tag('the colour space', expected.colorSpace, v.color_space);
    tag('the colour primaries', expected.colorPrimaries, v.color_primaries);
    tag('the transfer characteristics', expected.colorTransfer, v.color_transfer);
    tag('the colour range', expected.colorRange, v.color_range);
    if (sourceFrameOf.includes(-1)) problems.push('some output frames match no source frame near their time');
    return {
      outputFrames: n,
      sourceFrameOf,
      dropped,
      repeated,
      nonIncreasing,
      ...(audioOffset ? { audioOffset } : {}),
      ...(audioEnd ? { audioEnd } : {}),
      ...(audioContentLate !== undefined ? { audioContentLate } : {}),
      problems,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
