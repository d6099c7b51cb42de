/**
 * Scanning: whether the source is interlaced (metadata, analysis or the user's field order),
 * whether the output is, and what that takes in the graph. Deinterlacing (stage 1, or an implicit
 * bwdif) runs first; interlacing again, or passing the fields through untouched, runs last with
 * the final pixel format.
 */
import type { Scanning } from '../media';
import { setFilter, setSetting } from './applied-options';
import { PROGRESSIVE_ONLY, pixFmtName } from './encoders';
import type { Encoding } from './encoding-choice';
import type { Deinterlacer, OutputScanning, ProcessingOptions } from './options';
import type { Geometry, PlanBuilder } from './plan-builder';
import { mul, type Rational } from './rational';
import { throwIssues } from './validate';

export interface ScanningPlan {
  fieldOrderMode: NonNullable<ProcessingOptions['filterSettings']>['interlacedFieldOrderMode'];
  /** The source's scanning as the field order mode reads it (undefined: unknown). */
  detected: Scanning | undefined;
  sourceInterlaced: boolean;
  /** Top field first (the default when the source is not known to be bottom field first). */
  tff: boolean;
  requestedScanning: OutputScanning;
  deinterlacer: Deinterlacer | undefined;
  /** The selected deinterlacer runs (the source is interlaced). */
  deinterlaceApplies: boolean;
  outputScanning: Scanning;
  outInterlaced: boolean;
  /** bwdif runs without a deinterlacer selected (progressive output, or filters on an interlaced output). */
  implicitDeinterlace: boolean;
  /** Interlaced in, interlaced out, nothing touching the pictures: the fields go through as they are. */
  interlacedPassthrough: boolean;
}

export function resolveScanning(b: PlanBuilder, enc: Encoding): ScanningPlan {
  const { options, src } = b;
  const f = options.filters ?? {};
  const s = options.filterSettings ?? {};
  const ps = options.processingSettings ?? {};
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
  if (outputScanning === 'INTERLACED_BOTTOM_FIRST' && enc.codec === 'H264' && enc.container === 'MXF') {
    // ffmpeg's MXF muxer records no field dominance for H.264, and readers (ffprobe, Vidmill's
    // ingestion) take it as top field first: a bottom-first output would be read the wrong way.
    const why = "ffmpeg's MXF muxer records no field order for H.264, which readers take as top field first";
    if (requestedScanning === 'INTERLACED_BOTTOM_FIRST') {
      b.issues.unsupported('processingSettings.outputScanning', `bottom field first H.264 in MXF: ${why}`, outputScanning);
      throwIssues(b.issues);
    }
    b.note('processingSettings.outputScanning', 'AUTO (the source is bottom field first)', 'INTERLACED_TOP_FIRST', `${why}; the fields are shifted to top field first`);
    outputScanning = 'INTERLACED_TOP_FIRST';
  }

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
  return {
    fieldOrderMode,
    detected,
    sourceInterlaced,
    tff,
    requestedScanning,
    deinterlacer,
    deinterlaceApplies,
    outputScanning,
    outInterlaced,
    implicitDeinterlace,
    interlacedPassthrough,
  };
}

function colourConversionRequested(options: ProcessingOptions): boolean {
  const p = options.processingSettings;
  return !!(p?.inputColorSpaceConversion?.toneMapper || (p?.outputColorSpaceConversion && !p.outputColorSpaceConversion.metadataOnly));
}

/** Stage 1: the selected deinterlacer, or the implicit one; or the field order of passed-through fields. */
export function applyDeinterlacing(b: PlanBuilder, scan: ScanningPlan, enc: Encoding, g: Geometry): Geometry {
  const { deinterlacer, deinterlaceApplies, detected, fieldOrderMode, tff, requestedScanning, outInterlaced, outputScanning } = scan;
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
        b.note(
          'filters.deinterlacer',
          'DEINT',
          filter,
          "DEINT is a proprietary AI deinterlacer; this installation applies its best classical equivalent, ffmpeg's bwdif (Bob Weaver, motion adaptive), one output frame per field.",
        );
      }
      g = { ...g, fps: mul(g.fps, 2) };
      setSetting(b.applied, 'interlacedFieldOrderMode', tff ? 'TOP_FIELD_FIRST' : 'BOTTOM_FIELD_FIRST');
    }
  }
  if (scan.implicitDeinterlace) {
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
  if (scan.interlacedPassthrough && detected !== outputScanning) {
    b.add(`fieldorder=${outputScanning === 'INTERLACED_TOP_FIRST' ? 'tff' : 'bff'}`);
  }
  return g;
}

/**
 * The end of the graph: interlace the progressive frames again (or tag the passed-through
 * fields) and convert to the encoder's pixel format. Returns that format and the stored frame
 * rate (an interlaced output stores two fields per frame).
 */
export function interlaceAndFormat(b: PlanBuilder, scan: ScanningPlan, enc: Encoding, g: Geometry): { pixFmt: string; fps: Rational } {
  const { outInterlaced, interlacedPassthrough, outputScanning } = scan;
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
  return { pixFmt, fps: outFps };
}
