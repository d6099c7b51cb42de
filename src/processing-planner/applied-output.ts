/**
 * The output a plan makes, in the contract's `VideoProcessingAppliedOutput` shape (names and
 * enum strings are the contract's; generated types stay at the edge): codec and its profile,
 * container, pixel format, size, pixel aspect ratio, frame rate, scanning, rate control, where
 * in the source it starts, duration, and the colour profile with the HDR10 metadata written.
 */
import type { OutputCheckExpectation, Scanning } from '../media';
import { FF_PRIMARIES, FF_RANGE, FF_SPACE, FF_TRANSFER, type ColorSpec } from './colour';
import { readPixelFormat, recordedColour } from './encoders';
import type { HdrStaticMetadata } from './hdr-metadata';
import type { BitDepth, ChromaSubsampling, Colorimetry, HdrFormat, MasteringDisplay, MediaContainer, OutputCodec } from './options';

export interface AppliedOutput {
  codec: OutputCodec;
  codecProfile?: string;
  container: MediaContainer;
  pixelFormat: { yuv: ChromaSubsampling; bitDepth: BitDepth; name: string };
  width: number;
  height: number;
  sampleAspectRatio: string;
  frameRate: { frameRate: number; rational: string };
  scanning: Scanning;
  bitrate?: number;
  constantRateFactor?: number;
  startPositionMilliseconds: number;
  durationMilliseconds: number;
  colorProfile: AppliedColorProfile;
}

/** A colour profile as written: a mastering display always has its minimum luminance. */
export type AppliedColorProfile = Omit<Colorimetry, 'masteringDisplay'> & { masteringDisplay?: MasteringDisplay & { minLuminance: number } };

export interface AppliedOutputFacts {
  codec: OutputCodec;
  codecProfile?: string;
  container: MediaContainer;
  chroma: ChromaSubsampling;
  bitDepth: BitDepth;
  pixelFormat: string;
  width: number;
  height: number;
  sar: { num: number; den: number };
  fps: { num: number; den: number };
  scanning: Scanning;
  bitrate?: number;
  crf?: number;
  startMs: number;
  durationMs: number;
  color: ColorSpec;
  hdr?: HdrStaticMetadata;
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

/** The HDR format the output's colour is, when it is exactly what the format implies (BT.2020 NC, BT.2020, limited). */
function hdrFormatOf(color: ColorSpec, hdr: HdrStaticMetadata | undefined): HdrFormat | undefined {
  if (color.colorSpace !== 'BT2020NC' || color.colorPrimaries !== 'BT2020' || color.colorRange !== 'LIMITED') return undefined;
  if (color.transferCharacteristics === 'ARIB_STD_B67') return 'HLG';
  if (color.transferCharacteristics === 'SMPTE2084') return hdr?.hdr10 ? 'HDR10' : 'PQ10';
  return undefined;
}

export function appliedOutput(o: AppliedOutputFacts): AppliedOutput {
  const hdrFormat = hdrFormatOf(o.color, o.hdr);
  const md = o.hdr?.masteringDisplay;
  const point = ([x, y]: [number, number]) => ({ x, y });
  const colorProfile: AppliedColorProfile = {
    // As the file records it (MXF's names for SMPTE 170M; no range for FFV1 in MOV).
    ...recordedColour(o.codec, o.container, o.color),
    ...(hdrFormat ? { hdrFormat } : {}),
    ...(md
      ? { masteringDisplay: { red: point(md.red), green: point(md.green), blue: point(md.blue), whitePoint: point(md.whitePoint), minLuminance: md.minLuminance, maxLuminance: md.maxLuminance } }
      : {}),
    ...(o.hdr?.maxCll !== undefined ? { maxCll: o.hdr.maxCll } : {}),
    ...(o.hdr?.maxFall !== undefined ? { maxFall: o.hdr.maxFall } : {}),
  };
  return {
    codec: o.codec,
    ...(o.codecProfile ? { codecProfile: o.codecProfile } : {}),
    container: o.container,
    // As the file is read (ProRes 4444 is 12-bit; full-range H.264 is yuvj...), not as encoded.
    pixelFormat: (({ pixel, name }) => ({ yuv: pixel.yuv, bitDepth: pixel.bitDepth, name }))(readPixelFormat(o.codec, { yuv: o.chroma, bitDepth: o.bitDepth }, o.color.colorRange === 'FULL')),
    width: o.width,
    height: o.height,
    sampleAspectRatio: `${o.sar.num}:${o.sar.den}`,
    frameRate: { frameRate: round(o.fps.num / o.fps.den, 3), rational: `${o.fps.num}:${o.fps.den}` },
    scanning: o.scanning,
    ...(o.bitrate !== undefined ? { bitrate: o.bitrate } : {}),
    ...(o.crf !== undefined ? { constantRateFactor: o.crf } : {}),
    startPositionMilliseconds: round(o.startMs, 3),
    durationMilliseconds: o.durationMs,
    colorProfile,
  };
}

/**
 * What the output checker (`checkOutput`) must find in the file for an applied output: its
 * scanning and field order, pixel format and bit depth, codec profile, frame rate, size and the
 * colour tags it records, in ffprobe's names.
 */
export function checkerExpectation(a: AppliedOutput): OutputCheckExpectation {
  const c = a.colorProfile;
  return {
    scanning: a.scanning,
    pixelFormat: a.pixelFormat.name,
    bitDepth: a.pixelFormat.bitDepth,
    ...(a.codecProfile ? { codecProfile: a.codecProfile } : {}),
    frameRate: a.frameRate.rational,
    width: a.width,
    height: a.height,
    ...(c.colorSpace ? { colorSpace: FF_SPACE[c.colorSpace] } : {}),
    ...(c.colorPrimaries ? { colorPrimaries: FF_PRIMARIES[c.colorPrimaries] } : {}),
    ...(c.transferCharacteristics ? { colorTransfer: FF_TRANSFER[c.transferCharacteristics] } : {}),
    ...(c.colorRange ? { colorRange: FF_RANGE[c.colorRange] } : {}),
  };
}
