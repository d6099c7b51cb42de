/**
 * Colour in the filter graph: how the source is interpreted (input colour, tone mapping to SDR),
 * what the output is (output colour, inverse tone mapping) and the conversion between them.
 */
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
  inferColor,
  isHdrTransfer,
  layer,
  profileFields,
  type ColorSpec,
} from './colour';
import { num } from './ffmpeg-syntax';
import type { Colorimetry } from './options';
import type { Geometry, PlanBuilder } from './plan-builder';
import { value } from './rational';

export interface InputColour {
  /** How the source is interpreted. */
  input: ColorSpec;
  toneMap?: { algorithm: string; outputNits: number; peak?: number };
}

export function resolveInputColour(b: PlanBuilder): InputColour {
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

export function setparamsArgs(c: ColorSpec): string {
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

export function applyToneMap(b: PlanBuilder, input: ColorSpec, tm: NonNullable<InputColour['toneMap']>, g: Geometry): ColorSpec {
  const zin = zscaleIn(input)!;
  const algorithm = tm.algorithm.toLowerCase();
  const peak = tm.peak ? `:peak=${num(tm.peak)}` : '';
  // Every output property is explicit: zimg finds no conversion path when one is left to the frame.
  const keep = `m=${ZSCALE_SPACE[input.colorSpace]}:p=${ZSCALE_PRIMARIES[input.colorPrimaries]}:r=${ZSCALE_RANGE[input.colorRange]}`;
  const filter = `zscale=${zin}:${keep}:t=linear:npl=${num(tm.outputNits)},format=gbrpf32le,zscale=p=709,tonemap=tonemap=${algorithm}:desat=0${peak},zscale=t=709:m=709:r=limited`;
  b.add(filter, { key: 'tonemap', g });
  return SDR_709;
}

export interface OutputColour {
  color: ColorSpec;
  metadataOnly: boolean;
  inverse?: { algorithm: string; npl: number; saturation?: number };
  profile?: Colorimetry;
}

export function resolveOutputColour(b: PlanBuilder, working: ColorSpec, g: Geometry, interlaced: boolean): OutputColour {
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

export function convertColour(b: PlanBuilder, from: ColorSpec, to: ColorSpec, oc: OutputColour, g: Geometry): void {
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
  } else if (
    !hdr &&
    b.has('colorspace') &&
    COLORSPACE_SPACE[from.colorSpace] &&
    COLORSPACE_SPACE[to.colorSpace] &&
    COLORSPACE_TRANSFER[from.transferCharacteristics] &&
    COLORSPACE_TRANSFER[to.transferCharacteristics]
  ) {
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
