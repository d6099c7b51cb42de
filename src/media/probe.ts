/**
 * Reads a video's technical metadata with ffprobe and maps it to the contract's
 * `VideoMetadata` (openapi/paths/videos.yaml), plus plain facts the ingestion needs.
 * Unknown values are left out, never null. `detectScanning` measures interlacing with the
 * `idet` filter on a bounded sample of frames (`scanning.heuristics`).
 *
 * The types here mirror the contract's schemas; the media module does not import
 * `generated/` (DESIGN.md: generated types stay at the edge). A test checks that the result
 * is assignable to the generated `VideoMetadata` type and valid against the schema.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { MediaBinaries } from './binaries';
import { MediaAbortedError, MediaError, MediaProcessError, MediaTimeoutError, UnsupportedMediaError } from './errors';
import { runMedia, stderrSummary } from './runner';

export type Scanning = 'PROGRESSIVE' | 'INTERLACED_TOP_FIRST' | 'INTERLACED_BOTTOM_FIRST';

export interface AspectRatio {
  /** Width divided by height, two decimals. */
  ratio?: number;
  /** `16:9`, `4:3`, `2.35:1`, ... */
  tag?: string;
}

export interface FrameRate {
  /** Frames per second, three decimals. */
  frameRate?: number;
  /** Exact rate, `30000:1001`. */
  rational?: string;
}

export interface VideoScanning {
  metadata?: Scanning;
  heuristics?: Scanning;
}

/** Same shape as the contract's `VideoMetadata`. */
export interface VideoMetadata {
  containerName?: string;
  longContainerName?: string;
  codecName?: string;
  longCodecName?: string;
  pixelFormatName?: string;
  primaryBitDepth?: number;
  frameWidth?: number;
  frameHeight?: number;
  displayAspectRatio?: AspectRatio;
  scanning?: VideoScanning;
  averageFrameRate?: FrameRate;
  durationInMillis?: number;
  totalFrames?: number;
  size?: number;
  videoStreamSize?: number;
  colorRangeName?: string;
  colorSpaceName?: string;
  colorTransferName?: string;
  colorPrimariesName?: string;
  hdrStandardName?: string;
}

export interface ProbeResult {
  metadata: VideoMetadata;
  /** Duration in milliseconds (0 when the file does not say). */
  durationMs: number;
  /** Coded frame size of the first video stream. */
  width: number;
  height: number;
  /** Always true: a file without a video stream is an UnsupportedMediaError. */
  hasVideo: boolean;
  hasAudio: boolean;
  /** Average frames per second (0 when unknown). */
  fps: number;
  /** ffprobe's demuxer names, e.g. `['mov', 'mp4', 'm4a', '3gp', '3g2', 'mj2']`. */
  formatNames: string[];
  /** When the video stream starts after the file's start (another stream starts earlier), in milliseconds (to the microsecond). */
  videoStartMs?: number;
  /**
   * When the first audio stream starts after the file's start, in milliseconds to the microsecond (0: with it).
   * Absent without audio, and in probes recorded before it was read (unknown).
   */
  audioStartMs?: number;
  /**
   * Whether frames come at a constant rate: VARIABLE when the stream's average rate differs from
   * its base rate (phones, screen recordings), beyond the field-rate doubling of interlaced video.
   * Absent in probes recorded before it was read (unknown).
   */
  frameRateMode?: 'CONSTANT' | 'VARIABLE';
  /** Where the file's timestamps start (the first stream's start), in milliseconds to the microsecond; 1400 for a typical MPEG-TS. */
  fileStartMs?: number;
  /** HDR10 static metadata of PQ video, as the stream or its first frames carry it. */
  hdr10?: Hdr10Metadata;
}

/**
 * The facts of a probe kept with an ingested video (its `probe`), which processing plans from:
 * size, rate and whether and where each stream starts, the frame-rate mode, HDR10. Ingestion
 * records them with this, and so does anything that seeds an ingested video (the benchmarks):
 * a video stored without, say, the frame-rate mode is planned as one of before these facts were
 * recorded (one job, never split).
 */
export function storedProbeFacts(probe: ProbeResult) {
  const { durationMs, width, height, hasVideo, hasAudio, fps, formatNames, videoStartMs, audioStartMs, frameRateMode, fileStartMs, hdr10 } = probe;
  return {
    durationMs,
    width,
    height,
    hasVideo,
    hasAudio,
    fps,
    formatNames,
    ...(videoStartMs ? { videoStartMs } : {}),
    ...(audioStartMs !== undefined ? { audioStartMs } : {}),
    ...(frameRateMode ? { frameRateMode } : {}),
    ...(fileStartMs !== undefined ? { fileStartMs } : {}),
    ...(hdr10 ? { hdr10 } : {}),
  };
}

/** SMPTE ST 2086 mastering display colour volume: CIE 1931 xy chromaticities and luminance in cd/m2. */
export interface MasteringDisplayMetadata {
  red: [number, number];
  green: [number, number];
  blue: [number, number];
  whitePoint: [number, number];
  minLuminance: number;
  maxLuminance: number;
}

/** HDR10 static metadata: the mastering display and the content light levels (CTA-861.3), each when present. */
export interface Hdr10Metadata {
  masteringDisplay?: MasteringDisplayMetadata;
  /** Maximum content light level, cd/m2. */
  maxCll?: number;
  /** Maximum frame-average light level, cd/m2. */
  maxFall?: number;
}

export interface ProbeOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Also run `detectScanning` and fill `metadata.scanning.heuristics` (one more short ffmpeg run). */
  detectScanning?: boolean;
}

interface FfprobeStream {
  index: number;
  codec_type?: string;
  codec_name?: string;
  codec_long_name?: string;
  profile?: string;
  width?: number;
  height?: number;
  sample_aspect_ratio?: string;
  display_aspect_ratio?: string;
  pix_fmt?: string;
  bits_per_raw_sample?: string;
  field_order?: string;
  r_frame_rate?: string;
  avg_frame_rate?: string;
  duration?: string;
  bit_rate?: string;
  nb_frames?: string;
  color_range?: string;
  color_space?: string;
  color_transfer?: string;
  color_primaries?: string;
  disposition?: Record<string, number>;
  tags?: Record<string, string>;
  side_data_list?: FfprobeSideData[];
  start_time?: string;
}

/** One side data entry (stream or frame); the mastering display and light level ones carry their values. */
type FfprobeSideData = { side_data_type?: string } & Record<string, string | number | undefined>;

interface FfprobeOutput {
  streams?: FfprobeStream[];
  frames?: FfprobeFrame[];
  format?: { filename?: string; format_name?: string; format_long_name?: string; duration?: string; size?: string; start_time?: string; tags?: Record<string, string> };
}

/** Demuxers that read still images or text, not video. */
const NOT_VIDEO_FORMATS = /^(image2|.*_pipe|tty|lavfi|srt|ass|webvtt|apng)$/;
const NOT_VIDEO_CODECS = new Set(['ansi', 'bintext', 'xbin', 'idf']);

export async function probeMedia(bins: MediaBinaries, input: string, opts: ProbeOptions = {}): Promise<ProbeResult> {
  const args = ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', input];
  let stdout: string;
  try {
    ({ stdout } = await runMedia(bins.ffprobe, args, { signal: opts.signal, timeoutMs: opts.timeoutMs, tool: 'ffprobe' }));
  } catch (err) {
    if (err instanceof MediaProcessError) {
      throw new UnsupportedMediaError(`ffprobe cannot read ${path.basename(input)}: ${stderrSummary(err.stderrTail, 2) || err.message}`, { cause: err });
    }
    throw err;
  }
  return probeFromFfprobe(bins, input, stdout, opts);
}

/** A frame as ffprobe prints it (`-show_entries frame=stream_index,interlaced_frame,top_field_first`). */
export interface FfprobeFrame {
  stream_index?: number;
  interlaced_frame?: number;
  top_field_first?: number;
}

/**
 * probeMedia's answer from the JSON of an ffprobe run made by the caller with `-show_format
 * -show_streams` (other sections ignored; ffprobe's failure is the caller's). When that run also
 * read the frames from the start (`frame=stream_index,interlaced_frame,top_field_first`, every
 * stream or the video one), pass `frames: true`: the video stream's first frame is taken from
 * them instead of being read again.
 */
export async function probeFromFfprobe(bins: MediaBinaries, input: string, stdout: string, opts: ProbeOptions & { frames?: boolean } = {}): Promise<ProbeResult> {
  let data: FfprobeOutput;
  try {
    data = JSON.parse(stdout) as FfprobeOutput;
  } catch (err) {
    throw new MediaError(`ffprobe printed no JSON for ${path.basename(input)}`, { cause: err });
  }
  const streams = data.streams ?? [];
  const format = data.format ?? {};
  const formatNames = (format.format_name ?? '').split(',').filter(Boolean);
  if (formatNames.some((f) => NOT_VIDEO_FORMATS.test(f))) {
    throw new UnsupportedMediaError(`${path.basename(input)} is not a video: ffprobe reads it as ${format.format_long_name ?? format.format_name}`);
  }
  const video = streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic && !NOT_VIDEO_CODECS.has(s.codec_name ?? ''));
  if (!video) {
    const kinds = [...new Set(streams.map((s) => s.codec_type ?? 'unknown'))];
    throw new UnsupportedMediaError(
      `${path.basename(input)} has no video stream (${format.format_long_name ?? format.format_name ?? 'unknown format'}${kinds.length ? `, streams: ${kinds.join(', ')}` : ', no streams'})`,
    );
  }
  if (!video.width || !video.height) throw new UnsupportedMediaError(`${path.basename(input)}: the video stream has no frame size (${video.codec_name ?? 'unknown codec'})`);
  const hasAudio = streams.some((s) => s.codec_type === 'audio');

  const m: VideoMetadata = {};
  set(m, 'containerName', containerShortName(formatNames, format.tags?.major_brand, input));
  set(m, 'longContainerName', format.format_long_name);
  set(m, 'codecName', codecShortName(video.codec_name));
  set(m, 'longCodecName', video.codec_long_name);
  set(m, 'pixelFormatName', known(video.pix_fmt));
  set(m, 'primaryBitDepth', bitDepth(video.bits_per_raw_sample, video.pix_fmt));
  m.frameWidth = video.width;
  m.frameHeight = video.height;
  set(m, 'displayAspectRatio', displayAspectRatio(video.width, video.height, video.sample_aspect_ratio, video.display_aspect_ratio));
  // `tb`/`bt` say which field is coded and which displayed first, and ffmpeg itself writes `tb`
  // for top-field-first interlaced video of most codecs (ProRes in MOV among them): the first
  // decoded frame says which field comes first.
  const scan =
    video.field_order === 'tb' || video.field_order === 'bt'
      ? ((opts.frames ? scanningOfFrame(data.frames?.find((f) => f.stream_index === video.index)) : await firstFrameScanning(bins, input, video.index, opts)) ??
        scanningFromFieldOrder(video.field_order))
      : scanningFromFieldOrder(video.field_order);
  if (scan) m.scanning = { metadata: scan };
  const rate = frameRate(video.avg_frame_rate, video.r_frame_rate);
  if (rate) m.averageFrameRate = { frameRate: round(rate.fps, 3), rational: rate.rational };

  const formatDuration = seconds(format.duration);
  const streamDuration = seconds(video.duration) ?? seconds(video.tags?.DURATION ?? video.tags?.['DURATION-eng']);
  const durationS = formatDuration ?? streamDuration;
  const durationMs = durationS !== undefined ? Math.round(durationS * 1000) : 0;
  if (durationS !== undefined) m.durationInMillis = durationMs;
  const nbFrames = positiveInt(video.nb_frames ?? video.tags?.NUMBER_OF_FRAMES ?? video.tags?.['NUMBER_OF_FRAMES-eng']);
  const framesDuration = streamDuration ?? durationS;
  if (nbFrames !== undefined) m.totalFrames = nbFrames;
  else if (rate && framesDuration !== undefined) m.totalFrames = Math.round(framesDuration * rate.fps);

  let size = positiveInt(format.size);
  if (size === undefined && !/^[a-z][a-z0-9+.-]*:\/\//i.test(input))
    size = await stat(input).then(
      (s) => s.size,
      () => undefined,
    );
  set(m, 'size', size);
  set(m, 'videoStreamSize', videoStreamSize(video, streamDuration ?? durationS));

  set(m, 'colorRangeName', known(video.color_range));
  set(m, 'colorSpaceName', known(video.color_space));
  set(m, 'colorTransferName', known(video.color_transfer));
  set(m, 'colorPrimariesName', known(video.color_primaries));
  if (video.color_transfer === 'arib-std-b67') m.hdrStandardName = 'HLG';
  let hdr10: Hdr10Metadata | undefined;
  if (video.color_transfer === 'smpte2084') {
    const sideData = [...(video.side_data_list ?? []), ...(await firstFramesSideData(bins, input, video.index, opts))];
    m.hdrStandardName = hdrStandard(new Set(sideData.map((d) => d.side_data_type ?? '')));
    hdr10 = hdr10Metadata(sideData);
  }
  const videoStart = seconds(video.start_time);
  const formatStart = seconds(format.start_time);
  // To the microsecond: a frame grid counted from a start rounded to the millisecond misses frames
  // (an MPEG-TS whose video starts 42.667 ms after its 24 kHz AAC: 43 ms put every range's
  // start 0.3 ms after its first frame, which was then dropped).
  const videoStartMs = videoStart !== undefined && formatStart !== undefined ? microseconds(videoStart - formatStart) : 0;
  const audio = streams.find((s) => s.codec_type === 'audio');
  const audioStart = seconds(audio?.start_time);
  const audioStartMs = audioStart !== undefined && formatStart !== undefined ? Math.max(0, microseconds(audioStart - formatStart)) : undefined;

  const result: ProbeResult = {
    metadata: m,
    durationMs,
    width: video.width,
    height: video.height,
    hasVideo: true,
    hasAudio,
    fps: rate ? rate.fps : 0,
    formatNames,
    ...(videoStartMs > 0 ? { videoStartMs } : {}),
    ...(audioStartMs !== undefined ? { audioStartMs } : {}),
    frameRateMode: frameRateMode(video.avg_frame_rate, video.r_frame_rate),
    fileStartMs: Math.max(0, microseconds(formatStart ?? 0)),
    ...(hdr10 ? { hdr10 } : {}),
  };
  if (opts.detectScanning) {
    const heuristics = await detectScanning(bins, input, { signal: opts.signal, timeoutMs: opts.timeoutMs, durationMs });
    if (heuristics) m.scanning = { ...m.scanning, heuristics };
  }
  return result;
}

function set<K extends keyof VideoMetadata>(m: VideoMetadata, key: K, value: VideoMetadata[K] | undefined): void {
  if (value !== undefined && value !== null && value !== '') m[key] = value;
}

function known(v: string | undefined): string | undefined {
  return v && v !== 'unknown' && v !== 'unspecified' && v !== 'reserved' ? v : undefined;
}

/** Seconds as milliseconds, to the microsecond. */
function microseconds(s: number): number {
  return Math.round(s * 1e6) / 1e3;
}

function seconds(v: string | undefined): number | undefined {
  if (!v) return undefined;
  const clock = /^(\d+):(\d\d):(\d\d(?:\.\d+)?)$/.exec(v);
  const n = clock ? Number(clock[1]) * 3600 + Number(clock[2]) * 60 + Number(clock[3]) : Number(v);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

function positiveInt(v: string | undefined): number | undefined {
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  const n = Number(v);
  return n > 0 && Number.isSafeInteger(n) ? n : undefined;
}

function round(v: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.round(v * f) / f;
}

/**
 * A short container name from ffprobe's demuxer list: `mov,mp4,m4a,3gp,3g2,mj2` is told apart
 * by the major brand (`qt  ` is QuickTime) and then by the file extension; `matroska,webm` by
 * the extension; otherwise the first name.
 */
export function containerShortName(formatNames: string[], majorBrand: string | undefined, input: string): string | undefined {
  const first = formatNames[0];
  if (!first) return undefined;
  const ext = path.extname(input.split(/[?#]/)[0]!).slice(1).toLowerCase();
  if (formatNames.includes('mov') && formatNames.includes('mp4')) {
    const brand = (majorBrand ?? '').trim().toLowerCase();
    if (brand === 'qt') return 'mov';
    if (/^3g2/.test(brand)) return '3g2';
    if (/^3gp/.test(brand)) return '3gp';
    if (/^mj2|^mjp2/.test(brand)) return 'mj2';
    if (brand === 'm4a' || brand === 'm4b') return 'm4a';
    if (brand) return 'mp4';
    if (ext === 'mov' || ext === 'qt') return 'mov';
    if (['3gp', '3g2', 'mj2', 'm4a'].includes(ext)) return ext;
    return ext === 'mp4' || ext === 'm4v' ? 'mp4' : 'mov';
  }
  if (first === 'matroska') return ext === 'webm' ? 'webm' : 'matroska';
  return first;
}

/** ffprobe's codec name, with the contract's spelling where it differs (`mpeg2video` is `mpeg2`). */
export function codecShortName(codec: string | undefined): string | undefined {
  if (!codec) return undefined;
  if (codec === 'mpeg2video') return 'mpeg2';
  if (codec === 'mpeg1video') return 'mpeg1';
  return codec;
}

/** Bits per sample: `bits_per_raw_sample` when the stream states it, else from the pixel format. */
export function bitDepth(bitsPerRawSample: string | undefined, pixFmt: string | undefined): number | undefined {
  const raw = positiveInt(bitsPerRawSample);
  if (raw !== undefined && raw <= 16) return raw;
  if (!pixFmt) return undefined;
  let m = /^(?:p|y)(\d)(\d\d)(le|be)?$/.exec(pixFmt); // p010le, p016le, p210le, y210le: last two digits
  if (m) return Number(m[2]);
  m = /(\d+)(le|be)$/.exec(pixFmt); // yuv422p10le, gray12le, gbrp16be
  if (m && Number(m[1]) >= 9 && Number(m[1]) <= 16) return Number(m[1]);
  if (/^(rgb48|bgr48|rgba64|bgra64|ya16)/.test(pixFmt)) return 16;
  if (/^(x2rgb10|x2bgr10)/.test(pixFmt)) return 10;
  return 8;
}

const ASPECT_TAGS: [number, string][] = [
  [1, '1:1'],
  [1.25, '5:4'],
  [4 / 3, '4:3'],
  [1.5, '3:2'],
  [1.6, '16:10'],
  [5 / 3, '5:3'],
  [16 / 9, '16:9'],
  [1.85, '1.85:1'],
  [256 / 135, '1.90:1'],
  [2, '2:1'],
  [2.2, '2.20:1'],
  [2.35, '2.35:1'],
  [2.39, '2.39:1'],
  [2.4, '2.40:1'],
  [2.76, '2.76:1'],
  [9 / 16, '9:16'],
  [3 / 4, '3:4'],
  [4 / 5, '4:5'],
  [2 / 3, '2:3'],
  [10 / 16, '10:16'],
];

function ratioOf(v: string | undefined): number | undefined {
  const m = /^(\d+)[:/](\d+)$/.exec(v ?? '');
  if (!m || m[1] === '0' || m[2] === '0') return undefined;
  return Number(m[1]) / Number(m[2]);
}

/**
 * Display aspect ratio: ffprobe's stated ratio, else width x sample aspect ratio / height; tagged
 * with the nearest conventional name within 1% (`16:9`, `2.39:1`), else the stated ratio when its
 * terms are small (`11:9`), else `<ratio>:1`.
 */
export function displayAspectRatio(width: number, height: number, sar?: string, dar?: string): AspectRatio | undefined {
  if (!width || !height) return undefined;
  const r = ratioOf(dar) ?? (width * (ratioOf(sar) ?? 1)) / height;
  let best: [number, string] | undefined;
  for (const entry of ASPECT_TAGS) {
    const off = Math.abs(entry[0] - r) / r;
    if (off <= 0.01 && (!best || off < Math.abs(best[0] - r) / r)) best = entry;
  }
  const ratio = round(r, 2);
  if (best) return { ratio, tag: best[1] };
  // A stated ratio of small numbers (11:9, 17:9) is its own conventional name.
  const stated = /^(\d+):(\d+)$/.exec(dar ?? '');
  if (stated && ratioOf(dar) !== undefined && Number(stated[1]) <= 32 && Number(stated[2]) <= 32) return { ratio, tag: dar! };
  return { ratio, tag: `${ratio.toFixed(2)}:1` };
}

/** ffprobe's field_order: `tt`/`bb` are top/bottom field first; `tb`/`bt` (coded one way, shown the other) by the displayed field. */
export function scanningFromFieldOrder(fieldOrder: string | undefined): Scanning | undefined {
  switch (fieldOrder) {
    case 'progressive':
      return 'PROGRESSIVE';
    case 'tt':
    case 'bt':
      return 'INTERLACED_TOP_FIRST';
    case 'bb':
    case 'tb':
      return 'INTERLACED_BOTTOM_FIRST';
    default:
      return undefined;
  }
}

function rational(v: string | undefined): { num: number; den: number } | undefined {
  const m = /^(\d+)\/(\d+)$/.exec(v ?? '');
  if (!m) return undefined;
  const num = Number(m[1]);
  const den = Number(m[2]);
  return num > 0 && den > 0 ? { num, den } : undefined;
}

/**
 * The average frame rate; when it is within 0.1% of the stream's base rate (`r_frame_rate`),
 * the base rate's exact fraction is used (MKV and some MP4s state an average such as
 * `2997/100` for `30000/1001`).
 */
export function frameRate(avg: string | undefined, base: string | undefined): { fps: number; rational: string } | undefined {
  const a = rational(avg);
  const b = rational(base);
  const pick = a && b && Math.abs(a.num / a.den - b.num / b.den) / (b.num / b.den) < 0.001 ? b : (a ?? b);
  if (!pick) return undefined;
  const fps = pick.num / pick.den;
  if (fps > 1000) return undefined; // 90000/1 and similar: a timebase, not a rate
  return { fps, rational: `${pick.num}:${pick.den}` };
}

/**
 * VARIABLE when the average rate is neither the base rate (within 0.1 %) nor half of it (the base
 * rate of interlaced video is its field rate); CONSTANT otherwise, and when either is unknown.
 */
export function frameRateMode(avg: string | undefined, base: string | undefined): 'CONSTANT' | 'VARIABLE' {
  const a = rational(avg);
  const b = rational(base);
  if (!a || !b) return 'CONSTANT';
  const ratio = a.num / a.den / (b.num / b.den);
  return Math.abs(ratio - 1) < 0.001 || Math.abs(ratio - 0.5) < 0.0005 ? 'CONSTANT' : 'VARIABLE';
}

/** The video stream's byte count when the container states it (Matroska statistics tags), else bit rate x duration. */
function videoStreamSize(video: FfprobeStream, durationS: number | undefined): number | undefined {
  const tagged = positiveInt(video.tags?.NUMBER_OF_BYTES ?? video.tags?.['NUMBER_OF_BYTES-eng']);
  if (tagged !== undefined) return tagged;
  const bitRate = positiveInt(video.bit_rate);
  if (bitRate !== undefined && durationS !== undefined && durationS > 0) return Math.round((bitRate * durationS) / 8);
  return undefined;
}

/** PQ (SMPTE ST 2084) video: HDR10+ with dynamic metadata, HDR10 with static mastering metadata, else PQ10; Dolby Vision first. */
export function hdrStandard(sideDataTypes: Set<string>): string {
  const all = [...sideDataTypes].join('\n');
  if (/DOVI|Dolby Vision/i.test(all)) return 'DOLBY_VISION';
  if (/SMPTE2094-40|HDR10\+/i.test(all)) return 'HDR10+';
  if (/Mastering display|Content light level/i.test(all)) return 'HDR10';
  return 'PQ10';
}

/** Side data of the first few frames (HEVC and AV1 carry HDR mastering metadata in the bitstream). */
async function firstFramesSideData(bins: MediaBinaries, input: string, streamIndex: number, opts: ProbeOptions): Promise<FfprobeSideData[]> {
  const args = ['-v', 'error', '-select_streams', String(streamIndex), '-read_intervals', '%+#3', '-show_frames', '-show_entries', 'frame=side_data_list', '-print_format', 'json', input];
  try {
    const { stdout } = await runMedia(bins.ffprobe, args, { signal: opts.signal, timeoutMs: opts.timeoutMs, tool: 'ffprobe' });
    const frames = (JSON.parse(stdout) as { frames?: { side_data_list?: FfprobeSideData[] }[] }).frames ?? [];
    return frames.flatMap((f) => f.side_data_list ?? []);
  } catch (err) {
    if (err instanceof MediaAbortedError || err instanceof MediaTimeoutError) throw err;
    return []; // frames unreadable: the stream-level answer stands
  }
}

/** The scanning of the first decoded frame (its `interlaced_frame` and `top_field_first` flags); undefined when unreadable. */
async function firstFrameScanning(bins: MediaBinaries, input: string, streamIndex: number, opts: ProbeOptions): Promise<Scanning | undefined> {
  const args = ['-v', 'error', '-select_streams', String(streamIndex), '-read_intervals', '%+#1', '-show_entries', 'frame=interlaced_frame,top_field_first', '-print_format', 'json', input];
  try {
    const { stdout } = await runMedia(bins.ffprobe, args, { signal: opts.signal, timeoutMs: opts.timeoutMs, tool: 'ffprobe' });
    return scanningOfFrame(((JSON.parse(stdout) as { frames?: FfprobeFrame[] }).frames ?? [])[0]);
  } catch (err) {
    if (err instanceof MediaAbortedError || err instanceof MediaTimeoutError) throw err;
    return undefined; // frames unreadable: the stream-level answer stands
  }
}

/** A decoded frame's scanning (its `interlaced_frame` and `top_field_first` flags); undefined without them. */
function scanningOfFrame(frame: FfprobeFrame | undefined): Scanning | undefined {
  if (!frame || frame.interlaced_frame === undefined) return undefined;
  return frame.interlaced_frame ? (frame.top_field_first ? 'INTERLACED_TOP_FIRST' : 'INTERLACED_BOTTOM_FIRST') : 'PROGRESSIVE';
}

/** `35400/50000` (ffprobe's rationals) or a plain number. */
function rationalValue(v: string | number | undefined): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  const m = /^(-?\d+(?:\.\d+)?)(?:\/(\d+))?$/.exec(v ?? '');
  if (!m) return undefined;
  const den = m[2] === undefined ? 1 : Number(m[2]);
  return den > 0 ? Number(m[1]) / den : undefined;
}

/** The HDR10 static metadata in side data entries (the first of each kind with complete values). */
export function hdr10Metadata(sideData: FfprobeSideData[]): Hdr10Metadata | undefined {
  const out: Hdr10Metadata = {};
  const md = sideData.find((d) => /Mastering display/i.test(d.side_data_type ?? '') && rationalValue(d.max_luminance) !== undefined);
  if (md) {
    const xy = (name: string): [number, number] | undefined => {
      const x = rationalValue(md[`${name}_x`]);
      const y = rationalValue(md[`${name}_y`]);
      return x !== undefined && y !== undefined ? [x, y] : undefined;
    };
    const [red, green, blue, whitePoint] = [xy('red'), xy('green'), xy('blue'), xy('white_point')];
    const minLuminance = rationalValue(md.min_luminance);
    const maxLuminance = rationalValue(md.max_luminance);
    if (red && green && blue && whitePoint && minLuminance !== undefined && maxLuminance !== undefined && maxLuminance > 0) {
      out.masteringDisplay = { red, green, blue, whitePoint, minLuminance, maxLuminance };
    }
  }
  const cll = sideData.find((d) => /Content light level/i.test(d.side_data_type ?? ''));
  if (cll) {
    const maxCll = rationalValue(cll.max_content);
    const maxFall = rationalValue(cll.max_average);
    if (maxCll !== undefined) out.maxCll = maxCll;
    if (maxFall !== undefined) out.maxFall = maxFall;
  }
  return out.masteringDisplay || out.maxCll !== undefined || out.maxFall !== undefined ? out : undefined;
}

export interface DetectScanningOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Duration of the video; without it the sample is taken from the start only. */
  durationMs?: number;
  /** Frames analysed in all (default 200), split over `segments` positions (default 3). */
  frames?: number;
  segments?: number;
}

/**
 * Interlacing by analysis: ffmpeg's `idet` filter on `frames` frames read at `segments`
 * evenly spaced positions (one ffmpeg run, each position reached by fast input seeking, the
 * pieces joined with `concat`). Counts idet's multi-frame verdict per frame: interlaced when
 * the frames of the more frequent field order outnumber the progressive ones AND that order is
 * consistent (at least 3 times the other order: real interlaced video has one field order,
 * comb-like false positives come in both). Returns undefined when idet could decide no frame
 * (for example a still image).
 */
export async function detectScanning(bins: MediaBinaries, input: string, opts: DetectScanningOptions = {}): Promise<Scanning | undefined> {
  const stdout = await runMedia(bins.ffmpeg, detectScanningArgs(input, opts), { signal: opts.signal, timeoutMs: opts.timeoutMs, tool: 'ffmpeg' })
    .then((r) => r.stdout)
    .catch(async (err) => {
      // A resolution change between the sampled positions breaks concat: retry from the start only.
      if (!(err instanceof MediaProcessError) || (opts.segments ?? 3) === 1) throw err;
      return (await runMedia(bins.ffmpeg, detectScanningArgs(input, { ...opts, segments: 1 }), { signal: opts.signal, timeoutMs: opts.timeoutMs, tool: 'ffmpeg' })).stdout;
    });
  return scanningFromIdet(stdout);
}

/**
 * idet's `intl_thres` (default 1.04): how much stronger the comb evidence must be to call a frame
 * interlaced. Synthetic, fast-moving progressive material (testsrc2 at 320x240 and 720p) gets
 * 35-60% of its frames called interlaced at the default; at 1.5 none, while real interlaced
 * material still scores every frame.
 */
export const IDET_INTERLACED_THRESHOLD = 1.5;

export function detectScanningArgs(input: string, opts: Pick<DetectScanningOptions, 'durationMs' | 'frames' | 'segments'>): string[] {
  const total = Math.max(1, opts.frames ?? 200);
  const durationMs = opts.durationMs ?? 0;
  const segments = durationMs > 0 ? Math.max(1, Math.min(opts.segments ?? 3, total)) : 1;
  const perSegment = Math.ceil(total / segments);
  const args: string[] = [];
  for (let i = 0; i < segments; i++) {
    const startMs = segments === 1 ? 0 : Math.floor((durationMs * i) / segments);
    if (startMs > 0) args.push('-ss', msToSeconds(startMs));
    args.push('-i', input);
  }
  const chains = Array.from({ length: segments }, (_, i) => `[${i}:v:0]trim=end_frame=${perSegment},setpts=PTS-STARTPTS[s${i}]`);
  const joined = segments > 1 ? `${Array.from({ length: segments }, (_, i) => `[s${i}]`).join('')}concat=n=${segments}:v=1:a=0[j];[j]` : '[s0]';
  const graph = `${chains.join(';')};${joined}idet=intl_thres=${IDET_INTERLACED_THRESHOLD},metadata=mode=print:key=lavfi.idet.multiple.current_frame:file='pipe\\:1'[out]`;
  return [...args, '-filter_complex', graph, '-map', '[out]', '-an', '-sn', '-dn', '-f', 'null', '-'];
}

export function scanningFromIdet(metadataOutput: string): Scanning | undefined {
  const counts = { tff: 0, bff: 0, progressive: 0 };
  for (const m of metadataOutput.matchAll(/lavfi\.idet\.multiple\.current_frame=(\w+)/g)) {
    if (m[1]! in counts) counts[m[1] as keyof typeof counts]++;
  }
  if (counts.tff + counts.bff + counts.progressive === 0) return undefined;
  const dominant = Math.max(counts.tff, counts.bff);
  const other = Math.min(counts.tff, counts.bff);
  if (dominant <= counts.progressive || dominant < 3 * other) return 'PROGRESSIVE';
  return counts.tff >= counts.bff ? 'INTERLACED_TOP_FIRST' : 'INTERLACED_BOTTOM_FIRST';
}

export function msToSeconds(ms: number): string {
  return (Math.max(0, ms) / 1000).toFixed(3);
}

/** Video packets (frames) of a file's first video stream, counted without decoding; NaN when the file has none. */
export async function countVideoPackets(bins: Pick<MediaBinaries, 'ffprobe'>, file: string, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<number> {
  const { stdout } = await runMedia(bins.ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-count_packets', '-show_entries', 'stream=nb_read_packets', '-of', 'json', file], {
    signal: opts.signal,
    timeoutMs: opts.timeoutMs,
    tool: 'ffprobe',
  });
  return Number((JSON.parse(stdout) as { streams?: { nb_read_packets?: string }[] }).streams?.[0]?.nb_read_packets);
}
