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
 *
 * This module assembles the plan from its steps:
 *   timing.ts            the range: checks, first frame, seek and trim
 *   encoding-choice.ts   codec, container and pixel format
 *   scanning.ts          interlaced or not, deinterlacing first, interlacing last
 *   colour-conversion.ts input colour, tone mapping, output colour and its conversion
 *   video-filters.ts     the picture filter stages (scaler.ts: the scaler)
 *   output-constraints.ts sizes and frame rates the encoder or the muxer refuse
 *   output-args.ts       audio, encoder, rate control, HDR metadata, colour tags, muxer
 *   applied-options.ts   the options as applied
 *   ffmpeg-args.ts       the argument lists of the processing and analysis passes
 */
import type { ProbeResult } from '../media';
import { appliedOutput } from './applied-output';
import { finishApplied } from './applied-options';
import { FULL_CAPABILITIES, type EngineCapabilities } from './capabilities';
import { applyToneMap, convertColour, resolveInputColour, resolveOutputColour, setparamsArgs, type OutputColour } from './colour-conversion';
import { sameColor, type ColorSpec } from './colour';
import { CONTAINER_FORMAT, fullRangeUnrecordable, streamProfileName } from './encoders';
import { resolveEncoding, type Encoding } from './encoding-choice';
import { IssueList } from './errors';
import type { Codec, ProcessingOptions } from './options';
import { checkMxfFrameRate, checkOutputSize } from './output-constraints';
import { planOutputArgs, type OutputArgs } from './output-args';
import { PlanBuilder, type Geometry } from './plan-builder';
import type { PlanEnvironment, PlanOutput, ProcessingPlan, X26xPreset } from './plan-types';
import { rstr, value, type Rational } from './rational';
import { applyDeinterlacing, interlaceAndFormat, resolveScanning, type ScanningPlan } from './scanning';
import { sourceFacts } from './source-facts';
import { planSegments } from './segments';
import { planTiming, type PlanTiming } from './timing';
import { collectStaticIssues, throwIssues } from './validate';
import { applyPictureFilters } from './video-filters';

/**
 * Builds the ffmpeg plan. Throws ProcessingOptionsError (400) for every static rule
 * (`validateOptions`) and for the source-dependent ones: computed sizes outside 16..7680 x
 * 16..4320, AI scalers asked to shrink, frame sizes a DNxHD or XDCAM profile cannot take, an
 * automatically kept codec that cannot take the requested pixel format, colour conversions
 * this ffmpeg cannot do, a range outside the source.
 */
export function buildProcessingPlan(options: ProcessingOptions, source: ProbeResult, range: { startMs: number; endMs: number }, env: PlanEnvironment = {}): ProcessingPlan {
  const caps = env.capabilities ?? FULL_CAPABILITIES;
  rejectStaticIssues(options, caps);
  const b = new PlanBuilder(options, sourceFacts(source), caps);
  const timing = planTiming(b, range);
  noteAssumedFrameRate(b);

  const enc = resolveEncoding(b);
  const scan = resolveScanning(b, enc);
  const inputColour = resolveInputColour(b);

  // The graph: input colour tags, deinterlacing, tone mapping, the picture filters, the output colour.
  let g = tagInputColour(b, inputColour.input);
  g = applyDeinterlacing(b, scan, enc, g);
  const working = inputColour.toneMap ? applyToneMap(b, inputColour.input, inputColour.toneMap, g) : inputColour.input;
  g = applyPictureFilters(b, g, enc);
  const outputColour = applyOutputColour(b, working, g, scan.outInterlaced, enc);

  checkOutputSize(b, g, enc, scan.outInterlaced);
  throwIssues(b.issues);
  const { pixFmt, fps: outFps } = interlaceAndFormat(b, scan, enc, g);
  b.add(`setsar=${rstr(g.sar)},setparams=${setparamsArgs(outputColour.color)}`);
  checkMxfFrameRate(b, enc, outFps);

  const preset = env.encoderPreset ?? 'medium';
  const out = planOutputArgs(b, { enc, g, outFps, pixFmt, outputScanning: scan.outputScanning, inputColour, outputColour, preset, durationS: timing.durationS });
  finishApplied(b, enc, enc.container, scan.outputScanning, out.bitrate, outputColour, inputColour);
  return assemblePlan(b, { timing, enc, scan, g, outFps, pixFmt, outputColour, out, preset, segmentSeconds: env.segmentSeconds, threads: env.threads });
}

/** The rules that need no source (`validateOptions`): thrown together, before anything else. */
function rejectStaticIssues(options: ProcessingOptions, caps: EngineCapabilities): void {
  const staticIssues = new IssueList();
  collectStaticIssues(options, caps, staticIssues);
  throwIssues(staticIssues);
}

function noteAssumedFrameRate(b: PlanBuilder): void {
  if (!b.src.fpsKnown) {
    b.note(
      'source',
      'frame rate unknown',
      '25 frames/s assumed',
      "the probe found no frame rate; frame counts, gigapixels and the colour inference assume 25 frames/s (ffmpeg keeps the source's own timing)",
    );
  }
}

/** The start of the graph: the source decoded, its colour interpretation tagged. */
function tagInputColour(b: PlanBuilder, input: ColorSpec): Geometry {
  const { src } = b;
  const g: Geometry = { width: src.width, height: src.height, sar: src.sar, fps: src.fps };
  b.work.push({ key: 'decode', pixelsPerSecond: src.width * src.height * value(src.fps) });
  b.add(`setparams=${setparamsArgs(input)}`);
  return g;
}

/**
 * The output colour; converted to in the graph unless it is metadata only or already the
 * picture's. A full-range picture the codec and container cannot record as such (ProRes, FFV1 in
 * MOV) is converted to limited range (noted): tagged full, readers would show it limited.
 * Throws when this ffmpeg cannot convert.
 */
function applyOutputColour(b: PlanBuilder, working: ColorSpec, g: Geometry, interlaced: boolean, enc: Encoding): OutputColour {
  let outputColour = resolveOutputColour(b, working, g, interlaced);
  const unrecordable = outputColour.color.colorRange === 'FULL' ? fullRangeUnrecordable(enc.codec, enc.container) : undefined;
  if (unrecordable) {
    b.note('processingSettings.outputColorSpaceConversion.colorProfile.colorRange', 'FULL', 'LIMITED', `${unrecordable}; the picture is converted to limited range`);
    outputColour = { ...outputColour, color: { ...outputColour.color, colorRange: 'LIMITED' }, metadataOnly: false };
  }
  if (!outputColour.metadataOnly && !sameColor(working, outputColour.color)) {
    convertColour(b, working, outputColour.color, outputColour, g);
  }
  throwIssues(b.issues);
  return outputColour;
}

interface PlanParts {
  timing: PlanTiming;
  enc: Encoding;
  scan: ScanningPlan;
  /** The picture at the end of the graph, its stored frame rate and pixel format. */
  g: Geometry;
  outFps: Rational;
  pixFmt: string;
  outputColour: OutputColour;
  out: OutputArgs;
  preset: X26xPreset;
  segmentSeconds?: number;
  threads?: number;
}

/** The plan: arguments, graphs, the output's facts, the options as applied and the work. */
function assemblePlan(b: PlanBuilder, p: PlanParts): ProcessingPlan {
  const { timing, enc, scan, g, outFps, out } = p;
  const container = enc.container;
  const fmt = CONTAINER_FORMAT[container];
  // Frames on the output grid that start before the range's end (what a constant-rate output
  // holds: 6.537 s at 25 frames/s is 164 frames, the last starting at 6.52 s).
  const frames = Math.ceil(timing.durationS * value(outFps) - 1e-6);
  const codecProfile = enc.profile ? enc.profile.streamProfile : streamProfileName(enc.codec as Codec, enc.pixel, { preset: p.preset, interlaced: scan.outInterlaced });
  const output: PlanOutput = {
    width: g.width,
    height: g.height,
    sar: g.sar,
    fps: outFps,
    scanning: scan.outputScanning,
    codec: enc.codec,
    pixelFormat: p.pixFmt,
    chroma: enc.pixel.yuv,
    bitDepth: enc.pixel.bitDepth,
    ...(out.bitrate !== undefined ? { bitrate: out.bitrate } : {}),
    ...(out.crf !== undefined ? { crf: out.crf } : {}),
    durationMs: timing.durationMs,
    frames,
    color: p.outputColour.color,
    ...(enc.codec === 'HEVC' && out.hdr ? { hdr: out.hdr } : {}),
    ...(codecProfile ? { codecProfile } : {}),
    startMs: timing.startS * 1000,
    hasAudio: b.src.hasAudio,
  };
  // A variable frame rate (phones, screen recordings) is kept when nothing asks for another
  // rate: each frame keeps its own time (`-fps_mode passthrough`), so none is repeated to fill a
  // gap or dropped; the frame rate reported is the average. (MXF, whose muxer writes constant
  // SMPTE rates only, refuses the average rate before this.)
  const keepsVariableRate = b.src.frameRateMode === 'VARIABLE' && outFps.num * b.src.fps.den === b.src.fps.num * outFps.den;
  if (keepsVariableRate) {
    b.note('frameRate', 'the source frame rate', 'variable, kept', `the source has a variable frame rate: each frame keeps its own time; ${value(outFps).toFixed(3)} frames/s is its average`);
  }
  const plan: ProcessingPlan = {
    inputArgs: timing.inputArgs,
    filterGraph: `[0:v:0]${b.chain.join(',')}[vout]`,
    outputArgs: [...timing.outputArgs, ...(keepsVariableRate ? ['-fps_mode', 'passthrough'] : []), ...out.args],
    container,
    fileExtension: fmt.fileExtension,
    mimeType: fmt.mimeType,
    output,
    applied: { options: b.applied, notes: b.notes, output: appliedOutput({ ...output, container }) },
    work: b.work,
  };
  if (b.analysisChain) plan.analysis = { filterGraph: `[0:v:0]${b.analysisChain.join(',')}[vout]` };
  if (p.threads) plan.threads = p.threads;
  const segmented = planSegments(b, {
    segmentSeconds: p.segmentSeconds ?? 0,
    startS: timing.startS,
    durationS: timing.durationS,
    rangeInputArgs: timing.inputArgs,
    outFps,
    codec: enc.codec,
    container,
    chain: b.chain.join(','),
    analysis: Boolean(b.analysisChain),
    parts: out.parts,
  });
  if (segmented) plan.segmented = segmented;
  return plan;
}
