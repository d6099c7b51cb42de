/** The ffmpeg argument lists of a plan: the processing pass and the analysis pass (vidstab detection). */
import { escapeFilterValue } from './ffmpeg-syntax';
import type { PlanSegment, ProcessingPlan, SegmentedPlan } from './plan-types';

/** Replaced by `processingArgs` with the escaped path of the vidstab transforms file next to the output. */
export const TRANSFORMS_TOKEN = '@VIDMILL_TRANSFORMS@';

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
  return graphPass(plan, { inputArgs: plan.inputArgs, input, graph: withTransforms(plan.filterGraph, output), outputArgs: plan.outputArgs, output: safePath(output) });
}

/**
 * One ffmpeg run through a filter graph: overwrite, the thread counts, the input with its seek
 * and duration, the graph ending in `[vout]` and its map, the output arguments and the output.
 */
function graphPass(plan: ProcessingPlan, x: { inputArgs: string[]; input: string; graph: string; outputArgs: string[]; output: string }): string[] {
  const t = threadArgs(plan);
  return ['-y', ...t.global, ...t.input, ...x.inputArgs, '-i', safePath(x.input), '-filter_complex', x.graph, '-map', '[vout]', ...x.outputArgs, ...t.output, x.output];
}

/** ffmpeg's thread counts when the installation sets them: the decoder (an input option), the filter graph, the encoder. */
function threadArgs(plan: ProcessingPlan): { global: string[]; input: string[]; output: string[] } {
  if (!plan.threads) return { global: [], input: [], output: [] };
  const n = String(plan.threads);
  return { global: ['-filter_complex_threads', n], input: ['-threads', n], output: ['-threads', n] };
}

/** One segment of a segmented plan: its seek and margins, its graph, the plan's encoder without audio, the segment muxer. */
export function segmentArgs(plan: ProcessingPlan & { segmented: SegmentedPlan }, segment: PlanSegment, input: string, output: string): string[] {
  const outputArgs = segment.index > 0 ? plan.segmented.seamSegmentArgs : plan.segmented.segmentArgs;
  return graphPass(plan, { inputArgs: segment.inputArgs, input, graph: segment.filterGraph, outputArgs, output: safePath(output) });
}

/** The audio pass of a segmented plan: the whole range's audio, encoded as the container wants it, into Matroska. */
export function audioPassArgs(plan: ProcessingPlan & { segmented: SegmentedPlan }, input: string, output: string): string[] | undefined {
  const audio = plan.segmented.audio;
  if (!audio) return undefined;
  return ['-y', ...threadArgs(plan).input, ...audio.inputArgs, '-i', safePath(input), ...audio.args, safePath(output)];
}

/** The join of a segmented plan: the segments (a concat list file) copied one after the other, the audio pass muxed in. */
export function joinArgs(plan: ProcessingPlan & { segmented: SegmentedPlan }, segmentList: string, audio: string | undefined, output: string): string[] {
  return ['-y', '-f', 'concat', '-safe', '0', '-i', safePath(segmentList), ...(audio ? ['-i', safePath(audio)] : []), ...plan.segmented.joinArgs, safePath(output)];
}

/** The analysis pass (vidstab motion detection into `<output>.trf`), when the plan has one. */
export function analysisArgs(plan: ProcessingPlan, input: string, output: string): string[] | undefined {
  if (!plan.analysis) return undefined;
  return graphPass(plan, { inputArgs: plan.inputArgs, input, graph: withTransforms(plan.analysis.filterGraph, output), outputArgs: ['-an', '-sn', '-dn', '-f', 'null'], output: '-' });
}
