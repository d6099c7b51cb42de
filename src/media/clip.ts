/**
 * The free clip: exactly `durationMs` (10 s) of the master, to the frame, in the master's codec
 * and container where ffmpeg can write them, re-encoding only what a cut by stream copy cannot
 * give ("smart cut").
 *
 * A stream copy can only start on a keyframe that opens a closed GOP, and can only end where the
 * frames before the cut are exactly the packets before it in decode order (B-frames are decoded
 * after the later frame they refer to). `planClipCut` reads the packet list of the window
 * (ffprobe, no decoding) and splits the window into at most three segments:
 *
 *   head  window start -> first clean keyframe      re-encoded (at most one GOP)
 *   body  that keyframe -> last clean cut point      copied
 *   tail  that point -> window end                  re-encoded (at most a few B-frames)
 *
 * Spliced segments are written as MPEG-TS (Annex B: parameter sets travel with every keyframe), a
 * single one as NUT, joined with the concat demuxer, then muxed with the window's audio (copied;
 * PCM cut to the sample) into the master's container. MP4/MOV get the `avc3`/`hev1` sample entries, which declare that parameter sets may
 * change in the stream (the re-encoded segments carry their own).
 *
 * Splicing is done for H.264, HEVC and MPEG-2, whose encoders ffmpeg has and whose streams join
 * cleanly in MPEG-TS. An intra-only master (ProRes, DNxHD, every frame a keyframe) is always a
 * plain copy. Any other long-GOP codec, a window with no clean keyframe (open GOPs), or a splice
 * whose frame count comes out wrong, is re-encoded whole at high quality in the master's codec
 * (H.264 when ffmpeg has no encoder for it). The plan and the argument builders (`planClipCut`,
 * `segmentSeek`, `clipSegmentArgs`, `clipMuxArgs`) are pure and tested without ffmpeg;
 * bench/media.ts measures the cost against a plain stream copy.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { MediaBinaries } from './binaries';
import { MediaError, MediaProcessError } from './errors';
import { weightedFraction } from '../shared/progress-eta';
import { countVideoPackets } from './probe';
import { runMedia } from './runner';

export const CLIP_MS = 10_000;

interface RunCommon {
  signal?: AbortSignal;
  /** Time limit of each ffmpeg run (the caller passes config.media.timeoutMs). */
  timeoutMs?: number;
}

/** The free clip's window: `clipMs` centred in the video, or the whole video when it is shorter. */
export function clipWindow(durationMs: number, clipMs = CLIP_MS): { startMs: number; durationMs: number } {
  if (!(durationMs > clipMs)) return { startMs: 0, durationMs: Math.max(0, durationMs || 0) };
  return { startMs: Math.floor((durationMs - clipMs) / 2), durationMs: clipMs };
}

/** Muxer and file extension of a container (the probe's `containerName`), for a clip in the same container. */
export function clipContainer(containerName: string | undefined): { format: string; extension: string } | undefined {
  const table: Record<string, { format: string; extension: string }> = {
    mov: { format: 'mov', extension: '.mov' },
    mp4: { format: 'mp4', extension: '.mp4' },
    m4a: { format: 'mp4', extension: '.mp4' },
    '3gp': { format: '3gp', extension: '.3gp' },
    '3g2': { format: '3g2', extension: '.3g2' },
    mj2: { format: 'mov', extension: '.mov' },
    matroska: { format: 'matroska', extension: '.mkv' },
    webm: { format: 'webm', extension: '.webm' },
    mpegts: { format: 'mpegts', extension: '.ts' },
    mxf: { format: 'mxf', extension: '.mxf' },
    avi: { format: 'avi', extension: '.avi' },
    mpeg: { format: 'vob', extension: '.mpg' },
    flv: { format: 'flv', extension: '.flv' },
    asf: { format: 'asf', extension: '.wmv' },
    ogg: { format: 'ogg', extension: '.ogv' },
  };
  return containerName ? table[containerName] : undefined;
}

// ---------------------------------------------------------------------------------------------
// The plan (pure)
// ---------------------------------------------------------------------------------------------

/** One video packet, in decode order; times in seconds. */
export interface VideoPacket {
  pts: number;
  /** Decode time, when the file states it. */
  dts?: number;
  key: boolean;
}

export interface ClipSegment {
  mode: 'copy' | 'encode';
  /** Presentation time of the segment's first frame in the master, seconds. */
  start: number;
  frames: number;
}

export interface ClipCutPlan {
  /** Duration of one frame, seconds (the median step between presentation times). */
  frameSeconds: number;
  /** Presentation time of the clip's first frame in the master, seconds. */
  start: number;
  /** Frames in the clip. */
  frames: number;
  /**
   * The clip's length, seconds: from its first frame to the frame after its last (the last plus
   * one frame at the clip's end of the master). Measured on the frames' own times, so a master of
   * variable frame rate gives a clip of the window's length, not `frames` x `frameSeconds`.
   */
  durationS: number;
  segments: ClipSegment[];
}

/**
 * Splits the window into copied and re-encoded segments. `packets` are the master's video
 * packets in decode order, from the keyframe at or before the window to at least a second past
 * it. `splice: false` allows only a plan that copies everything or encodes everything.
 */
export function planClipCut(packets: readonly VideoPacket[], window: { startMs: number; durationMs: number }, opts: { splice: boolean }): ClipCutPlan {
  const times = [...new Set(packets.map((p) => p.pts))].sort((a, b) => a - b);
  if (times.length === 0) throw new MediaError('the master has no video packets in the clip window');
  const steps = times
    .slice(1)
    .map((t, i) => t - times[i]!)
    .filter((d) => d > 0)
    .sort((a, b) => a - b);
  const f = steps[Math.floor(steps.length / 2)] ?? 1 / 25;
  const s = window.startMs / 1000;
  let first = times.findIndex((t) => t >= s - f / 2);
  if (first < 0) first = times.length - 1;
  // Indices into `times` below stay within it: first < length, frames <= length - first.
  const t0 = times[first]!;
  // The frames shown in the window, counted on their own times (at a constant rate: the window's
  // length in frames, rounded; at a variable one, however many fall in it).
  const until = t0 + window.durationMs / 1000 - f / 2;
  const frames = Math.max(1, times.filter((t) => t >= t0 && t < until).length);
  const tEnd = first + frames < times.length ? times[first + frames]! : times[times.length - 1]! + f;
  const inWindow = (a: number, b: number) => times.filter((t) => t >= a && t < b).length;
  const clean = (t: number) => cleanCutAt(packets, t);
  const durationS = tEnd - t0;
  const encodeAll: ClipCutPlan = { frameSeconds: f, start: t0, frames, durationS, segments: [{ mode: 'encode', start: t0, frames }] };
  const copyAll: ClipCutPlan = { frameSeconds: f, start: t0, frames, durationS, segments: [{ mode: 'copy', start: t0, frames }] };

  // The copy starts on the first keyframe in the window that opens a closed GOP.
  const entry = packets.find((p) => p.key && p.pts >= t0 - f / 2 && p.pts < tEnd - f / 2 && clean(p.pts));
  if (!entry) return encodeAll;
  const a = entry.pts;
  // It ends at the window's end when that cut is clean, else at the last clean point before it.
  let b: number | undefined = clean(tEnd) ? tEnd : undefined;
  if (b === undefined) {
    for (let i = first + frames - 1; i > 0 && times[i]! > a; i--) {
      if (clean(times[i]!)) {
        b = times[i]!;
        break;
      }
    }
  }
  const head = inWindow(t0, a);
  if (b === undefined) return encodeAll;
  const body = inWindow(a, b);
  const tail = frames - head - body;
  if (head === 0 && tail === 0) return copyAll;
  if (!opts.splice || body === 0) return encodeAll;
  const segments: ClipSegment[] = [];
  if (head > 0) segments.push({ mode: 'encode', start: t0, frames: head });
  segments.push({ mode: 'copy', start: a, frames: body });
  if (tail > 0) segments.push({ mode: 'encode', start: b, frames: tail });
  return { frameSeconds: f, start: t0, frames, durationS, segments };
}

/**
 * True when a stream copy can cut at `t`: in decode order, every packet before the cut shows
 * before `t` and every packet from it on at or after `t` (half a frame of tolerance is left to
 * the caller's times, which are the packets' own).
 */
export function cleanCutAt(packets: readonly VideoPacket[], t: number): boolean {
  const eps = 1e-6;
  let i = packets.findIndex((p) => p.pts >= t - eps);
  if (i < 0) i = packets.length;
  for (let j = 0; j < packets.length; j++) {
    const pts = packets[j]!.pts;
    if (j < i && pts >= t - eps) return false;
    if (j >= i && pts < t - eps) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Encoders (pure)
// ---------------------------------------------------------------------------------------------

/** What the clip needs to know of the master's video stream (ffprobe names). */
export interface ClipVideoStream {
  codec: string;
  /** The sample entry in MP4/MOV (`avc1`, `ai5q`...), as ffprobe names it. */
  codecTag?: string;
  pixFmt?: string;
  fieldOrder?: string;
  colorRange?: string;
  colorSpace?: string;
  colorTransfer?: string;
  colorPrimaries?: string;
}

/** Codecs whose re-encoded segments join copied ones cleanly in MPEG-TS. */
const SPLICEABLE = new Set(['h264', 'hevc', 'mpeg2video']);

/**
 * ffmpeg encoder arguments that reproduce the master's codec at high quality with its pixel
 * format, colour tags and field order; H.264 for a codec without an encoder here.
 * x264 CRF 16 and x265 CRF 18 at preset `fast`, MPEG-2 at quantiser 2 with closed GOPs.
 */
export function clipEncoderArgs(v: ClipVideoStream, encoders: ReadonlySet<string>): { codec: string; args: string[] } {
  const interlaced = v.fieldOrder && v.fieldOrder !== 'progressive' && v.fieldOrder !== 'unknown';
  const topFirst = v.fieldOrder === 'tt' || v.fieldOrder === 'bt';
  const known = (x: string | undefined) => x && x !== 'unknown' && x !== 'reserved';
  const tags: string[] = [];
  if (known(v.colorRange)) tags.push('-color_range', v.colorRange!);
  if (known(v.colorSpace)) tags.push('-colorspace', v.colorSpace!);
  if (known(v.colorTransfer)) tags.push('-color_trc', v.colorTransfer!);
  if (known(v.colorPrimaries)) tags.push('-color_primaries', v.colorPrimaries!);
  const pix = v.pixFmt ? ['-pix_fmt', v.pixFmt] : [];
  const fields = interlaced ? ['-flags', '+ildct+ilme', '-top', topFirst ? '1' : '0'] : [];
  const byCodec: Record<string, { encoder: string; args: string[] }> = {
    h264: { encoder: 'libx264', args: ['-preset', 'fast', '-crf', '16', ...fields] },
    hevc: { encoder: 'libx265', args: ['-preset', 'fast', '-crf', '18', '-x265-params', 'log-level=error'] },
    mpeg2video: {
      encoder: 'mpeg2video',
      args: ['-q:v', '2', '-sc_threshold', '1000000000', '-flags', interlaced ? '+cgop+ildct+ilme' : '+cgop', ...(interlaced ? ['-top', topFirst ? '1' : '0'] : [])],
    },
    mpeg4: { encoder: 'mpeg4', args: ['-q:v', '2'] },
    vp8: { encoder: 'libvpx', args: ['-crf', '8', '-b:v', '0'] },
    vp9: { encoder: 'libvpx-vp9', args: ['-crf', '18', '-b:v', '0', '-row-mt', '1'] },
    av1: { encoder: 'libsvtav1', args: ['-crf', '22', '-preset', '8'] },
    prores: { encoder: 'prores_ks', args: ['-profile:v', '3'] },
    mjpeg: { encoder: 'mjpeg', args: ['-q:v', '2'] },
    ffv1: { encoder: 'ffv1', args: ['-level', '3'] },
  };
  const own = byCodec[v.codec];
  if (own && encoders.has(own.encoder)) return { codec: v.codec, args: ['-c:v', own.encoder, ...own.args, ...pix, ...tags] };
  return { codec: 'h264', args: ['-c:v', 'libx264', ...byCodec.h264!.args, '-pix_fmt', 'yuv420p', ...tags] };
}

/** Seconds as ffmpeg reads them, rounded down to the microsecond (never past the frame). */
const sec = (s: number) => (Math.floor(Math.max(0, s) * 1e6) / 1e6).toFixed(6);

/** Where ffmpeg seeks for a segment: `input` before `-i`; `output`: what comes before this (from the input seek) is dropped. */
export interface SegmentSeek {
  input: number;
  output?: number;
}

/**
 * The seek of a segment. A seek lands at or before its time, but not always on the keyframe
 * just before: Matroska cues may index only some keyframes, and MPEG-TS or program streams have
 * no index at all (ffmpeg lands on a packet whose decode time is at or before the time).
 *
 * - A copy seeks a frame before its keyframe's decode time and drops every packet decoded
 *   before that keyframe (`output`, which ffmpeg compares with decode times when copying).
 * - An encode in an indexed file seeks to half a frame before its first frame: decoding starts
 *   at some keyframe before it and the frames before the seek time are dropped (ffmpeg rounds
 *   frame times to the frame rate there, which can move a stream that does not start on the
 *   file's start by up to half a frame).
 * - An encode in a file without an index seeks to just before the decode time of the keyframe
 *   at or before its first frame, and the decoded frames before it are dropped (`output`).
 */
export function segmentSeek(packets: readonly VideoPacket[], seg: ClipSegment, frameSeconds: number, indexed: boolean): SegmentSeek {
  const eps = 1e-6;
  const firstFrame = Math.max(0, seg.start - frameSeconds / 2);
  const keys = packets.filter((p) => p.key && p.pts <= seg.start + eps);
  const key = keys[keys.length - 1];
  if (seg.mode === 'copy') {
    const entry = packets.find((p) => p.key && Math.abs(p.pts - seg.start) < eps) ?? key;
    const decodeTime = entry ? (entry.dts ?? entry.pts) : seg.start;
    const input = Math.max(0, decodeTime - frameSeconds);
    return { input, output: decodeTime - frameSeconds / 2 - input };
  }
  if (indexed) return { input: firstFrame };
  if (!key) return { input: 0, output: firstFrame };
  const input = Math.max(0, (key.dts ?? key.pts) - 0.001);
  return { input, output: Math.max(0, firstFrame - input) };
}

/**
 * One segment of video only, exactly `seg.frames` frames: copied from its keyframe, or decoded
 * and encoded. Into MPEG-TS when segments are spliced (Annex B, parameter sets in the stream),
 * else into NUT (any codec, exact time bases).
 */
export function clipSegmentArgs(input: string, out: string, seg: ClipSegment, seek: SegmentSeek, o: { encode: string[]; format: 'mpegts' | 'nut' }): string[] {
  const args = ['-y'];
  if (seek.input > 0) args.push('-ss', sec(seek.input));
  args.push('-i', safePath(input), '-map', '0:v:0', '-frames:v', String(seg.frames));
  if (seg.mode === 'copy') {
    if (seek.output !== undefined && seek.output > 0) args.push('-ss', sec(seek.output));
    args.push('-c:v', 'copy');
  } else {
    // Frames before the segment are dropped by time in the stream's own time base (`trim`), and
    // the segment starts at time zero exactly: ffmpeg's own rounding of the first time to the
    // frame rate could put it a frame off for the concat demuxer.
    const trim = seek.output !== undefined && seek.output > 0 ? `trim=start=${sec(seek.output)},` : '';
    args.push('-vf', `${trim}setpts=PTS-STARTPTS`, ...o.encode, '-fps_mode', 'passthrough');
  }
  // MPEG-TS without its 1.4 s delay: a one-frame segment then still starts at zero for the
  // concat demuxer (ffprobe finds no start time in it).
  if (o.format === 'mpegts') args.push('-muxdelay', '0', '-muxpreload', '0');
  args.push('-an', '-sn', '-dn', '-f', o.format, safePath(out));
  return args;
}

/** The concat demuxer's list: each segment file with its exact duration (to the next segment's first frame, the last to the clip's end). */
export function clipConcatList(files: readonly string[], plan: Pick<ClipCutPlan, 'segments' | 'start' | 'durationS'>): string {
  const end = plan.start + plan.durationS;
  return concatDemuxerList(
    files,
    plan.segments.map((seg, i) => (plan.segments[i + 1]?.start ?? end) - seg.start),
  );
}

/** A list for ffmpeg's concat demuxer: each file quoted, with its exact duration when given (the next file starts there). */
export function concatDemuxerList(files: readonly string[], durationsS?: readonly number[]): string {
  return files.map((f, i) => `file '${f.replace(/'/g, "'\\''")}'\n${durationsS?.[i] !== undefined ? `duration ${durationsS[i].toFixed(6)}\n` : ''}`).join('');
}

export interface ClipMuxOptions {
  /** The concat list of the video segments. */
  concatList: string;
  master: string;
  plan: ClipCutPlan;
  /** Codecs of the master's audio streams, in order: PCM is decoded and written again (lossless, cut to the sample); the rest is copied. */
  audioCodecs: readonly string[];
  /** Muxer (`-f`); none lets ffmpeg choose by extension. */
  format?: string;
  /** Sample entry for MP4/MOV when the segments carry their own parameter sets (`avc3`, `hev1`). */
  videoTag?: string;
  /**
   * Seek the audio this much earlier and shift it back (a file without an index, where audio
   * packets may sit before the video packets of the same time).
   */
  audioMargin?: number;
}

/**
 * The final mux: the joined video segments with every audio stream of the window from the
 * master (copied packets before the window dropped, `-copypriorss 0`), the master's metadata,
 * cut to the clip's length. (`-frames:v` here would end the audio with the video's last packet.)
 */
export function clipMuxArgs(out: string, o: ClipMuxOptions): string[] {
  const { plan } = o;
  const args = ['-y', '-f', 'concat', '-safe', '0', '-i', safePath(o.concatList)];
  const margin = Math.min(o.audioMargin ?? 0, plan.start);
  if (plan.start > 0) args.push('-ss', sec(plan.start - margin));
  if (margin > 0) args.push('-itsoffset', `-${sec(margin)}`);
  args.push('-i', safePath(o.master), '-map', '0:v:0', '-map', '1:a?', '-c:v', 'copy');
  // ffmpeg's MOV muxer chooses the H.264 sample entry itself at the default strictness (AVC-Intra
  // for 10-bit frames of AVC-Intra sizes, whatever -tag:v says); `unofficial` lets it keep ours.
  if (o.videoTag) args.push('-tag:v', o.videoTag, ...(o.format === 'mov' && o.videoTag.startsWith('avc') ? ['-strict', 'unofficial'] : []));
  args.push('-c:a', 'copy');
  o.audioCodecs.forEach((codec, i) => {
    if (codec.startsWith('pcm_')) args.push(`-c:a:${i}`, codec);
  });
  args.push('-copypriorss:a', '0', '-t', sec(plan.durationS), '-map_metadata', '1', '-sn', '-dn');
  if (o.format) args.push('-f', o.format);
  args.push(safePath(out));
  return args;
}

/** A path ffmpeg will not mistake for an option. */
function safePath(p: string): string {
  return p.startsWith('-') ? `./${p}` : p;
}

// ---------------------------------------------------------------------------------------------
// Running it
// ---------------------------------------------------------------------------------------------

export interface CutClipOptions extends RunCommon {
  startMs: number;
  /** Default 10 000. */
  durationMs?: number;
  /** The input's container (`ProbeResult.metadata.containerName`); sets the muxer explicitly. */
  container?: string;
  /** Fraction of the cut done (0..1), after each ffmpeg run, weighted by its expected cost. */
  onProgress?: (fraction: number) => void;
}

/** Expected cost of the cut's runs in frame-encodes: reading packets, each segment (copying a frame costs about a twentieth of encoding it), the mux. */
export function clipRunCosts(plan: ClipCutPlan): number[] {
  return [5 + 0.02 * plan.frames, ...plan.segments.map((s) => s.frames * (s.mode === 'encode' ? 1 : 0.05)), 5 + 0.05 * plan.frames];
}

export interface ClipResult {
  path: string;
  /** The muxer used: the input's container, or `matroska` when that muxer refused the streams. */
  container: string | undefined;
  fellBack: boolean;
  /** `copy`: stream copy alone; `smart`: re-encoded head/tail around a copy; `encode`: the window re-encoded. */
  method: 'copy' | 'smart' | 'encode';
  /** The clip's video codec (the master's, unless ffmpeg has no encoder for it and it had to be re-encoded). */
  codec: string;
  frames: number;
  encodedFrames: number;
  /**
   * Where the clip really is in the master, ms from the file's start (to the microsecond): its
   * first frame's time (the window's start falls within half a frame of it) and the time of the
   * master's frame after its last.
   */
  startMs: number;
  endMs: number;
}

/** Demuxers that have no index: a seek lands on a decode time, not on a keyframe. */
const UNINDEXED = /^(mpegts|mpeg|mpegvideo|h264|hevc|m4v|mpeg1video|mpeg2video)$/;

export interface ClipSource {
  stream: ClipVideoStream;
  /** Codecs of the audio streams, in order. */
  audioCodecs: string[];
  /** Seeking lands on keyframes (see `segmentSeek`). */
  indexed: boolean;
  /** Video packets in decode order, from a keyframe at or before the window to a second past it. */
  packets: VideoPacket[];
}

/**
 * The first video stream and its packets around the window. Times are from the start of the
 * file (ffmpeg's `-ss` counts from there too; an MPEG-TS file's timestamps start at 1.4 s or
 * anywhere). A file without an index is read from further back until a keyframe before the
 * window is among the packets.
 */
export async function readClipPackets(bins: MediaBinaries, input: string, window: { startMs: number; durationMs: number }, opts: RunCommon = {}): Promise<ClipSource> {
  const ffprobe = (args: string[]) => runMedia(bins.ffprobe, ['-v', 'error', ...args, '-of', 'json', safePath(input)], { signal: opts.signal, timeoutMs: opts.timeoutMs, tool: 'ffprobe' });
  const head = JSON.parse(
    (await ffprobe(['-show_entries', 'format=start_time,format_name:stream=codec_type,codec_name,codec_tag_string,pix_fmt,field_order,color_range,color_space,color_transfer,color_primaries'])).stdout,
  ) as {
    streams?: Record<string, string>[];
    format?: { start_time?: string; format_name?: string };
  };
  const s = head.streams?.find((x) => x.codec_type === 'video');
  if (!s?.codec_name) throw new MediaError('the master has no video stream to cut a clip from');
  const audioCodecs = (head.streams ?? []).filter((x) => x.codec_type === 'audio').map((x) => x.codec_name ?? '');
  const indexed = !(head.format?.format_name ?? '').split(',').some((f) => UNINDEXED.test(f));
  const origin = Number(head.format?.start_time ?? 0) || 0;
  const from = window.startMs / 1000;
  const until = origin + from + window.durationMs / 1000 + 1;
  let packets: VideoPacket[];
  for (let back = indexed ? 0 : 2; ; back *= 2) {
    const start = Math.max(0, from - back);
    const interval = `${start > 0 ? sec(origin + start) : ''}%${sec(until)}`;
    const data = JSON.parse((await ffprobe(['-select_streams', 'v:0', '-show_entries', 'packet=pts_time,dts_time,flags', '-read_intervals', interval])).stdout) as {
      packets?: { pts_time?: string; dts_time?: string; flags?: string }[];
    };
    packets = [];
    for (const p of data.packets ?? []) {
      const pts = [p.pts_time, p.dts_time].map(Number).find(Number.isFinite);
      if (pts === undefined || p.flags?.includes('D')) continue;
      const dts = Number(p.dts_time);
      packets.push({ pts: pts - origin, ...(Number.isFinite(dts) ? { dts: dts - origin } : {}), key: Boolean(p.flags?.startsWith('K')) });
    }
    if (indexed || start === 0 || packets.some((p) => p.key && p.pts <= from + 1e-3)) break;
  }
  const stream: ClipVideoStream = {
    codec: s.codec_name,
    codecTag: s.codec_tag_string,
    pixFmt: s.pix_fmt,
    fieldOrder: s.field_order,
    colorRange: s.color_range,
    colorSpace: s.color_space,
    colorTransfer: s.color_transfer,
    colorPrimaries: s.color_primaries,
  };
  return { stream, audioCodecs, indexed, packets };
}

let encoderList: Promise<Set<string>> | undefined;
/** The encoders this ffmpeg has (asked once per process). */
function encodersOf(bins: MediaBinaries): Promise<Set<string>> {
  encoderList ??= runMedia(bins.ffmpeg, ['-hide_banner', '-encoders'], { tool: 'ffmpeg', rawArgs: true }).then(
    ({ stdout }) => new Set([...stdout.matchAll(/^\s*[VAS][A-Z.]{5}\s+(\S+)/gm)].map((m) => m[1]!)),
    (err) => {
      encoderList = undefined;
      throw err;
    },
  );
  return encoderList;
}

/**
 * The sample entry of the clip's video in MP4/MOV: spliced H.264/HEVC carry parameter sets in the
 * stream (`avc3`, `hev1`); a copied H.264 keeps the master's plain AVC entry (`avc1`/`avc3`), which
 * ffmpeg's MOV muxer would otherwise turn into AVC-Intra for a 10-bit 960x720 or 1920x1080 frame
 * (readers of AVC-Intra ignore the stream's own parameter sets: High 10 read as High 10 Intra). A
 * master that is AVC-Intra keeps the muxer's choice.
 */
export function clipSampleEntry(stream: Pick<ClipVideoStream, 'codec' | 'codecTag'>, spliced: boolean): string | undefined {
  if (spliced) return ({ h264: 'avc3', hevc: 'hev1' } as Record<string, string>)[stream.codec];
  if (stream.codec === 'h264' && (stream.codecTag === 'avc1' || stream.codecTag === 'avc3')) return stream.codecTag;
  return undefined;
}

/**
 * Cuts the clip into `outPath` in the input's container. Some muxers refuse streams the demuxer
 * of the same name reads (ffmpeg's MXF muxer takes only a few codecs); then the clip is written
 * as Matroska, which takes every codec, to `outPath` with the extension `.mkv`, and `fellBack`
 * says so.
 */
export async function cutClip(bins: MediaBinaries, input: string, outPath: string, opts: CutClipOptions): Promise<ClipResult> {
  const window = { startMs: opts.startMs, durationMs: opts.durationMs ?? CLIP_MS };
  await mkdir(path.dirname(outPath), { recursive: true });
  const run = (args: string[]) => runMedia(bins.ffmpeg, args, { signal: opts.signal, timeoutMs: opts.timeoutMs, tool: 'ffmpeg' });
  const { stream, audioCodecs, indexed, packets } = await readClipPackets(bins, input, window, opts);
  const encoder = clipEncoderArgs(stream, await encodersOf(bins));
  const splice = SPLICEABLE.has(stream.codec) && encoder.codec === stream.codec;
  const planned = planClipCut(packets, window, { splice });
  const format = clipContainer(opts.container)?.format;
  const work = `${outPath}.parts`;

  /** The video segments, joined and muxed with the audio into the container (Matroska when that muxer refuses). */
  const make = async (plan: ClipCutPlan): Promise<{ path: string; fellBack: boolean }> => {
    const costs = clipRunCosts(plan);
    const reached = (run: number) => opts.onProgress?.(weightedFraction(costs, run, 0));
    reached(1);
    const spliced = plan.segments.length > 1;
    // Encoders write MPEG-2/H.264/HEVC parameter sets into the stream only without a global
    // header, so encoded segments of these go through MPEG-TS; a copy goes through NUT untouched.
    const ts = plan.segments.some((seg) => seg.mode === 'encode') && SPLICEABLE.has(encoder.codec);
    const files = plan.segments.map((_, i) => path.join(work, `segment-${i}.${ts ? 'ts' : 'nut'}`));
    for (const [i, seg] of plan.segments.entries()) {
      await run(clipSegmentArgs(input, files[i]!, seg, segmentSeek(packets, seg, plan.frameSeconds, indexed), { encode: encoder.args, format: ts ? 'mpegts' : 'nut' }));
      reached(i + 2);
    }
    const concatList = path.join(work, 'segments.txt');
    await writeFile(concatList, clipConcatList(files, plan));
    const videoTag = format === 'mp4' || format === 'mov' ? clipSampleEntry(stream, spliced) : undefined;
    const mux = { concatList, master: input, plan, audioCodecs, audioMargin: indexed ? 0 : 1 };
    try {
      await run(clipMuxArgs(outPath, { ...mux, format, videoTag }));
      return { path: outPath, fellBack: false };
    } catch (err) {
      if (!(err instanceof MediaProcessError) || format === 'matroska') throw err;
      await rm(outPath, { force: true });
      const mkv = outPath.slice(0, outPath.length - path.extname(outPath).length) + '.mkv';
      await run(clipMuxArgs(mkv, { ...mux, format: 'matroska' }));
      return { path: mkv, fellBack: true };
    }
  };
  const result = (written: { path: string; fellBack: boolean }, plan: ClipCutPlan): ClipResult => {
    const encodedFrames = plan.segments.filter((s) => s.mode === 'encode').reduce((sum, s) => sum + s.frames, 0);
    const method = encodedFrames === 0 ? 'copy' : encodedFrames === plan.frames ? 'encode' : 'smart';
    const ms = (t: number) => Math.round(t * 1e6) / 1e3;
    return {
      ...written,
      container: written.fellBack ? 'matroska' : opts.container,
      method,
      codec: encodedFrames ? encoder.codec : stream.codec,
      frames: plan.frames,
      encodedFrames,
      startMs: ms(plan.start),
      endMs: ms(plan.start + plan.durationS),
    };
  };

  await mkdir(work, { recursive: true });
  try {
    const written = await make(planned);
    if (planned.segments.length === 1) return result(written, planned);
    // A splice that did not give the planned frames (a stream the plan misread) is redone whole.
    if (Math.abs((await countVideoPackets(bins, safePath(written.path), opts)) - planned.frames) <= 1) return result(written, planned);
    await rm(written.path, { force: true });
    const whole: ClipCutPlan = { ...planned, segments: [{ mode: 'encode', start: planned.start, frames: planned.frames }] };
    return result(await make(whole), whole);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
