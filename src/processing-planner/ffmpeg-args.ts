/** The ffmpeg argument lists of a plan: the processing pass and the analysis pass (vidstab detection). */
import { escapeFilterValue } from './ffmpeg-syntax';
import type { ProcessingPlan } from './plan-types';

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
  return ['-y', ...plan.inputArgs, '-i', safePath(input), '-filter_complex', withTransforms(plan.filterGraph, output), '-map', '[vout]', ...plan.outputArgs, safePath(output)];
}

/** The analysis pass (vidstab motion detection into `<output>.trf`), when the plan has one. */
export function analysisArgs(plan: ProcessingPlan, input: string, output: string): string[] | undefined {
  if (!plan.analysis) return undefined;
  return ['-y', ...plan.inputArgs, '-i', safePath(input), '-filter_complex', withTransforms(plan.analysis.filterGraph, output), '-map', '[vout]', '-an', '-sn', '-dn', '-f', 'null', '-'];
}
