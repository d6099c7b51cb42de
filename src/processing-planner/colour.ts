/**
 * Colour: the contract's colorimetry enums in ffmpeg's and zimg's spellings, what an HDR format
 * implies, the resolution-only inference, and the checks a colour profile must pass.
 */
import type { MasteringDisplayMetadata } from '../media';
import type { IssueList, ProcessingErrorCode } from './errors';
import type { ColorPrimaries, ColorRange, ColorSpace, Colorimetry, HdrFormat, MasteringDisplay, TransferCharacteristics } from './options';

/** A complete colour description (what a stream is, or is converted to). */
export interface ColorSpec {
  colorSpace: ColorSpace;
  colorPrimaries: ColorPrimaries;
  transferCharacteristics: TransferCharacteristics;
  colorRange: ColorRange;
}

export const COLOR_KEYS = ['colorSpace', 'colorPrimaries', 'transferCharacteristics', 'colorRange'] as const;

/** ffmpeg's names (`-colorspace`, `-color_primaries`, `-color_trc`, `-color_range`, setparams). */
export const FF_SPACE: Record<ColorSpace, string> = {
  BT470BG: 'bt470bg',
  FCC: 'fcc',
  SMPTE170M: 'smpte170m',
  SMPTE240M: 'smpte240m',
  BT709: 'bt709',
  BT2020NC: 'bt2020nc',
  BT2020C: 'bt2020c',
};
export const FF_PRIMARIES: Record<ColorPrimaries, string> = {
  BT470BG: 'bt470bg',
  BT470M: 'bt470m',
  SMPTE170M: 'smpte170m',
  SMPTE240M: 'smpte240m',
  FILM: 'film',
  BT709: 'bt709',
  BT2020: 'bt2020',
  SMPTE428: 'smpte428',
  SMPTE431: 'smpte431',
  SMPTE432: 'smpte432',
};
export const FF_TRANSFER: Record<TransferCharacteristics, string> = {
  BT470BG: 'bt470bg',
  BT470M: 'bt470m',
  SMPTE170M: 'smpte170m',
  SMPTE240M: 'smpte240m',
  BT709: 'bt709',
  BT2020_10: 'bt2020-10',
  BT2020_12: 'bt2020-12',
  LINEAR: 'linear',
  SMPTE2084: 'smpte2084',
  ARIB_STD_B67: 'arib-std-b67',
};
export const FF_RANGE: Record<ColorRange, string> = { LIMITED: 'tv', FULL: 'pc' };

/**
 * zscale (zimg) spellings. zimg has no SMPTE 240M transfer; ffmpeg 5.1 spells the 240M matrix
 * `smpte2400m`, so its H.273 number 7 is used.
 */
export const ZSCALE_SPACE: Record<ColorSpace, string> = {
  BT470BG: '470bg',
  FCC: 'fcc',
  SMPTE170M: '170m',
  SMPTE240M: '7',
  BT709: '709',
  BT2020NC: '2020_ncl',
  BT2020C: '2020_cl',
};
export const ZSCALE_PRIMARIES: Record<ColorPrimaries, string> = {
  BT470BG: 'bt470bg',
  BT470M: 'bt470m',
  SMPTE170M: '170m',
  SMPTE240M: '240m',
  FILM: 'film',
  BT709: '709',
  BT2020: '2020',
  SMPTE428: 'smpte428',
  SMPTE431: 'smpte431',
  SMPTE432: 'smpte432',
};
export const ZSCALE_TRANSFER: Partial<Record<TransferCharacteristics, string>> = {
  BT470BG: 'bt470bg',
  BT470M: 'bt470m',
  SMPTE170M: '601',
  BT709: '709',
  BT2020_10: '2020_10',
  BT2020_12: '2020_12',
  LINEAR: 'linear',
  SMPTE2084: 'smpte2084',
  ARIB_STD_B67: 'arib-std-b67',
};
export const ZSCALE_RANGE: Record<ColorRange, string> = { LIMITED: 'limited', FULL: 'full' };

/** The `colorspace` filter's spellings (no BT.2020 constant-luminance, PQ or HLG). */
export const COLORSPACE_SPACE: Partial<Record<ColorSpace, string>> = {
  BT470BG: 'bt470bg',
  FCC: 'fcc',
  SMPTE170M: 'smpte170m',
  SMPTE240M: 'smpte240m',
  BT709: 'bt709',
  BT2020NC: 'bt2020ncl',
};
export const COLORSPACE_PRIMARIES: Record<ColorPrimaries, string> = { ...FF_PRIMARIES };
export const COLORSPACE_TRANSFER: Partial<Record<TransferCharacteristics, string>> = {
  BT470BG: 'gamma28',
  BT470M: 'gamma22',
  SMPTE170M: 'smpte170m',
  SMPTE240M: 'smpte240m',
  BT709: 'bt709',
  BT2020_10: 'bt2020-10',
  BT2020_12: 'bt2020-12',
  LINEAR: 'linear',
};
export const COLORSPACE_RANGE: Record<ColorRange, string> = { LIMITED: 'tv', FULL: 'pc' };

function invert<K extends string>(table: Record<K, string>): Record<string, K> {
  const out: Record<string, K> = {};
  for (const [k, v] of Object.entries(table) as [K, string][]) out[v] = k;
  return out;
}
const FROM_FF_SPACE: Record<string, ColorSpace> = { ...invert(FF_SPACE), bt2020ncl: 'BT2020NC', bt2020_ncl: 'BT2020NC' };
const FROM_FF_PRIMARIES = invert(FF_PRIMARIES);
const FROM_FF_TRANSFER: Record<string, TransferCharacteristics> = { ...invert(FF_TRANSFER), gamma22: 'BT470M', gamma28: 'BT470BG' };
const FROM_FF_RANGE: Record<string, ColorRange> = { tv: 'LIMITED', mpeg: 'LIMITED', pc: 'FULL', jpeg: 'FULL' };

/** The source's colour tags (ffprobe names from `VideoMetadata`) as far as they are known and expressible. */
export function colorOfSource(meta: { colorSpaceName?: string; colorPrimariesName?: string; colorTransferName?: string; colorRangeName?: string; pixelFormatName?: string }): Partial<ColorSpec> {
  const out: Partial<ColorSpec> = {};
  const s = meta.colorSpaceName && FROM_FF_SPACE[meta.colorSpaceName];
  if (s) out.colorSpace = s;
  const p = meta.colorPrimariesName && FROM_FF_PRIMARIES[meta.colorPrimariesName];
  if (p) out.colorPrimaries = p;
  const t = meta.colorTransferName && FROM_FF_TRANSFER[meta.colorTransferName];
  if (t) out.transferCharacteristics = t;
  const r = meta.colorRangeName ? FROM_FF_RANGE[meta.colorRangeName] : /^yuvj/.test(meta.pixelFormatName ?? '') ? 'FULL' : undefined;
  if (r) out.colorRange = r;
  return out;
}

/**
 * Resolution-only inference (contract prose): up to 720x576 at about 30 or 60 frames/s Rec.601
 * SMPTE 170M; up to 720x576 at other rates Rec.601 BT.470BG; up to 1920x1080 Rec.709; above
 * that Rec.2020. Always limited range. SD transfer is tagged SMPTE 170M (the same curve as
 * BT.709): BT.470BG as a transfer means gamma 2.8, which no PAL camera used.
 */
export function inferColor(width: number, height: number, fps: number): ColorSpec {
  if (width <= 720 && height <= 576) {
    const ntsc = [30, 60].some((r) => Math.abs(fps - r) / r < 0.03) || Math.abs(fps - 24000 / 1001) < 0.01;
    return ntsc
      ? { colorSpace: 'SMPTE170M', colorPrimaries: 'SMPTE170M', transferCharacteristics: 'SMPTE170M', colorRange: 'LIMITED' }
      : { colorSpace: 'BT470BG', colorPrimaries: 'BT470BG', transferCharacteristics: 'SMPTE170M', colorRange: 'LIMITED' };
  }
  if (width <= 1920 && height <= 1080) return { colorSpace: 'BT709', colorPrimaries: 'BT709', transferCharacteristics: 'BT709', colorRange: 'LIMITED' };
  return { colorSpace: 'BT2020NC', colorPrimaries: 'BT2020', transferCharacteristics: 'BT2020_10', colorRange: 'LIMITED' };
}

/** What an HDR format fixes (contract: all HDR needs BT2020NC, BT2020 primaries and limited range). */
export function hdrImplied(format: HdrFormat): ColorSpec {
  return {
    colorSpace: 'BT2020NC',
    colorPrimaries: 'BT2020',
    transferCharacteristics: format === 'HLG' ? 'ARIB_STD_B67' : 'SMPTE2084',
    colorRange: 'LIMITED',
  };
}

/** The profile's explicit fields plus what its `hdrFormat` implies. */
export function profileFields(profile: Colorimetry | undefined): Partial<ColorSpec> {
  if (!profile) return {};
  const out: Partial<ColorSpec> = profile.hdrFormat ? { ...hdrImplied(profile.hdrFormat) } : {};
  for (const k of COLOR_KEYS) if (profile[k] !== undefined) (out as Record<string, string>)[k] = profile[k]!;
  return out;
}

/** Earlier layers win, field by field. */
export function layer(...layers: Partial<ColorSpec>[]): ColorSpec {
  const out: Partial<ColorSpec> = {};
  for (const l of layers) for (const k of COLOR_KEYS) if (out[k] === undefined && l[k] !== undefined) (out as Record<string, string>)[k] = l[k]!;
  return out as ColorSpec;
}

export function isHdrTransfer(t: TransferCharacteristics): boolean {
  return t === 'SMPTE2084' || t === 'ARIB_STD_B67';
}

export function sameColor(a: ColorSpec, b: ColorSpec): boolean {
  return COLOR_KEYS.every((k) => a[k] === b[k]);
}

export const MASTERING_PRESETS: Record<'P3_D65' | 'BT2020', { red: [number, number]; green: [number, number]; blue: [number, number]; whitePoint: [number, number] }> = {
  P3_D65: { red: [0.68, 0.32], green: [0.265, 0.69], blue: [0.15, 0.06], whitePoint: [0.3127, 0.329] },
  BT2020: { red: [0.708, 0.292], green: [0.17, 0.797], blue: [0.131, 0.046], whitePoint: [0.3127, 0.329] },
};

/** A mastering display with every point and luminance known (the probe's shape). */
export type ResolvedMastering = MasteringDisplayMetadata;

/** The mastering display with preset points and the contract's defaults; undefined when the points are incomplete. */
export function resolveMastering(md: MasteringDisplay, maxCll: number | undefined): ResolvedMastering | undefined {
  const minLuminance = md.minLuminance ?? 0.005;
  const maxLuminance = md.maxLuminance ?? maxCll ?? 1000;
  if (md.tag) return { ...MASTERING_PRESETS[md.tag], minLuminance, maxLuminance };
  const point = (p: { x?: number; y?: number } | undefined): [number, number] | undefined => (p && p.x !== undefined && p.y !== undefined ? [p.x, p.y] : undefined);
  const red = point(md.red);
  const green = point(md.green);
  const blue = point(md.blue);
  const whitePoint = point(md.whitePoint);
  if (!red || !green || !blue || !whitePoint) return undefined;
  return { red, green, blue, whitePoint, minLuminance, maxLuminance };
}

/** x265's `master-display` (chromaticities in 0.00002 units, luminance in 0.0001 cd/m2). */
export function x265MasterDisplay(m: ResolvedMastering): string {
  const c = (v: number) => Math.round(v / 0.00002);
  const l = (v: number) => Math.round(v / 0.0001);
  return `G(${c(m.green[0])},${c(m.green[1])})B(${c(m.blue[0])},${c(m.blue[1])})R(${c(m.red[0])},${c(m.red[1])})WP(${c(m.whitePoint[0])},${c(m.whitePoint[1])})L(${l(m.maxLuminance)},${l(m.minLuminance)})`;
}

/**
 * Static checks of one colour profile: an HDR format against explicit fields, complete
 * mastering display points, luminance order, MaxFALL <= MaxCLL, and completeness under
 * STRICT_USER.
 */
export function checkProfile(issues: IssueList, code: ProcessingErrorCode, base: string, profile: Colorimetry | undefined, strict: boolean): void {
  if (!profile) {
    if (strict) issues.add(code, `${base}.colorProfile`, 'STRICT_USER needs a complete colorProfile (colorSpace, colorPrimaries, transferCharacteristics, colorRange)');
    return;
  }
  const field = `${base}.colorProfile`;
  if (profile.hdrFormat) {
    const implied = hdrImplied(profile.hdrFormat);
    for (const k of COLOR_KEYS) {
      if (profile[k] !== undefined && profile[k] !== implied[k]) {
        issues.add(code, `${field}.${k}`, `hdrFormat ${profile.hdrFormat} needs ${k} ${implied[k]}, not ${profile[k]}`, profile[k]);
      }
    }
  }
  if (strict) {
    const have = profileFields(profile);
    const missing = COLOR_KEYS.filter((k) => have[k] === undefined);
    if (missing.length) issues.add(code, field, `STRICT_USER needs a complete colorProfile; missing ${missing.join(', ')}`);
  }
  const md = profile.masteringDisplay;
  if (md) {
    if (!resolveMastering(md, profile.maxCll)) {
      issues.add(code, `${field}.masteringDisplay`, 'without a tag, red, green, blue and whitePoint are all needed, each with x and y');
    }
    const min = md.minLuminance ?? 0.005;
    const max = md.maxLuminance ?? profile.maxCll ?? 1000;
    if (!(min < max)) issues.add(code, `${field}.masteringDisplay.minLuminance`, `minLuminance (${min}) must be below maxLuminance (${max})`, min);
  }
  if (profile.maxFall !== undefined && profile.maxCll !== undefined && profile.maxFall > profile.maxCll) {
    issues.add(code, `${field}.maxFall`, `maxFall (${profile.maxFall}) cannot exceed maxCll (${profile.maxCll})`, profile.maxFall);
  }
  if (profile.maxFall !== undefined && profile.hdrFormat && profile.hdrFormat !== 'HDR10') {
    issues.add(code, `${field}.maxFall`, `maxFall is HDR10 metadata; hdrFormat is ${profile.hdrFormat}`, profile.maxFall);
  }
}
