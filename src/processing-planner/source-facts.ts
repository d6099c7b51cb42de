/** What the planner needs to know of the probed source, read once from the probe. */
import type { Hdr10Metadata, ProbeResult, Scanning } from '../media';
import type { ColorSpec } from './colour';
import { colorOfSource } from './colour';
import { codecOfSource, containerOfSource, type PixelSpec } from './encoders';
import type { BitDepth, ChromaSubsampling, Codec, MediaContainer } from './options';
import { fpsRational, parseRational, toRational, value, type Rational } from './rational';

export interface SourceFacts {
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
  /** When the video starts after the file (ms, rounded: notes and the audio/video offset rule). */
  videoStartMs: number;
  /** The same to the microsecond, where the frame grid starts (seconds from the file's start). */
  videoStartS: number;
  /** When the audio starts after the file (ms, rounded); undefined without audio or when the probe did not say (unknown). */
  audioStartMs?: number;
  /** Constant or variable frame rate; undefined when the probe did not say (unknown). */
  frameRateMode?: 'CONSTANT' | 'VARIABLE';
  /** The probe's container name (`mp4`, `mpegts`, ...), any container, not only output ones. */
  containerName?: string;
  hdr10?: Hdr10Metadata;
}

export function sourceFacts(source: ProbeResult): SourceFacts {
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
    videoStartMs: Math.round(source.videoStartMs ?? 0),
    videoStartS: (source.videoStartMs ?? 0) / 1000,
    ...(source.hasAudio && source.audioStartMs !== undefined ? { audioStartMs: Math.round(source.audioStartMs) } : {}),
    ...(source.frameRateMode ? { frameRateMode: source.frameRateMode } : {}),
    ...(m.containerName ? { containerName: m.containerName } : {}),
    ...(source.hdr10 ? { hdr10: source.hdr10 } : {}),
  };
}

/**
 * Containers whose demuxers seek exactly: from an index, to the keyframe at or before the time
 * asked for. An MPEG-TS (or program stream, MXF, AVI, ...) demuxer searches the bytes for a
 * keyframe and may land after it, losing the frames in between.
 */
const EXACTLY_SEEKABLE = new Set(['mp4', 'm4a', 'mov', '3gp', '3g2', 'mj2', 'matroska', 'webm']);

/** Whether an input `-ss` on the source lands on the keyframe at or before the time asked for. */
export function seeksExactly(src: Pick<SourceFacts, 'containerName'>): boolean {
  return src.containerName !== undefined && EXACTLY_SEEKABLE.has(src.containerName);
}
