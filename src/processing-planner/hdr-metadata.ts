/**
 * HDR10 static metadata of the output (SMPTE ST 2086 mastering display, CTA-861.3 MaxCLL and
 * MaxFALL): what the user's output colour profile sets, and otherwise what the source carries,
 * as long as the picture stays PQ from the source to the output (no tone mapping either way).
 * Only x265 writes it in this ffmpeg (libx264 164 and the ProRes, DNx and FFV1 paths have no way
 * to), so it is written for HEVC of at least 10 bits; anything else is noted. Pure.
 */
import type { Hdr10Metadata } from '../media';
import { isHdrTransfer, resolveMastering, x265MasterDisplay, type ResolvedMastering } from './colour';
import type { BitDepth, Colorimetry, OutputCodec, TransferCharacteristics } from './options';

export interface HdrStaticMetadata {
  masteringDisplay?: ResolvedMastering;
  maxCll?: number;
  maxFall?: number;
  /** Which of them came from the source. */
  fromSource: ('masteringDisplay' | 'maxCll' | 'maxFall')[];
  /** HDR10 signalling (x265 `hdr10=1`, light levels written even when unknown): asked for, or the source's HDR10 carried. */
  hdr10: boolean;
}

export interface HdrStaticInput {
  /** The user's output colour profile, when the output mapping mode uses it. */
  profile?: Colorimetry;
  outputTransfer: TransferCharacteristics;
  codec: OutputCodec;
  bitDepth: BitDepth;
  /** The source's HDR10 static metadata, as probed. */
  source?: Hdr10Metadata;
  /** The source is interpreted as PQ and neither tone mapped nor inverse tone mapped: its metadata still describes the output. */
  pqThroughout: boolean;
}

export interface HdrStaticNote {
  field: string;
  requested: string;
  appliedAs: string;
  note: string;
}

const PROFILE_FIELD = 'processingSettings.outputColorSpaceConversion.colorProfile';

/** The static metadata to write (undefined: none) and the notes explaining choices. */
export function resolveHdrStatic(input: HdrStaticInput): { metadata?: HdrStaticMetadata; notes: HdrStaticNote[] } {
  const notes: HdrStaticNote[] = [];
  const p = input.profile;
  const userAsks = !!p && (!!p.hdrFormat || !!p.masteringDisplay || p.maxCll !== undefined || p.maxFall !== undefined);
  if (!isHdrTransfer(input.outputTransfer)) {
    if (userAsks) {
      // e.g. INPUT_PRIORITY with an SDR input: the profile only filled gaps and the output is SDR.
      notes.push({
        field: PROFILE_FIELD,
        requested: [p.hdrFormat, p.masteringDisplay && 'masteringDisplay', p.maxCll !== undefined && 'maxCll', p.maxFall !== undefined && 'maxFall'].filter(Boolean).join(', '),
        appliedAs: 'not applied',
        note: `the output is SDR (transfer ${input.outputTransfer}); HDR signalling and static metadata would be false`,
      });
    }
    return { notes };
  }
  const src = input.outputTransfer === 'SMPTE2084' && input.pqThroughout ? input.source : undefined;
  if (src && (input.codec !== 'HEVC' || input.bitDepth < 10)) {
    notes.push({
      field: PROFILE_FIELD,
      requested: "the source's HDR10 static metadata",
      appliedAs: 'not written',
      note: `the source is HDR10; ${input.codec} ${input.bitDepth}-bit output cannot carry its mastering display and light levels here (only x265 writes them, for HEVC of 10 bits or more), so the output is PQ10`,
    });
    return { notes };
  }
  const fromSource: HdrStaticMetadata['fromSource'] = [];
  const pick = <K extends 'maxCll' | 'maxFall'>(k: K): number | undefined => {
    if (p?.[k] !== undefined) return p[k];
    if (src?.[k] !== undefined) {
      fromSource.push(k);
      return src[k];
    }
    return undefined;
  };
  const maxCll = pick('maxCll');
  let maxFall = pick('maxFall');
  if (maxFall !== undefined && maxCll !== undefined && maxFall > maxCll && fromSource.includes('maxFall')) {
    // The user's MaxCLL is below the source's MaxFALL: the source's frame average no longer fits.
    maxFall = undefined;
    fromSource.splice(fromSource.indexOf('maxFall'), 1);
  }
  let masteringDisplay = p?.masteringDisplay ? resolveMastering(p.masteringDisplay, maxCll) : undefined;
  if (!masteringDisplay && src?.masteringDisplay) {
    masteringDisplay = { ...src.masteringDisplay };
    fromSource.push('masteringDisplay');
  }
  if (!masteringDisplay && p?.hdrFormat === 'HDR10') {
    masteringDisplay = resolveMastering({ tag: 'P3_D65' }, maxCll)!;
    notes.push({
      field: `${PROFILE_FIELD}.masteringDisplay`,
      requested: 'absent',
      appliedAs: `master-display=${x265MasterDisplay(masteringDisplay)}`,
      note: `HDR10 carries static metadata; without a masteringDisplay (given or the source's) the common P3-D65 display (${masteringDisplay.minLuminance}..${masteringDisplay.maxLuminance} nits) is written`,
    });
  }
  if (fromSource.length) {
    notes.push({
      field: PROFILE_FIELD,
      requested: fromSource.join(', ') + ' absent',
      appliedAs: 'carried from the source',
      note: "the source's HDR10 static metadata still describes the picture (it stays PQ), so what the options do not set is written from the source",
    });
  }
  const any = masteringDisplay || maxCll !== undefined || maxFall !== undefined || p?.hdrFormat === 'HDR10';
  if (!any) return { notes };
  return {
    metadata: {
      ...(masteringDisplay ? { masteringDisplay } : {}),
      ...(maxCll !== undefined ? { maxCll } : {}),
      ...(maxFall !== undefined ? { maxFall } : {}),
      fromSource,
      hdr10: p?.hdrFormat === 'HDR10' || fromSource.length > 0,
    },
    notes,
  };
}

/** x265's HDR parameters: `hdr10=1` for HDR10, `master-display=...`, `max-cll=<cll>,<fall>` (an unknown level as 0). */
export function x265HdrParams(m: HdrStaticMetadata): string[] {
  const params = m.hdr10 ? ['hdr10=1'] : [];
  if (m.masteringDisplay) params.push(`master-display=${x265MasterDisplay(m.masteringDisplay)}`);
  if (m.hdr10 || m.maxCll !== undefined || m.maxFall !== undefined) params.push(`max-cll=${Math.round(m.maxCll ?? 0)},${Math.round(m.maxFall ?? 0)}`);
  return params;
}
