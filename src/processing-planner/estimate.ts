/**
 * The estimate of a processing job: output size, compute time and gigapixels, from the plan and
 * the calibration measured on this engine (calibration.json, written by
 * bench/calibrate-processing.ts; docs/processing.md explains both).
 *
 * - gigapixels = output width x height x frames / 1e9 (what billing charges by).
 * - computeSeconds: the plan's work list (decode, every costed filter at the size and rate it
 *   runs at, the encoder at the output) divided by the measured wall-clock megapixels per second
 *   of each, plus the start-up of each ffmpeg pass. `cpuSeconds` is the same with the CPU rates.
 * - outputBytes: the bitrate when the encoder has one (explicit, automatic or fixed by the
 *   profile); for constant-quality x264/x265 and lossless FFV1 a bits-per-pixel figure (below);
 *   for ProRes and DNxHR Apple's and Avid's published data rates; plus the audio and 1% for the
 *   container.
 */
import type { ProbeResult } from '../media';
import calibration from './calibration.json';
import { PROFILE_SPECS, audioArgs, dnxhdNominalFps } from './encoders';
import type { ProcessingPlan } from './plan-types';

export interface ProcessingEstimate {
  outputBytes: number;
  /** Wall-clock seconds on this machine. */
  computeSeconds: number;
  /** CPU seconds (all cores together). */
  cpuSeconds: number;
  gigapixels: number;
}

interface Rate {
  mpxPerSecond: number;
  mpxPerCpuSecond: number;
}

const RATES = calibration.rates as Record<string, Rate>;

/** Stages that cost next to nothing (setparams, crop, fps, field order...) and anything unmeasured. */
const CHEAP: Rate = { mpxPerSecond: 3000, mpxPerCpuSecond: 3000 };

/** x264/x265 speed of other presets relative to `medium` (x264's documented ordering; rough). */
const PRESET_FACTOR: Record<string, number> = { superfast: 4, faster: 1.8, fast: 1.3, slow: 0.55, slower: 0.25, veryslow: 0.12 };

/** Start-up and teardown of one ffmpeg process, seconds. */
export const PASS_OVERHEAD_SECONDS = 0.4;

/**
 * Bits per output pixel of the constant-quality and lossless modes (no bitrate to go by):
 * typical of 8-bit camera footage at CRF 20 (x264) and CRF 22 (x265); FFV1 about half of the
 * uncompressed size. Content varies this by 3x either way.
 */
export const QUALITY_BITS_PER_PIXEL = { H264: 0.1, HEVC: 0.06 } as const;
export const FFV1_RATIO = 0.55;

export function rateFor(key: string): Rate {
  const exact = RATES[key];
  if (exact) return exact;
  const m = /^(libx26[45]):(\w+)$/.exec(key);
  const base = m && RATES[`${m[1]}:medium`];
  const factor = m && PRESET_FACTOR[m[2]!];
  if (base && factor) return { mpxPerSecond: base.mpxPerSecond * factor, mpxPerCpuSecond: base.mpxPerCpuSecond * factor };
  return CHEAP;
}

/** The estimate of a plan: over the output it makes (its duration and frames, from the first frame at or after the range's start). */
export function estimateProcessing(plan: ProcessingPlan, source: Pick<ProbeResult, 'hasAudio'>): ProcessingEstimate {
  const o = plan.output;
  const seconds = o.durationMs / 1000;
  const frames = o.frames;
  const pixelRate = o.width * o.height * (o.fps.num / o.fps.den);

  let wall = PASS_OVERHEAD_SECONDS * (plan.analysis ? 2 : 1);
  let cpu = wall;
  for (const w of plan.work) {
    const mpx = (w.pixelsPerSecond * seconds) / 1e6;
    const r = rateFor(w.key);
    wall += mpx / r.mpxPerSecond;
    cpu += mpx / r.mpxPerCpuSecond;
  }
  // The analysis pass decodes the source a second time.
  if (plan.analysis) {
    const decode = plan.work.find((w) => w.key === 'decode');
    if (decode) {
      wall += (decode.pixelsPerSecond * seconds) / 1e6 / rateFor('decode').mpxPerSecond;
      cpu += (decode.pixelsPerSecond * seconds) / 1e6 / rateFor('decode').mpxPerCpuSecond;
    }
  }

  let videoBits: number;
  const profile = plan.applied.options.encodingProfile;
  if (o.codec === 'DNXHD' && profile) {
    // DNxHD frames have a fixed size: the named bitrate at its nominal frame rate.
    const mbps = PROFILE_SPECS[profile].mbps!;
    videoBits = ((mbps * 1e6) / dnxhdNominalFps(mbps)) * frames;
  } else if ((o.codec === 'PRORES' || o.codec === 'DNXHR') && profile) {
    videoBits = PROFILE_SPECS[profile].bitsPerPixel * pixelRate * seconds;
  } else if (o.bitrate !== undefined) {
    videoBits = o.bitrate * seconds;
  } else if (o.codec === 'FFV1') {
    const samples = o.chroma === '4:2:0' ? 1.5 : o.chroma === '4:2:2' ? 2 : 3;
    videoBits = FFV1_RATIO * samples * o.bitDepth * pixelRate * seconds;
  } else {
    const bpp = o.codec === 'HEVC' ? QUALITY_BITS_PER_PIXEL.HEVC : QUALITY_BITS_PER_PIXEL.H264;
    videoBits = bpp * pixelRate * seconds;
  }
  const audioBits = source.hasAudio ? audioArgs(plan.container, o.codec).bitsPerSecond * seconds : 0;
  const outputBytes = Math.round(((videoBits + audioBits) / 8) * 1.01);

  return {
    outputBytes,
    computeSeconds: Math.round(wall * 10) / 10,
    cpuSeconds: Math.round(cpu * 10) / 10,
    gigapixels: Math.round(((o.width * o.height * frames) / 1e9) * 1e6) / 1e6,
  };
}
