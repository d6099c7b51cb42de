/**
 * The options -> ffmpeg engine: a PURE function from processing options, the probed source and
 * the processed range to the ffmpeg arguments (input seek/trim, one filter graph, encoder and
 * muxer arguments), the output's facts, and the options as actually applied.
 *
 * Filter stages run in the contract's order: deinterlacer, reshaper, prescaler, denoiser,
 * stabilizer, augmenter, scaler, frame-rate converter, debander, post-processor; then the fixed
 * output resolution (crop/pad), the output colour conversion, output interlacing and the final
 * pixel format. The input colour interpretation is tagged first and tone mapping runs right
 * after deinterlacing. docs/processing.md is the field-by-field description.
 *
 * The reference's proprietary AI filters are applied as their best classical ffmpeg equivalent
 * and every such substitution is written into `applied.notes` (and docs/processing.md).
 */
import type { Hdr10Metadata, ProbeResult, Scanning } from '../media';
import { FULL_CAPABILITIES, type EngineCapabilities } from './capabilities';
import {
  COLORSPACE_PRIMARIES,
  COLORSPACE_RANGE,
  COLORSPACE_SPACE,
  COLORSPACE_TRANSFER,
  FF_PRIMARIES,
  FF_RANGE,
  FF_SPACE,
  FF_TRANSFER,
  ZSCALE_PRIMARIES,
  ZSCALE_RANGE,
  ZSCALE_SPACE,
  ZSCALE_TRANSFER,
  colorOfSource,
  inferColor,
  isHdrTransfer,
  layer,
  profileFields,
  resolveMastering,
  sameColor,
  x265MasterDisplay,
  type ColorSpec,
} from './colour';
import {
  CODEC_PIXELS,
  CONTAINER_FORMAT,
  DEFAULT_CONTAINER,
  ENCODER_OF,
  PROGRESSIVE_ONLY,
  DNXHR_MIN_SIZE,
  MXF_FRAME_RATES,
  MPEG2_MAX_SIDE,
  PROFILE_SPECS,
  audioArgs,
  codecOfSource,
  containerOfSource,
  dnxhdFrameSizes,
  pixFmtName,
  streamProfileName,
  xdcamBitrate,
  xdcamFrameSizes,
  type PixelSpec,
  type ProfileSpec,
} from './encoders';
import { IssueList } from './errors';
import { appliedOutput, type AppliedOutput } from './applied-output';
import { filmGrainFilter } from './film-grain';
import { resolveHdrStatic, x265HdrParams, type HdrStaticMetadata } from './hdr-metadata';
import {
  CONTAINER_CODECS,
  FRAME_RATE_TAGS,
  LIMITS,
  NAMED_RESOLUTIONS,
  RESOLUTION_MULTIPLIERS,
  cloneOptions,
  type BitDepth,
  type ChromaSubsampling,
  type Codec,
  type Colorimetry,
  type MediaContainer,
  type OutputCodec,
  type ProcessingOptions,
  type ResolutionSettings,
} from './options';
import { collectStaticIssues, throwIssues } from './validate';

export type X26xPreset = 'ultrafast' | 'superfast' | 'veryfast' | 'faster' | 'fast' | 'medium' | 'slow' | 'slower' | 'veryslow';

export interface PlanEnvironment {
  /** This installation's ffmpeg (`engineCapabilities(bins)`); default: everything the engine uses. */
  capabilities?: EngineCapabilities;
  /** libx264/libx265 preset (operator setting; default `medium`). The calibration knows `medium` and `veryfast`. */
  encoderPreset?: X26xPreset;
}

export interface Rational {
  num: number;
  den: number;
}

export interface AppliedNote {
  /** Path of the option inside the options object (`filters.scaler`). */
  field: string;
  /** What the options asked for. */
  requested: string;
  /** The ffmpeg filters or settings actually used. */
  appliedAs: string;
  note: string;
}

/** Work the plan makes, for the estimate: pixels per second of media through each costed stage. */
export interface PlanWork {
  /** Calibration key: `decode`, an encoder (`libx264:medium`, `prores_ks`...) or a filter (`nlmeans`, `scale_lanczos`...). */
  key: string;
  /** Pixels per second of output media that pass through the stage (width x height x frames per second at that stage). */
  pixelsPerSecond: number;
  /** Runs in the analysis pass (vidstab detection). */
  analysis?: boolean;
}

export interface PlanOutput {
  width: number;
  height: number;
  /** Sample (pixel) aspect ratio. */
  sar: Rational;
  /** Stored frames per second (an interlaced output stores two fields per frame). */
  fps: Rational;
  scanning: Scanning;
  codec: OutputCodec;
  /** ffmpeg pixel format, e.g. `yuv420p10le`. */
  pixelFormat: string;
  chroma: ChromaSubsampling;
  bitDepth: BitDepth;
  /** Target bitrate in bits/s when the encoder has one (explicit, automatic or fixed by the profile). */
  bitrate?: number;
  /** A constant-quality target instead of a bitrate: libx264/libx265 CRF. */
  crf?: number;
  durationMs: number;
  /** Frames written: duration x fps, rounded. */
  frames: number;
  color: ColorSpec;
  /** HDR10 static metadata written into the stream (HEVC only). */
  hdr?: HdrStaticMetadata;
  /** The profile the encoder writes, as ffprobe names it (none for FFV1). */
  codecProfile?: string;
  /** Where the output starts in the source (ms): the first frame at or after the requested start. */
  startMs: number;
  hasAudio: boolean;
}

export interface ProcessingPlan {
  /** Input options before `-i`: seek and duration of the range. */
  inputArgs: string[];
  /** `-filter_complex` graph from `[0:v:0]` to `[vout]`. May contain the vidstab transform path token. */
  filterGraph: string;
  /** Everything after the video map: audio, codec, profile, pix_fmt, rate control, colour tags, HDR metadata, muxer. */
  outputArgs: string[];
  /** A first pass (vidstab motion detection) whose graph ends in `[vout]` and goes to the null muxer. */
  analysis?: { filterGraph: string };
  container: MediaContainer;
  fileExtension: string;
  mimeType: string;
  output: PlanOutput;
  /** The options as applied, the notes on how, and the output they make (`processing.appliedOptions` is options and output). */
  applied: { options: ProcessingOptions; notes: AppliedNote[]; output: AppliedOutput };
  work: PlanWork[];
}

/** Replaced by `processingArgs` with the escaped path of the vidstab transforms file next to the output. */
export const TRANSFORMS_TOKEN = '@VIDMILL_TRANSFORMS@';

/** Quality targets when no bitrate is given. */
export const DEFAULT_CRF = { H264: 20, HEVC: 22 } as const;
/** MPEG-2 without a bitrate: 0.4 bits per pixel (about 4 Mbit/s for PAL SD, 21 Mbit/s for 1080p25). */
export const MPEG2_AUTO_BITS_PER_PIXEL = 0.4;

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

function gcd(a: number, b: number): number {
  a = Math.abs(a);
  b = Math.abs(b);
  while (b) [a, b] = [b, a % b];
  return a || 1;
}

export function reduce(r: Rational): Rational {
  const g = gcd(r.num, r.den);
  return { num: r.num / g, den: r.den / g };
}

/** Best rational approximation with a bounded denominator (continued fractions). */
export function toRational(x: number, maxDen = 1001): Rational {
  if (!Number.isFinite(x) || x <= 0) return { num: 0, den: 1 };
  let [h0, h1, k0, k1] = [0, 1, 1, 0];
  let v = x;
  for (let i = 0; i < 40; i++) {
    const a = Math.floor(v);
    const h2 = a * h1 + h0;
    const k2 = a * k1 + k0;
    if (k2 > maxDen) break;
    [h0, h1, k0, k1] = [h1, h2, k1, k2];
    if (Math.abs(v - a) < 1e-12) break;
    v = 1 / (v - a);
  }
  return reduce({ num: h1, den: k1 });
}

/** A frames-per-second number as an exact rate: NTSC rates (x/1.001) become n*1000/1001. */
export function fpsRational(fps: number): Rational {
  for (const base of [24, 30, 48, 60, 120, 240]) {
    const ntsc = (base * 1000) / 1001;
    if (Math.abs(fps - ntsc) < 0.0015) return { num: base * 1000, den: 1001 };
  }
  return toRational(fps, 1000);
}

const value = (r: Rational) => r.num / r.den;
const mul = (r: Rational, n: number, d = 1): Rational => reduce({ num: r.num * n, den: r.den * d });
const rstr = (r: Rational) => `${r.num}/${r.den}`;
const even = (x: number) => Math.max(2, 2 * Math.round(x / 2));
const evenDown = (x: number) => Math.max(0, 2 * Math.floor(x / 2));
const num = (x: number, digits = 4) => String(Math.round(x * 10 ** digits) / 10 ** digits);

/** Seconds for an ffmpeg time option: milliseconds when exact, else microseconds (rounded down for a seek, so it is never past the frame it names). */
function secondsArg(x: number, rounding: 'floor' | 'nearest' = 'nearest'): string {
  const ms = x * 1000;
  if (Math.abs(ms - Math.round(ms)) < 1e-6) return (Math.round(ms) / 1000).toFixed(3);
  const us = rounding === 'floor' ? Math.floor(x * 1e6 + 1e-6) : Math.round(x * 1e6);
  return (us / 1e6).toFixed(6);
}

function parseRational(s: string | undefined): Rational | undefined {
  const m = /^(\d+)[:/](\d+)$/.exec(s ?? '');
  if (!m || m[2] === '0' || m[1] === '0') return undefined;
  return reduce({ num: Number(m[1]), den: Number(m[2]) });
}

/** Quote a filter option value for a filtergraph (both escaping levels of ffmpeg's filter syntax). */
export function escapeFilterValue(v: string): string {
  const level1 = v.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/:/g, '\\:');
  return level1.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/([[\],;])/g, '\\$1');
}

// ---------------------------------------------------------------------------------------------
// The source
// ---------------------------------------------------------------------------------------------

interface SourceFacts {
  width: number;
  height: number;
  sar: Rational;
  fps: Rational;
  fpsKnown: boolean;
  scanningMetadata?: Scanning;
  scanningHeuristics?: Scanning;
  pixel: PixelSpec;
  color: Partial<ColorSpec>;
  codec?: Codec;
  container?: MediaContainer;
  durationMs: number;
  hasAudio: boolean;
  /** When the video starts after the file (ms). */
  videoStartMs: number;
  hdr10?: Hdr10Metadata;
}

function sourceFacts(source: ProbeResult): SourceFacts {
  const m = source.metadata ?? {};
  const width = source.width || m.frameWidth || 0;
  const height = source.height || m.frameHeight || 0;
  let sar: Rational = { num: 1, den: 1 };
  const tag = m.displayAspectRatio?.tag;
  const dar = parseRational(tag) ?? (tag && /^([\d.]+):1$/.test(tag) ? toRational(Number(tag.slice(0, -2)), 1000) : undefined);
  const darValue = dar ? value(dar) : m.displayAspectRatio?.ratio;
  if (darValue && width && height) {
    const s = (darValue * height) / width;
    if (Math.abs(s - 1) > 0.01) sar = toRational(s, 1000);
  }
  const fpsParsed = parseRational(m.averageFrameRate?.rational);
  const fpsKnown = !!fpsParsed || source.fps > 0;
  const fps = fpsParsed ?? (source.fps > 0 ? fpsRational(source.fps) : { num: 25, den: 1 });
  const pf = m.pixelFormatName ?? '';
  const yuv: ChromaSubsampling = /422|nv16|nv20|y210|p210/.test(pf) ? '4:2:2' : /444|gbr|rgb|bgr|argb|abgr|0rgb/.test(pf) ? '4:4:4' : '4:2:0';
  const depth = m.primaryBitDepth ?? 8;
  const bitDepth: BitDepth = depth <= 8 ? 8 : depth <= 10 ? 10 : 12;
  return {
    width,
    height,
    sar,
    fps,
    fpsKnown,
    scanningMetadata: m.scanning?.metadata,
    scanningHeuristics: m.scanning?.heuristics,
    pixel: { yuv, bitDepth },
    color: colorOfSource(m),
    codec: codecOfSource(m.codecName),
    container: containerOfSource(m.containerName),
    durationMs: source.durationMs,
    hasAudio: source.hasAudio,
    videoStartMs: source.videoStartMs ?? 0,
    ...(source.hdr10 ? { hdr10: source.hdr10 } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// The plan
// ---------------------------------------------------------------------------------------------

interface Geometry {
  width: number;
  height: number;
  sar: Rational;
  fps: Rational;
}

class PlanBuilder {
  readonly issues = new IssueList();
  readonly notes: AppliedNote[] = [];
  readonly chain: string[] = [];
  /** The filters that change geometry or timing (deinterlace, crop, prescale), for the analysis pass. */
  readonly geometryChain: string[] = [];
  readonly work: PlanWork[] = [];
  /** The analysis pass: the geometry filters before the stabilizer, then vidstabdetect. */
  analysisChain: string[] | undefined;
  readonly applied: ProcessingOptions;

  constructor(
    readonly options: ProcessingOptions,
    readonly src: SourceFacts,
    readonly caps: EngineCapabilities,
  ) {
    this.applied = cloneOptions(options) ?? {};
  }

  note(field: string, requested: string, appliedAs: string, note: string): void {
    this.notes.push({ field, requested, appliedAs, note });
  }

  add(filter: string, work?: { key: string; g: Geometry }, geometric = false): void {
    this.chain.push(filter);
    if (geometric) this.geometryChain.push(filter);
    if (work) this.work.push({ key: work.key, pixelsPerSecond: work.g.width * work.g.height * value(work.g.fps) });
  }

  has(filter: string): boolean {
    return this.caps.filters.has(filter);
  }
}

/**
 * Builds the ffmpeg plan. Throws ProcessingOptionsError (400) for every static rule
 * (`validateOptions`) and for the source-dependent ones: computed sizes outside 16..7680 x
 * 16..4320, AI scalers asked to shrink, frame sizes a DNxHD or XDCAM profile cannot take, an
 * automatically kept codec that cannot take the requested pixel format, colour conversions
 * this ffmpeg cannot do, a range outside the source.
 */
export function buildProcessingPlan(
  options: ProcessingOptions,
  source: ProbeResult,
  range: { startMs: number; endMs: number },
  env: PlanEnvironment = {},
): ProcessingPlan {
  const caps = env.capabilities ?? FULL_CAPABILITIES;
  const staticIssues = new IssueList();
  collectStaticIssues(options, caps, staticIssues);
  throwIssues(staticIssues);

  const src = sourceFacts(source);
  const b = new PlanBuilder(options, src, caps);
  checkRange(b, range, src);
  throwIssues(b.issues);
  if (!src.fpsKnown) {
    b.note('source', 'frame rate unknown', '25 frames/s assumed', "the probe found no frame rate; frame counts, gigapixels and the colour inference assume 25 frames/s (ffmpeg keeps the source's own timing)");
  }

  // The output starts on the first frame at or after the start (ffmpeg's exact seek keeps frames
  // from -ss on; a -ss between two frames would leave the first output frame late, and the
  // constant-rate output would repeat it to fill the gap).
  const startS = firstFrameAtOrAfter(range.startMs, range.endMs, src);
  const durationS = range.endMs / 1000 - startS;
  const durationMs = Math.round(durationS * 1000);
  const inputArgs: string[] = [];
  if (startS > 0) inputArgs.push('-ss', secondsArg(startS, 'floor'));
  if (startS > 0 || !src.durationMs || range.endMs < src.durationMs) inputArgs.push('-t', secondsArg(durationS));

  // --- Codec, container, pixel format -------------------------------------------------------
  const enc = resolveEncoding(b);
  const f = options.filters ?? {};
  const s = options.filterSettings ?? {};
  const ps = options.processingSettings ?? {};

  // --- Scanning decisions -------------------------------------------------------------------
  const fieldOrderMode = s.interlacedFieldOrderMode;
  const detected: Scanning | undefined =
    fieldOrderMode === 'TOP_FIELD_FIRST'
      ? 'INTERLACED_TOP_FIRST'
      : fieldOrderMode === 'BOTTOM_FIELD_FIRST'
        ? 'INTERLACED_BOTTOM_FIRST'
        : fieldOrderMode === 'AUTO_SEGMENT_ANALYSIS'
          ? (src.scanningHeuristics ?? src.scanningMetadata)
          : (src.scanningMetadata ?? src.scanningHeuristics);
  const sourceInterlaced = detected === 'INTERLACED_TOP_FIRST' || detected === 'INTERLACED_BOTTOM_FIRST';
  const tff = detected !== 'INTERLACED_BOTTOM_FIRST';
  const requestedScanning = ps.outputScanning ?? 'AUTO';
  const deinterlacer = f.deinterlacer ?? undefined;
  const pixelFilters = [f.reshaper, f.prescaler, f.denoiser, f.stabilizer, f.augmenter, f.scaler, f.frameRateConverter, f.debander, f.postProcessor].some((x) => x) || !!ps.fixedOutputResolution;

  let outputScanning: Scanning;
  let implicitDeinterlace = false;
  let interlacedPassthrough = false;
  const deinterlaceApplies = !!deinterlacer && sourceInterlaced;
  if (requestedScanning === 'AUTO') {
    if (!sourceInterlaced || deinterlaceApplies) outputScanning = 'PROGRESSIVE';
    else if (PROGRESSIVE_ONLY[enc.codec]) {
      outputScanning = 'PROGRESSIVE';
      implicitDeinterlace = true;
    } else outputScanning = detected!;
  } else outputScanning = requestedScanning;

  const outInterlaced = outputScanning !== 'PROGRESSIVE';
  if (outInterlaced && PROGRESSIVE_ONLY[enc.codec]) {
    b.issues.unsupported('processingSettings.outputScanning', `${enc.codec} is encoded progressive only here (${PROGRESSIVE_ONLY[enc.codec]})`, outputScanning);
    throwIssues(b.issues);
  }
  if (sourceInterlaced && !deinterlaceApplies) {
    if (!outInterlaced) implicitDeinterlace = true;
    else if (pixelFilters || colourConversionRequested(options)) implicitDeinterlace = true;
    else interlacedPassthrough = true;
  }

  // --- Colour interpretation ----------------------------------------------------------------
  const colour = resolveInputColour(b);

  let g: Geometry = { width: src.width, height: src.height, sar: src.sar, fps: src.fps };
  b.work.push({ key: 'decode', pixelsPerSecond: src.width * src.height * value(src.fps) });
  b.add(`setparams=${setparamsArgs(colour.input)}`);

  // 1. Deinterlacer (or the implicit one)
  if (deinterlacer) {
    if (!deinterlaceApplies) {
      b.note(
        'filters.deinterlacer',
        deinterlacer,
        'not applied',
        `the source is ${detected === 'PROGRESSIVE' ? 'progressive' : 'of unknown scanning (no field order in its metadata)'}${fieldOrderMode ? ` by ${fieldOrderMode}` : ''}; deinterlacing it would only blur and double frames. Set interlacedFieldOrderMode to TOP_FIELD_FIRST or BOTTOM_FIELD_FIRST to force it.`,
      );
      setFilter(b.applied, 'deinterlacer', null);
    } else {
      const parity = tff ? 'tff' : 'bff';
      let filter: string;
      let key: string;
      if (deinterlacer === 'YADIF') [filter, key] = [`yadif=mode=send_field:parity=${parity}:deint=all`, 'yadif'];
      else if (deinterlacer === 'WESTON3F') [filter, key] = [`w3fdif=filter=complex:mode=field:parity=${parity}:deint=all`, 'w3fdif'];
      else [filter, key] = [`bwdif=mode=send_field:parity=${parity}:deint=all`, 'bwdif'];
      b.add(filter, { key, g }, true);
      if (deinterlacer === 'DEINT') {
        b.note('filters.deinterlacer', 'DEINT', filter, 'DEINT is a proprietary AI deinterlacer; this installation applies its best classical equivalent, ffmpeg\'s bwdif (Bob Weaver, motion adaptive), one output frame per field.');
      }
      g = { ...g, fps: mul(g.fps, 2) };
      setSetting(b.applied, 'interlacedFieldOrderMode', tff ? 'TOP_FIELD_FIRST' : 'BOTTOM_FIELD_FIRST');
    }
  }
  if (implicitDeinterlace) {
    const filter = `bwdif=mode=send_field:parity=${tff ? 'tff' : 'bff'}:deint=all`;
    b.add(filter, { key: 'bwdif', g }, true);
    g = { ...g, fps: mul(g.fps, 2) };
    b.note(
      'processingSettings.outputScanning',
      requestedScanning,
      filter,
      outInterlaced
        ? 'the interlaced source is processed as progressive frames (one per field) and interlaced again at the end, so spatial filters never mix the two fields'
        : `the source is interlaced and no deinterlacer was selected; ${requestedScanning === 'AUTO' ? `${enc.codec} is encoded progressive only here (${PROGRESSIVE_ONLY[enc.codec]}), so ` : 'progressive output needs deinterlacing, so '}bwdif deinterlaces it (one frame per field)`,
    );
  }
  if (interlacedPassthrough && detected !== outputScanning) {
    b.add(`fieldorder=${outputScanning === 'INTERLACED_TOP_FIRST' ? 'tff' : 'bff'}`);
  }

  // Tone mapping (input conversion) on progressive frames, before the spatial filters.
  let working = colour.input;
  if (colour.toneMap) {
    working = applyToneMap(b, colour.input, colour.toneMap, g);
  }

  // 2. Reshaper: crop
  if (f.reshaper === 'CROP') g = applyCrop(b, g);
  else dropSetting(b.applied, ['normalizedCropCoordinates', 'cropRectangle']);

  // 3. Prescaler
  if (f.prescaler === 'SCALE' && s.prescaledResolution) {
    const { width, height } = s.prescaledResolution;
    const w = even(width);
    const h = even(height);
    if (w !== g.width || h !== g.height) {
      b.add(`scale=w=${w}:h=${h}:flags=lanczos`, { key: 'scale_lanczos', g: { ...g, width: w, height: h } }, true);
      g = { ...g, width: w, height: h, sar: reduce({ num: g.sar.num * g.width * h, den: g.sar.den * g.height * w }) };
    }
  } else dropSetting(b.applied, ['prescaledResolution']);

  // 4. Denoiser
  if (f.denoiser === 'HQDN3D') b.add('hqdn3d=4:3:6:4.5', { key: 'hqdn3d', g });
  else if (f.denoiser === 'DENOISE') {
    const filter = 'nlmeans=s=3:p=7:r=9';
    b.add(filter, { key: 'nlmeans', g });
    b.note('filters.denoiser', 'DENOISE', filter, 'DENOISE is a proprietary AI denoiser; this installation applies its best classical equivalent, non-local means (ffmpeg nlmeans, strength 3, 7x7 patches, 9x9 search window).');
  }

  // 5. Stabilizer
  if (f.stabilizer === 'DEJIT') {
    if (b.has('vidstabdetect') && b.has('vidstabtransform')) {
      b.analysisChain = [...b.geometryChain, `vidstabdetect=shakiness=5:accuracy=15:stepsize=6:result=${TRANSFORMS_TOKEN}`];
      b.work.push({ key: 'vidstabdetect', pixelsPerSecond: g.width * g.height * value(g.fps), analysis: true });
      b.add(`vidstabtransform=input=${TRANSFORMS_TOKEN}:smoothing=10:optzoom=1:interpol=bicubic`, { key: 'vidstabtransform', g });
    } else {
      b.add('deshake', { key: 'deshake', g });
    }
  }

  // 6. Augmenter
  if (f.augmenter === 'FACEFORWARD' && s.faceForward) applyFaceForward(b, g);
  else dropSetting(b.applied, ['faceForward']);

  // 7. Scaler
  if (f.scaler && s.resolution) g = applyScaler(b, g, f.scaler);
  else dropSetting(b.applied, ['resolution', 'dvres2Variant', 'clarityBoost']);
  if (f.scaler !== 'DVRES2') dropSetting(b.applied, ['dvres2Variant']);
  if (f.scaler !== 'PABSR1') dropSetting(b.applied, ['clarityBoost']);

  // 8. Frame-rate converter
  if (f.frameRateConverter && s.frameRate) g = applyFrameRate(b, g, f.frameRateConverter);
  else dropSetting(b.applied, ['frameRate']);

  // 9. Debander
  if (f.debander === 'GRADFUN') {
    if (enc.pixel.bitDepth === 8 && b.has('gradfun')) b.add('gradfun=strength=1.2:radius=16', { key: 'gradfun', g });
    else {
      const filter = 'deband=1thr=0.02:2thr=0.02:3thr=0.02:range=16:blur=1';
      b.add(filter, { key: 'deband', g });
      b.note('filters.debander', 'GRADFUN', filter, `gradfun works on 8-bit pictures only; for ${enc.pixel.bitDepth}-bit output the equivalent deband filter is used`);
    }
  }

  // 10. Post-processor: film grain
  if (f.postProcessor === 'FILMGRAIN' && s.filmGrain) applyFilmGrain(b, g);
  else dropSetting(b.applied, ['filmGrain']);

  // Fixed output resolution: centre crop where larger, black pad where smaller.
  if (ps.fixedOutputResolution) {
    const box = NAMED_RESOLUTIONS[ps.fixedOutputResolution];
    if (g.width > box.width || g.height > box.height) {
      const cw = Math.min(g.width, box.width);
      const ch = Math.min(g.height, box.height);
      b.add(`crop=w=${cw}:h=${ch}:x=${evenDown((g.width - cw) / 2)}:y=${evenDown((g.height - ch) / 2)}`);
      g = { ...g, width: cw, height: ch };
    }
    if (g.width < box.width || g.height < box.height) {
      b.add(`pad=w=${box.width}:h=${box.height}:x=${evenDown((box.width - g.width) / 2)}:y=${evenDown((box.height - g.height) / 2)}:color=black`, { key: 'pad', g: { ...g, ...box } });
      g = { ...g, width: box.width, height: box.height };
    }
  }

  // --- Output colour ------------------------------------------------------------------------
  const outputColor = resolveOutputColour(b, working, g, outInterlaced);
  if (!outputColor.metadataOnly && !sameColor(working, outputColor.color)) {
    convertColour(b, working, outputColor.color, outputColor, g);
  }
  throwIssues(b.issues);

  // --- Sizes the encoder or the limits refuse -----------------------------------------------
  checkOutputSize(b, g, enc, outInterlaced);
  throwIssues(b.issues);

  // --- Output scanning and final pixel format -----------------------------------------------
  const pixFmt = pixFmtName(enc.pixel);
  let outFps = g.fps;
  if (outInterlaced && !interlacedPassthrough) {
    const order = outputScanning === 'INTERLACED_TOP_FIRST' ? 'tff' : 'bff';
    if (enc.pixel.yuv === '4:2:0') b.add(`format=${pixFmtName({ ...enc.pixel, yuv: '4:2:2' })}`);
    b.add(`interlace=scan=${order}:lowpass=complex`, { key: 'interlace', g });
    outFps = mul(g.fps, 1, 2);
    b.add(`scale=interl=1,format=${pixFmt}`);
  } else if (interlacedPassthrough) {
    b.add(`setfield=${outputScanning === 'INTERLACED_TOP_FIRST' ? 'tff' : 'bff'},scale=interl=1,format=${pixFmt}`);
  } else {
    b.add(`format=${pixFmt}`);
  }
  b.add(`setsar=${rstr(g.sar)},setparams=${setparamsArgs(outputColor.color)}`);
  if (enc.container === 'MXF' && !MXF_FRAME_RATES.some((r) => r.num * outFps.den === outFps.num * r.den)) {
    b.issues.unsupported(
      'container',
      `ffmpeg's MXF muxer writes only the SMPTE frame rates (23.976, 24, 25, 29.97, 30, 48, 50, 59.94, 60, 72, 75, 90, 96, 100, 119.88 and 120 frames/s); the output would be ${num(value(outFps), 3)} frames/s (${rstr(outFps)})`,
      'MXF',
    );
    throwIssues(b.issues);
  }

  // --- Encoder and muxer arguments ----------------------------------------------------------
  const container = enc.container;
  const fmt = CONTAINER_FORMAT[container];
  const outputArgs: string[] = [];
  if (src.hasAudio) outputArgs.push('-map', '0:a?', ...audioArgs(container, enc.codec).args);
  else outputArgs.push('-an');
  outputArgs.push('-sn', '-dn');

  // HDR10 static metadata: the user's, else the source's while the picture stays PQ.
  const hdr = resolveHdrStatic({
    profile: outputColor.profile,
    outputTransfer: outputColor.color.transferCharacteristics,
    codec: enc.codec,
    bitDepth: enc.pixel.bitDepth,
    source: src.hdr10,
    pqThroughout: colour.input.transferCharacteristics === 'SMPTE2084' && !colour.toneMap && !outputColor.inverse,
  });
  for (const n of hdr.notes) b.note(n.field, n.requested, n.appliedAs, n.note);
  if (hdr.metadata && enc.codec !== 'HEVC') {
    b.issues.unsupported('processingSettings.outputColorSpaceConversion.colorProfile', `HDR static metadata is written into HEVC only (x265 SEI); the output codec is ${enc.codec} (set encodingConfiguration.codec to HEVC)`);
    throwIssues(b.issues);
  }

  const preset = env.encoderPreset ?? 'medium';
  let bitrate: number | undefined;
  let crf: number | undefined;
  let encoderKey: string = ENCODER_OF[enc.codec];
  const interlaceFlags = outInterlaced ? ['-flags', '+ildct+ilme'] : [];
  const explicitBitrate = options.encodingProfile ? undefined : options.encodingConfiguration?.bitrate;
  switch (enc.codec) {
    case 'H264':
    case 'HEVC': {
      encoderKey = `${ENCODER_OF[enc.codec]}:${preset}`;
      outputArgs.push('-c:v', ENCODER_OF[enc.codec], '-preset', preset);
      if (explicitBitrate) {
        bitrate = explicitBitrate;
        outputArgs.push('-b:v', String(bitrate), '-maxrate', String(Math.round(bitrate * 1.5)), '-bufsize', String(bitrate * 2));
      } else {
        crf = DEFAULT_CRF[enc.codec];
        outputArgs.push('-crf', String(crf));
      }
      // x264 writes the field order into the stream only when it is set at the start
      // (ffmpeg's per-frame switch comes too late for the SPS/SEI readers see first).
      if (enc.codec === 'H264') {
        if (outInterlaced) outputArgs.push(...interlaceFlags, '-x264-params', outputScanning === 'INTERLACED_TOP_FIRST' ? 'tff=1' : 'bff=1');
      } else {
        outputArgs.push('-x265-params', ['log-level=error', ...(hdr.metadata ? x265HdrParams(hdr.metadata) : [])].join(':'));
        if (container === 'MP4' || container === 'MOV') outputArgs.push('-tag:v', 'hvc1');
      }
      break;
    }
    case 'MPEG2': {
      bitrate = explicitBitrate ?? Math.round((MPEG2_AUTO_BITS_PER_PIXEL * g.width * g.height * value(g.fps)) / 1000) * 1000;
      outputArgs.push('-c:v', 'mpeg2video', '-b:v', String(bitrate), '-maxrate', String(Math.round(bitrate * 1.5)), '-bufsize', String(Math.max(1_835_008, bitrate)), '-g', '15', '-bf', '2', ...interlaceFlags);
      break;
    }
    case 'XDCAM': {
      bitrate = xdcamBitrate(enc.pixel.yuv);
      const cbr = enc.pixel.yuv === '4:2:2' ? ['-minrate', String(bitrate)] : [];
      outputArgs.push(
        '-c:v', 'mpeg2video', '-b:v', String(bitrate), ...cbr, '-maxrate', String(bitrate), '-bufsize', '17825792', '-rc_init_occupancy', '17825792',
        '-g', '12', '-bf', '2', '-intra_vlc', '1', '-non_linear_quant', '1', '-dc', '10', '-qmin', '1', '-qmax', '12', '-sc_threshold', '1000000000',
        ...interlaceFlags,
      );
      break;
    }
    case 'FFV1':
      outputArgs.push('-c:v', 'ffv1', '-level', '3', '-g', '1', '-slices', '4', '-slicecrc', '1');
      break;
    case 'PRORES':
    case 'DNXHD':
    case 'DNXHR': {
      const spec = enc.profile!;
      outputArgs.push('-c:v', ...spec.args);
      if (spec.mbps) bitrate = spec.mbps * 1_000_000;
      if (outInterlaced) outputArgs.push('-flags', '+ildct');
      break;
    }
  }
  b.work.push({ key: encoderKey, pixelsPerSecond: g.width * g.height * value(outFps) });
  outputArgs.push('-pix_fmt', pixFmt);
  outputArgs.push(
    '-color_primaries', FF_PRIMARIES[outputColor.color.colorPrimaries],
    '-color_trc', FF_TRANSFER[outputColor.color.transferCharacteristics],
    '-colorspace', FF_SPACE[outputColor.color.colorSpace],
    '-color_range', FF_RANGE[outputColor.color.colorRange],
  );
  // The output is cut to the range: frame-rate converters may run a frame past it.
  outputArgs.push('-t', secondsArg(durationS), '-max_muxing_queue_size', '4096');
  if (container === 'MP4' || container === 'MOV') outputArgs.push('-movflags', '+faststart+write_colr');
  outputArgs.push('-f', fmt.muxer);

  // --- Applied options ----------------------------------------------------------------------
  finishApplied(b, enc, container, outputScanning, bitrate, outputColor, colour);

  const frames = Math.round(durationS * value(outFps));
  const codecProfile = enc.profile ? enc.profile.streamProfile : streamProfileName(enc.codec as Codec, enc.pixel, { preset, interlaced: outInterlaced });
  const graph = `[0:v:0]${b.chain.join(',')}[vout]`;
  const output: PlanOutput = {
    width: g.width,
    height: g.height,
    sar: g.sar,
    fps: outFps,
    scanning: outputScanning,
    codec: enc.codec,
    pixelFormat: pixFmt,
    chroma: enc.pixel.yuv,
    bitDepth: enc.pixel.bitDepth,
    ...(bitrate !== undefined ? { bitrate } : {}),
    ...(crf !== undefined ? { crf } : {}),
    durationMs,
    frames,
    color: outputColor.color,
    ...(enc.codec === 'HEVC' && hdr.metadata ? { hdr: hdr.metadata } : {}),
    ...(codecProfile ? { codecProfile } : {}),
    startMs: startS * 1000,
    hasAudio: src.hasAudio,
  };
  const plan: ProcessingPlan = {
    inputArgs,
    filterGraph: graph,
    outputArgs,
    container,
    fileExtension: fmt.fileExtension,
    mimeType: fmt.mimeType,
    output,
    applied: { options: b.applied, notes: b.notes, output: appliedOutput({ ...output, container }) },
    work: b.work,
  };
  if (b.analysisChain) plan.analysis = { filterGraph: `[0:v:0]${b.analysisChain.join(',')}[vout]` };
  return plan;
}

// ---------------------------------------------------------------------------------------------
// Stages
// ---------------------------------------------------------------------------------------------

/**
 * The time (seconds from the file's start) of the source's first frame at or after `startMs`, on
 * its frame grid (frame rate, counted from where the video starts); the start itself when the
 * rate is unknown or no frame lies before `endMs`.
 */
function firstFrameAtOrAfter(startMs: number, endMs: number, src: SourceFacts): number {
  if (startMs <= 0 || !src.fpsKnown) return startMs / 1000;
  const offset = src.videoStartMs / 1000;
  const frame = Math.max(0, Math.ceil(((startMs / 1000 - offset) * src.fps.num) / src.fps.den - 1e-9));
  const t = offset + (frame * src.fps.den) / src.fps.num;
  return t < endMs / 1000 ? t : startMs / 1000;
}

function checkRange(b: PlanBuilder, range: { startMs: number; endMs: number }, src: SourceFacts): void {
  const { startMs, endMs } = range;
  if (!Number.isFinite(startMs) || startMs < 0 || (src.durationMs > 0 && startMs >= src.durationMs)) {
    b.issues.add('INVALID_START_POSITION', 'startPosMs', `must be at least 0 and before the end of the source (${src.durationMs} ms)`, startMs);
  }
  if (!Number.isFinite(endMs) || endMs <= startMs || (src.durationMs > 0 && endMs > src.durationMs)) {
    b.issues.add('INVALID_END_POSITION', 'endPosMs', `must be after startPosMs and at most the source's duration (${src.durationMs} ms)`, endMs);
  }
}

interface Encoding {
  codec: OutputCodec;
  container: MediaContainer;
  pixel: PixelSpec;
  profile?: ProfileSpec;
  codecExplicit: boolean;
}

function resolveEncoding(b: PlanBuilder): Encoding {
  const { options, src, caps } = b;
  const outProfile = options.processingSettings?.outputColorSpaceConversion;
  // The profile's HDR format decides codec and pixel format only where the profile leads.
  const leads = outProfile?.mappingMode === 'STRICT_USER' || outProfile?.mappingMode === 'USER_PRIORITY';
  const hdrFormat = leads ? outProfile?.colorProfile?.hdrFormat : undefined;
  if (options.encodingProfile) {
    const profile = PROFILE_SPECS[options.encodingProfile];
    const container = options.container ?? (src.container && CONTAINER_CODECS[src.container].includes(profile.codec) ? src.container : DEFAULT_CONTAINER[profile.codec]);
    if (options.encodingConfiguration) {
      b.note('encodingConfiguration', JSON.stringify(options.encodingConfiguration), 'ignored', `encodingProfile ${options.encodingProfile} fixes codec, pixel format and bitrate; encodingConfiguration is ignored (contract rule)`);
    }
    return { codec: profile.codec, container, pixel: { ...profile.pixel }, profile, codecExplicit: true };
  }
  const ec = options.encodingConfiguration ?? {};
  let codec: Codec;
  const codecExplicit = !!ec.codec;
  if (ec.codec) codec = ec.codec;
  else {
    const keep = src.codec;
    const fits = (c: Codec) => (!options.container || CONTAINER_CODECS[options.container].includes(c)) && caps.encoders.has(ENCODER_OF[c]);
    codec = hdrFormat === 'HDR10' ? 'HEVC' : keep && fits(keep) ? keep : 'H264';
  }
  const container = options.container ?? (src.container && CONTAINER_CODECS[src.container].includes(codec) ? src.container : DEFAULT_CONTAINER[codec]);
  if (!CONTAINER_CODECS[container].includes(codec)) {
    b.issues.add(
      'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC',
      'container',
      `${container} cannot hold ${codec} (chosen because hdrFormat HDR10 needs HEVC); it holds ${CONTAINER_CODECS[container].join(', ')}`,
      container,
    );
    throwIssues(b.issues);
  }
  const can = CODEC_PIXELS[codec];
  let pixel: PixelSpec;
  if (ec.pixelFormat) {
    pixel = { yuv: ec.pixelFormat.yuv ?? '4:2:0', bitDepth: ec.pixelFormat.bitDepth ?? 8 };
    if (!codecExplicit && (!can.yuv.includes(pixel.yuv) || !can.bitDepth.includes(pixel.bitDepth))) {
      b.issues.unsupported(
        'encodingConfiguration.pixelFormat',
        `the codec kept from the source (${codec}) cannot be ${pixel.yuv} ${pixel.bitDepth}-bit here (${can.why}); set encodingConfiguration.codec`,
        pixelFmtText(pixel),
      );
      throwIssues(b.issues);
    }
  } else {
    // Inherit the source's pixel format, adjusted to what the codec (and an HDR output) needs.
    let want: PixelSpec = { ...src.pixel };
    if (codec === 'XDCAM') want = { yuv: '4:2:2', bitDepth: 8 };
    if (hdrFormat === 'HDR10') want = { yuv: '4:2:0', bitDepth: 10 };
    else if (hdrFormat === 'PQ10' || hdrFormat === 'HLG') want = { ...want, bitDepth: 10 };
    pixel = nearestPixel(want, can);
    if (pixel.yuv !== want.yuv || pixel.bitDepth !== want.bitDepth) {
      b.note('encodingConfiguration.pixelFormat', `source ${pixelFmtText(src.pixel)}`, pixFmtName(pixel), `${codec} cannot keep ${pixelFmtText(want)} here (${can.why}); the nearest it can is used`);
    }
  }
  return { codec, container, pixel, codecExplicit };
}

function pixelFmtText(p: PixelSpec): string {
  return `${p.yuv} ${p.bitDepth}-bit`;
}

function nearestPixel(want: PixelSpec, can: { yuv: readonly ChromaSubsampling[]; bitDepth: readonly BitDepth[] }): PixelSpec {
  const chromaOrder: ChromaSubsampling[] = ['4:2:0', '4:2:2', '4:4:4'];
  const yuv = can.yuv.includes(want.yuv) ? want.yuv : [...can.yuv].filter((c) => chromaOrder.indexOf(c) <= chromaOrder.indexOf(want.yuv)).pop() ?? can.yuv[0];
  const below = can.bitDepth.filter((d) => d <= want.bitDepth);
  const bitDepth = can.bitDepth.includes(want.bitDepth) ? want.bitDepth : (below.length ? below[below.length - 1] : can.bitDepth[0]);
  return { yuv, bitDepth };
}

function colourConversionRequested(options: ProcessingOptions): boolean {
  const p = options.processingSettings;
  return !!(p?.inputColorSpaceConversion?.toneMapper || (p?.outputColorSpaceConversion && !p.outputColorSpaceConversion.metadataOnly));
}

interface InputColour {
  /** How the source is interpreted. */
  input: ColorSpec;
  toneMap?: { algorithm: string; outputNits: number; peak?: number };
}

function resolveInputColour(b: PlanBuilder): InputColour {
  const { src, options } = b;
  const conv = options.processingSettings?.inputColorSpaceConversion;
  const inferred = inferColor(src.width, src.height, value(src.fps));
  const user = profileFields(conv?.colorProfile);
  let input: ColorSpec;
  switch (conv?.mappingMode) {
    case 'STRICT_USER':
      input = layer(user);
      break;
    case 'USER_PRIORITY':
      input = layer(user, src.color, inferred);
      break;
    case 'RESOLUTION_ONLY':
      input = inferred;
      break;
    case 'SOURCE_PRIORITY':
      input = layer(src.color, user, inferred);
      break;
    default:
      input = layer(src.color, inferred);
  }
  const out: InputColour = { input };
  const tm = conv?.toneMapper;
  if (tm) {
    if (!isHdrTransfer(input.transferCharacteristics)) {
      b.note(
        'processingSettings.inputColorSpaceConversion.toneMapper',
        tm.algorithm,
        'not applied',
        `the source is interpreted as SDR (transfer ${input.transferCharacteristics}); there is nothing to tone map`,
      );
    } else {
      const outputNits = tm.outputNits ?? 100;
      const profile = conv?.colorProfile;
      const peakNits = profile?.masteringDisplay?.maxLuminance ?? profile?.maxCll;
      out.toneMap = { algorithm: tm.algorithm, outputNits, ...(peakNits ? { peak: peakNits / outputNits } : {}) };
    }
  }
  return out;
}

function setparamsArgs(c: ColorSpec): string {
  return `color_primaries=${FF_PRIMARIES[c.colorPrimaries]}:color_trc=${FF_TRANSFER[c.transferCharacteristics]}:colorspace=${FF_SPACE[c.colorSpace]}:range=${FF_RANGE[c.colorRange]}`;
}

function zscaleIn(c: ColorSpec): string | undefined {
  const t = ZSCALE_TRANSFER[c.transferCharacteristics];
  return t ? `min=${ZSCALE_SPACE[c.colorSpace]}:pin=${ZSCALE_PRIMARIES[c.colorPrimaries]}:tin=${t}:rin=${ZSCALE_RANGE[c.colorRange]}` : undefined;
}

function zscaleOut(c: ColorSpec): string | undefined {
  const t = ZSCALE_TRANSFER[c.transferCharacteristics];
  return t ? `m=${ZSCALE_SPACE[c.colorSpace]}:p=${ZSCALE_PRIMARIES[c.colorPrimaries]}:t=${t}:r=${ZSCALE_RANGE[c.colorRange]}` : undefined;
}

const SDR_709: ColorSpec = { colorSpace: 'BT709', colorPrimaries: 'BT709', transferCharacteristics: 'BT709', colorRange: 'LIMITED' };

function applyToneMap(b: PlanBuilder, input: ColorSpec, tm: NonNullable<InputColour['toneMap']>, g: Geometry): ColorSpec {
  const zin = zscaleIn(input)!;
  const algorithm = tm.algorithm.toLowerCase();
  const peak = tm.peak ? `:peak=${num(tm.peak)}` : '';
  // Every output property is explicit: zimg finds no conversion path when one is left to the frame.
  const keep = `m=${ZSCALE_SPACE[input.colorSpace]}:p=${ZSCALE_PRIMARIES[input.colorPrimaries]}:r=${ZSCALE_RANGE[input.colorRange]}`;
  const filter = `zscale=${zin}:${keep}:t=linear:npl=${num(tm.outputNits)},format=gbrpf32le,zscale=p=709,tonemap=tonemap=${algorithm}:desat=0${peak},zscale=t=709:m=709:r=limited`;
  b.add(filter, { key: 'tonemap', g });
  return SDR_709;
}

function applyCrop(b: PlanBuilder, g: Geometry): Geometry {
  const s = b.options.filterSettings ?? {};
  let x: number;
  let y: number;
  let w: number;
  let h: number;
  if (s.normalizedCropCoordinates) {
    const n = s.normalizedCropCoordinates;
    x = evenDown(n.x1 * g.width);
    y = evenDown(n.y1 * g.height);
    w = Math.min(evenDown(n.x2 * g.width + 1) - x, evenDown(g.width - x));
    h = Math.min(evenDown(n.y2 * g.height + 1) - y, evenDown(g.height - y));
  } else {
    const r = s.cropRectangle!;
    if ((r.x ?? 0) + r.width > g.width || (r.y ?? 0) + r.height > g.height) {
      b.issues.add('VALIDATION_ERROR', 'filterSettings.cropRectangle', `the crop rectangle reaches outside the ${g.width}x${g.height} frame`, r);
      throwIssues(b.issues);
    }
    x = evenDown(r.x ?? 0);
    y = evenDown(r.y ?? 0);
    w = evenDown(r.width + (r.x ?? 0) - x);
    h = evenDown(r.height + (r.y ?? 0) - y);
  }
  if (w < 2 || h < 2) {
    b.issues.add('VALIDATION_ERROR', s.normalizedCropCoordinates ? 'filterSettings.normalizedCropCoordinates' : 'filterSettings.cropRectangle', `the crop area is smaller than 2x2 pixels of the ${g.width}x${g.height} frame`);
    throwIssues(b.issues);
  }
  setSetting(b.applied, 'cropRectangle', { width: w, height: h, x, y });
  if (w === g.width && h === g.height) return g;
  b.add(`crop=w=${w}:h=${h}:x=${x}:y=${y}`, undefined, true);
  return { ...g, width: w, height: h };
}

function applyFaceForward(b: PlanBuilder, g: Geometry): void {
  const ff = b.options.filterSettings!.faceForward!;
  const parts: string[] = [];
  if (ff.autoWhiteBalance) parts.push('grayworld');
  if (ff.colorBoost > 0) parts.push(`vibrance=intensity=${num((ff.colorBoost / 30) * 0.6, 3)}`);
  if (ff.relightIntensity > 0) parts.push(`eq=gamma=${num(1 + (ff.relightIntensity / 200) * 0.4, 3)}`);
  for (const p of parts) b.add(p, { key: p.split('=')[0], g });
  b.note(
    'filters.augmenter',
    'FACEFORWARD',
    parts.join(',') || 'nothing (all strengths 0)',
    'FACEFORWARD is a proprietary AI face enhancer; this installation has no face model and applies the classical equivalent to the whole frame: grey-world white balance (autoWhiteBalance), vibrance (colorBoost 0..30 -> intensity 0..0.6) and a gamma lift for relighting (relightIntensity 0..200% -> gamma 1..1.4).',
  );
}

const CLARITY: Record<string, number> = { NONE: 0, MARGINAL: 0.2, VERY_LOW: 0.35, LOW: 0.5, MEDIUM: 0.75, HIGH: 1.0, VERY_HIGH: 1.4 };

/** The scaler's target: size and sample aspect ratio. */
export function scalerTarget(r: ResolutionSettings, g: { width: number; height: number; sar: Rational }): { width: number; height: number; sar: Rational; field: string } {
  const storage = g.width / g.height;
  const display = storage * value(g.sar);
  const arTag = r.aspectRatioTag;
  const aspect = arTag === '16:9' ? 16 / 9 : arTag === '4:3' ? 4 / 3 : arTag === 'STORAGE' || arTag === 'PAR_PRESERVED' ? storage : display;
  const sar = arTag === 'PAR_PRESERVED' ? g.sar : { num: 1, den: 1 };
  if (r.tag && r.tag in RESOLUTION_MULTIPLIERS) {
    const n = RESOLUTION_MULTIPLIERS[r.tag as keyof typeof RESOLUTION_MULTIPLIERS];
    return { width: g.width * n, height: g.height * n, sar: g.sar, field: 'filterSettings.resolution.tag' };
  }
  if (r.tag) {
    const box = NAMED_RESOLUTIONS[r.tag as keyof typeof NAMED_RESOLUTIONS];
    // The picture is fitted into the named frame with its aspect ratio kept (a 4:3 source
    // becomes 1440x1080 for FULL_HD); fixedOutputResolution pads it to the full frame.
    // With PAR_PRESERVED the pixels keep the source's shape, so the storage ratio is fitted.
    const fitAspect = arTag === 'PAR_PRESERVED' ? storage : aspect;
    if (fitAspect >= box.width / box.height) return { width: box.width, height: even(box.width / fitAspect), sar, field: 'filterSettings.resolution.tag' };
    return { width: even(box.height * fitAspect), height: box.height, sar, field: 'filterSettings.resolution.tag' };
  }
  if (r.width !== undefined && r.height !== undefined) return { width: even(r.width), height: even(r.height), sar: { num: 1, den: 1 }, field: 'filterSettings.resolution' };
  if (r.width !== undefined) return { width: even(r.width), height: even(r.width / aspect), sar, field: 'filterSettings.resolution.height' };
  return { width: even(r.height! * aspect), height: even(r.height!), sar, field: 'filterSettings.resolution.width' };
}

function applyScaler(b: PlanBuilder, g: Geometry, scaler: NonNullable<NonNullable<ProcessingOptions['filters']>['scaler']>): Geometry {
  const s = b.options.filterSettings!;
  const r = s.resolution!;
  const t = scalerTarget(r, g);
  if (t.width < LIMITS.minWidth || t.width > LIMITS.maxWidth || t.height < LIMITS.minHeight || t.height > LIMITS.maxHeight) {
    b.issues.add(
      'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
      t.field,
      `the scaler's target is ${t.width}x${t.height}; it must be within ${LIMITS.minWidth}..${LIMITS.maxWidth} x ${LIMITS.minHeight}..${LIMITS.maxHeight}`,
      `${t.width}x${t.height}`,
    );
    throwIssues(b.issues);
  }
  const ai = scaler !== 'SCALE';
  if (ai) {
    // Super-resolution only enlarges: the target may not be below the source's size once its
    // pixel aspect ratio is taken into account (reference code
    // TARGET_RESOLUTION_CANNOT_BE_LOWER_THAN_CALCULATED_ASPECT_RATIO_RESOLUTION).
    const sarV = value(g.sar);
    const tSar = value(t.sar);
    const srcDisplayW = g.width * Math.max(1, sarV / tSar);
    const srcDisplayH = g.height * Math.max(1, tSar / sarV);
    if (t.width < Math.floor(srcDisplayW) - 1 || t.height < Math.floor(srcDisplayH) - 1) {
      b.issues.add(
        'TARGET_RESOLUTION_CANNOT_BE_LOWER_THAN_CALCULATED_ASPECT_RATIO_RESOLUTION',
        t.field,
        `${scaler} only upscales: the target ${t.width}x${t.height} is below the source's ${Math.round(srcDisplayW)}x${Math.round(srcDisplayH)} (aspect ratio applied); use the SCALE scaler to shrink`,
        `${t.width}x${t.height}`,
      );
      throwIssues(b.issues);
    }
  }
  setSetting(b.applied, 'resolution', { ...r, width: t.width, height: t.height });
  const resized = t.width !== g.width || t.height !== g.height;
  const scaleFilter = `scale=w=${t.width}:h=${t.height}:flags=lanczos`;
  if (resized) b.add(scaleFilter, { key: 'scale_lanczos', g: { ...g, width: t.width, height: t.height } });
  const out: Geometry = { ...g, width: t.width, height: t.height, sar: t.sar };
  if (!ai) return out;

  const factor = Math.max(t.width / g.width, t.height / g.height);
  const m = factor > 2 ? 7 : 5;
  let sharpen: string[] = [];
  let what: string;
  if (scaler === 'DVRES2') {
    const variant = s.dvres2Variant ?? 'GENERIC';
    setSetting(b.applied, 'dvres2Variant', variant);
    if (variant === 'FINE_TUNING') sharpen = [`unsharp=3:3:0.6:3:3:0`];
    else if (variant === 'SELFIE_STYLE') sharpen = ['hqdn3d=1.5:1.5:3:3', `unsharp=${m}:${m}:0.4:3:3:0`];
    else sharpen = [`unsharp=${m}:${m}:0.8:3:3:0`];
    what = `DVRES2 (${variant}) is a proprietary AI super-resolution model`;
  } else if (scaler === 'DVRES') {
    sharpen = [`unsharp=${m}:${m}:0.6:3:3:0`];
    what = 'DVRES is a proprietary AI super-resolution model';
  } else {
    const boost = s.clarityBoost ?? 'MEDIUM';
    setSetting(b.applied, 'clarityBoost', boost);
    if (CLARITY[boost] > 0) sharpen = [`unsharp=${m}:${m}:${CLARITY[boost]}:3:3:0`];
    what = `PABSR1 (clarityBoost ${boost}) is a proprietary AI super-resolution model`;
  }
  for (const f of sharpen) b.add(f, { key: f.startsWith('hqdn3d') ? 'hqdn3d' : 'unsharp', g: out });
  const appliedAs = [resized ? scaleFilter : 'no resampling (same size)', ...sharpen].join(',');
  b.note(
    'filters.scaler',
    scaler,
    appliedAs,
    `${what}; this installation applies its best classical equivalent: Lanczos resampling followed by an unsharp mask${sharpen.length ? '' : ' (none at this clarity)'}. It does not synthesise detail the way a trained model does.`,
  );
  return out;
}

function applyFrameRate(b: PlanBuilder, g: Geometry, frc: NonNullable<NonNullable<ProcessingOptions['filters']>['frameRateConverter']>): Geometry {
  const r = b.options.filterSettings!.frameRate!;
  const target = r.tag ? FRAME_RATE_TAGS[r.tag] : fpsRational(r.fps!);
  setSetting(b.applied, 'frameRate', { ...(r.tag ? { tag: r.tag } : {}), fps: Math.round(value(target) * 1000) / 1000 });
  const rate = rstr(target);
  let filter: string;
  let key: string;
  if (frc === 'FPS') [filter, key] = [`fps=fps=${rate}`, 'fps'];
  else if (frc === 'FBLEND') [filter, key] = [`framerate=fps=${rate}`, 'framerate'];
  // minterpolate stops at the last input frame's time, a frame or two short of the end: two
  // repeated frames at the end let it fill the last interval (the output is cut to the range).
  else if (frc === 'MCINTERPOLATE') [filter, key] = [`tpad=stop_mode=clone:stop=2,minterpolate=fps=${rate}:mi_mode=mci:mc_mode=obmc:me_mode=bilat`, 'minterpolate'];
  else [filter, key] = [`tpad=stop_mode=clone:stop=2,minterpolate=fps=${rate}:mi_mode=mci:mc_mode=aobmc:me_mode=bidir:vsbmc=1`, 'minterpolate_vfi'];
  const out = { ...g, fps: target };
  b.add(filter, { key, g: out });
  if (frc === 'VFI') {
    b.note('filters.frameRateConverter', 'VFI', filter, 'VFI is a proprietary AI frame interpolation model; this installation applies its best classical equivalent, motion-compensated interpolation with ffmpeg minterpolate (adaptive overlapped block motion compensation, bidirectional motion estimation, variable-size blocks).');
  }
  return out;
}

function applyFilmGrain(b: PlanBuilder, g: Geometry): void {
  const fg = b.options.filterSettings!.filmGrain!;
  if (fg.grainStrength <= 0) {
    b.note('filters.postProcessor', 'FILMGRAIN', 'not applied', 'grainStrength 0 adds no grain');
    return;
  }
  b.add(filmGrainFilter(g.width, g.height, fg.grainSize, fg.grainStrength), { key: 'filmgrain', g });
}

interface OutputColour {
  color: ColorSpec;
  metadataOnly: boolean;
  inverse?: { algorithm: string; npl: number; saturation?: number };
  profile?: Colorimetry;
}

function resolveOutputColour(b: PlanBuilder, working: ColorSpec, g: Geometry, interlaced: boolean): OutputColour {
  const conv = b.options.processingSettings?.outputColorSpaceConversion;
  if (!conv) return { color: working, metadataOnly: true };
  const fps = value(g.fps) / (interlaced ? 2 : 1);
  const inferred = inferColor(g.width, g.height, fps);
  const user = profileFields(conv.colorProfile);
  let color: ColorSpec;
  switch (conv.mappingMode) {
    case 'STRICT_USER':
      color = layer(user);
      break;
    case 'SOURCE_PRIORITY':
      color = layer(b.src.color, user, inferred);
      break;
    case 'USER_PRIORITY':
      color = layer(user, working, inferred);
      break;
    case 'RESOLUTION_ONLY':
      color = inferred;
      break;
    default: // INPUT_PRIORITY
      color = layer(working, user, inferred);
  }
  const out: OutputColour = { color, metadataOnly: !!conv.metadataOnly, ...(conv.mappingMode !== 'RESOLUTION_ONLY' && conv.colorProfile ? { profile: conv.colorProfile } : {}) };
  const itm = conv.inverseToneMapper;
  if (itm) {
    if (isHdrTransfer(working.transferCharacteristics)) {
      b.note('processingSettings.outputColorSpaceConversion.inverseToneMapper', itm.algorithm, 'not applied', 'the picture is already HDR; there is nothing to expand');
    } else if (itm.algorithm === 'INFINITEHDR') {
      out.inverse = { algorithm: itm.algorithm, npl: 203, saturation: itm.saturationBoost ?? 1.25 };
    } else {
      out.inverse = { algorithm: itm.algorithm, npl: itm.outputNits ?? 100 };
    }
  }
  return out;
}

function convertColour(b: PlanBuilder, from: ColorSpec, to: ColorSpec, oc: OutputColour, g: Geometry): void {
  const field = 'processingSettings.outputColorSpaceConversion';
  const hdr = isHdrTransfer(from.transferCharacteristics) || isHdrTransfer(to.transferCharacteristics);
  const zin = zscaleIn(from);
  const zout = zscaleOut(to);
  if (oc.inverse?.saturation !== undefined) {
    b.add(`eq=saturation=${num(oc.inverse.saturation, 3)}`, { key: 'eq', g });
  }
  if (b.has('zscale') && zin && zout) {
    const npl = hdr ? `:npl=${num(oc.inverse?.npl ?? 100)}` : '';
    b.add(`zscale=${zin}:${zout}${npl}:dither=error_diffusion`, { key: 'zscale', g });
  } else if (!hdr && b.has('colorspace') && COLORSPACE_SPACE[from.colorSpace] && COLORSPACE_SPACE[to.colorSpace] && COLORSPACE_TRANSFER[from.transferCharacteristics] && COLORSPACE_TRANSFER[to.transferCharacteristics]) {
    b.add(
      `colorspace=ispace=${COLORSPACE_SPACE[from.colorSpace]}:iprimaries=${COLORSPACE_PRIMARIES[from.colorPrimaries]}:itrc=${COLORSPACE_TRANSFER[from.transferCharacteristics]}:irange=${COLORSPACE_RANGE[from.colorRange]}` +
        `:space=${COLORSPACE_SPACE[to.colorSpace]}:primaries=${COLORSPACE_PRIMARIES[to.colorPrimaries]}:trc=${COLORSPACE_TRANSFER[to.transferCharacteristics]}:range=${COLORSPACE_RANGE[to.colorRange]}`,
      { key: 'colorspace', g },
    );
  } else {
    const why = !zin || !zout ? 'zimg has no SMPTE 240M transfer curve' : hdr ? 'PQ and HLG conversions need the zscale filter' : 'neither zscale nor colorspace can do it';
    b.issues.unsupported(field, `cannot convert ${describe(from)} to ${describe(to)} here (${why})`);
    return;
  }
  if (oc.inverse) {
    const a = oc.inverse;
    b.note(
      `${field}.inverseToneMapper`,
      a.algorithm,
      a.saturation !== undefined ? `eq=saturation=${a.saturation},zscale (SDR white at ${a.npl} nits)` : `zscale (SDR white at ${a.npl} nits)`,
      a.algorithm === 'INFINITEHDR'
        ? 'INFINITEHDR is a proprietary AI inverse tone mapper; this installation applies the classical equivalent: saturation boost, then a linear expansion placing SDR reference white at 203 nits (ITU-R BT.2408).'
        : 'LINEAR inverse tone mapping: a linear expansion placing SDR white at outputNits.',
    );
  }
}

function describe(c: ColorSpec): string {
  return `${c.colorSpace}/${c.colorPrimaries}/${c.transferCharacteristics}/${c.colorRange}`;
}

function checkOutputSize(b: PlanBuilder, g: Geometry, enc: Encoding, interlaced: boolean): void {
  if (g.width < LIMITS.minWidth || g.width > LIMITS.maxWidth || g.height < LIMITS.minHeight || g.height > LIMITS.maxHeight) {
    b.issues.add(
      'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
      'filters',
      `the output would be ${g.width}x${g.height}; it must be within ${LIMITS.minWidth}..${LIMITS.maxWidth} x ${LIMITS.minHeight}..${LIMITS.maxHeight}`,
      `${g.width}x${g.height}`,
    );
    return;
  }
  if (enc.codec === 'DNXHD') {
    const sizes = dnxhdFrameSizes(enc.profile!.mbps!, enc.pixel.bitDepth as 8 | 10);
    if (!sizes.some((s) => s.width === g.width && s.height === g.height && s.interlaced === interlaced)) {
      const list = sizes.map((s) => `${s.width}x${s.height}${s.interlaced ? 'i' : 'p'}`).join(', ') || 'none';
      b.issues.add(
        'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
        'encodingProfile',
        `DNxHD has fixed frame sizes; ${b.options.encodingProfile} takes ${list}, the output would be ${g.width}x${g.height}${interlaced ? 'i' : 'p'} (scale to one of them, or use a DNxHR profile, which takes any size)`,
        b.options.encodingProfile,
      );
    }
  }
  if (enc.codec === 'DNXHR' && (g.width < DNXHR_MIN_SIZE.width || g.height < DNXHR_MIN_SIZE.height)) {
    b.issues.add(
      'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
      'encodingProfile',
      `DNxHR frames are at least ${DNXHR_MIN_SIZE.width}x${DNXHR_MIN_SIZE.height}; the output would be ${g.width}x${g.height} (scale it up, or use another codec)`,
      b.options.encodingProfile,
    );
  }
  if (enc.codec === 'XDCAM') {
    const sizes = xdcamFrameSizes(enc.pixel.yuv);
    if (!sizes.some((s) => s.width === g.width && s.height === g.height)) {
      b.issues.add(
        'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
        'encodingConfiguration.codec',
        `XDCAM HD${enc.pixel.yuv === '4:2:2' ? '422' : ''} takes ${sizes.map((s) => `${s.width}x${s.height}`).join(', ')}; the output would be ${g.width}x${g.height}`,
        'XDCAM',
      );
    }
  }
  if ((enc.codec === 'MPEG2' || enc.codec === 'XDCAM') && (g.width > MPEG2_MAX_SIDE || g.height > MPEG2_MAX_SIDE)) {
    b.issues.add('TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'encodingConfiguration.codec', `MPEG-2 cannot code frames of 4096 pixels or more; the output would be ${g.width}x${g.height}`, enc.codec);
  }
  if (interlaced && enc.pixel.yuv === '4:2:0' && g.height % 4 !== 0) {
    b.issues.add('TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'processingSettings.outputScanning', `interlaced 4:2:0 needs a height divisible by 4; the output would be ${g.height} high`, g.height);
  }
}

// ---------------------------------------------------------------------------------------------
// Applied options
// ---------------------------------------------------------------------------------------------

function setFilter(o: ProcessingOptions, stage: keyof NonNullable<ProcessingOptions['filters']>, v: null): void {
  o.filters = { ...(o.filters ?? {}), [stage]: v };
}

function setSetting<K extends keyof NonNullable<ProcessingOptions['filterSettings']>>(o: ProcessingOptions, key: K, v: NonNullable<ProcessingOptions['filterSettings']>[K]): void {
  o.filterSettings = { ...(o.filterSettings ?? {}), [key]: v };
}

function dropSetting(o: ProcessingOptions, keys: (keyof NonNullable<ProcessingOptions['filterSettings']>)[]): void {
  if (!o.filterSettings) return;
  for (const k of keys) delete o.filterSettings[k];
  if (!Object.keys(o.filterSettings).length) delete o.filterSettings;
}

function finishApplied(b: PlanBuilder, enc: Encoding, container: MediaContainer, scanning: Scanning, bitrate: number | undefined, oc: OutputColour, ic: InputColour): void {
  const a = b.applied;
  const f = a.filters ?? {};
  // Filters that are off: remove their settings (contract: ignored).
  if (!f.deinterlacer) dropSetting(a, ['interlacedFieldOrderMode']);
  if (a.filters) {
    for (const k of Object.keys(a.filters) as (keyof typeof f)[]) if (a.filters[k] === undefined) delete a.filters[k];
  }
  a.container = container;
  if (a.encodingProfile) delete a.encodingConfiguration;
  else {
    a.encodingConfiguration = {
      codec: enc.codec as Codec,
      pixelFormat: { yuv: enc.pixel.yuv, bitDepth: enc.pixel.bitDepth, name: pixFmtName(enc.pixel) },
      ...(bitrate !== undefined && (enc.codec !== 'H264' && enc.codec !== 'HEVC' ? true : !!b.options.encodingConfiguration?.bitrate) ? { bitrate } : {}),
    };
  }
  a.processingSettings = { ...(a.processingSettings ?? {}), outputScanning: scanning };
  const inConv = a.processingSettings.inputColorSpaceConversion;
  if (inConv) {
    inConv.colorProfile = { ...(inConv.colorProfile ?? {}), ...ic.input };
    inConv.metadataOnly = inConv.metadataOnly ?? false;
    if (inConv.toneMapper) {
      if (ic.toneMap) inConv.toneMapper = { algorithm: inConv.toneMapper.algorithm, outputNits: ic.toneMap.outputNits };
      else delete inConv.toneMapper;
    }
  }
  const outConv = a.processingSettings.outputColorSpaceConversion;
  if (outConv) {
    outConv.colorProfile = { ...(outConv.mappingMode === 'RESOLUTION_ONLY' ? {} : (outConv.colorProfile ?? {})), ...oc.color };
    outConv.metadataOnly = outConv.metadataOnly ?? false;
    if (outConv.inverseToneMapper && !oc.inverse) delete outConv.inverseToneMapper;
  }
}

// ---------------------------------------------------------------------------------------------
// Argument lists
// ---------------------------------------------------------------------------------------------

/** A path ffmpeg will not mistake for an option. */
function safePath(p: string): string {
  return p.startsWith('-') ? `./${p}` : p;
}

/** The vidstab transforms file of an output: next to it, `<output>.trf`. */
export function transformsPath(output: string): string {
  return `${output}.trf`;
}

function withTransforms(graph: string, output: string): string {
  return graph.split(TRANSFORMS_TOKEN).join(escapeFilterValue(transformsPath(output)));
}

/**
 * The full ffmpeg argument list of the plan (the runner adds `-hide_banner -nostdin -loglevel
 * error` and `-progress`): overwrite, seek/trim, input, the filter graph, the video map, then
 * audio, encoder and muxer arguments, and the output path.
 */
export function processingArgs(plan: ProcessingPlan, input: string, output: string): string[] {
  return [
    '-y',
    ...plan.inputArgs,
    '-i', safePath(input),
    '-filter_complex', withTransforms(plan.filterGraph, output),
    '-map', '[vout]',
    ...plan.outputArgs,
    safePath(output),
  ];
}

/** The analysis pass (vidstab motion detection into `<output>.trf`), when the plan has one. */
export function analysisArgs(plan: ProcessingPlan, input: string, output: string): string[] | undefined {
  if (!plan.analysis) return undefined;
  return ['-y', ...plan.inputArgs, '-i', safePath(input), '-filter_complex', withTransforms(plan.analysis.filterGraph, output), '-map', '[vout]', '-an', '-sn', '-dn', '-f', 'null', '-'];
}
