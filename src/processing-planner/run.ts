/**
 * Runs a processing plan with ffmpeg through the media runner: progress as a percentage of the
 * output duration, a time limit, abort, and no partial output
 * left behind on failure. A plan with an analysis pass (vidstab) runs two ffmpeg processes; the
 * first counts for `ANALYSIS_SHARE` of the progress.
 */
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { concatDemuxerList, countVideoPackets, runMedia, type MediaBinaries, type MediaProgress } from '../media';
import { analysisArgs, audioPassArgs, joinArgs, processingArgs, segmentArgs, transformsPath } from './ffmpeg-args';

import type { ProcessingPlan, SegmentedPlan } from './plan-types';

export interface ProcessingProgress {
  /** 0..100 over the whole job, never decreasing (the time left is the caller's, src/shared/progress-eta.ts). */
  percentage: number;
  /** ffmpeg's speed as a multiple of real time. */
  speed?: number;
  /** `analysis` during the vidstab detection pass, else `encode`. */
  pass: 'analysis' | 'encode';
}

export interface RunProcessingOptions {
  /** Duration of the processed range (the output), for percentages and the ETA. */
  durationMs: number;
  signal?: AbortSignal;
  /** Time limit of each ffmpeg run. */
  timeoutMs?: number;
  onProgress?: (progress: ProcessingProgress) => void;
}

export interface RunProcessingResult {
  outputPath: string;
  bytes: number;
  passes: number;
}

/** Share of the progress bar given to the analysis pass (decode + detection vs. the full filter chain and encode). */
export const ANALYSIS_SHARE = 0.25;

export async function runProcessing(bins: Pick<MediaBinaries, 'ffmpeg'>, input: string, outputPath: string, plan: ProcessingPlan, opts: RunProcessingOptions): Promise<RunProcessingResult> {
  await mkdir(path.dirname(outputPath), { recursive: true });
  const trf = transformsPath(outputPath);
  let best = 0;
  const report = (pass: ProcessingProgress['pass'], p: MediaProgress, offset: number, share: number) => {
    // ffmpeg stopped by SIGTERM still closes its output and reports `progress=end`: not a 100%.
    if (opts.signal?.aborted) return;
    const percentage = Math.max(best, Math.min(100, Math.round((offset + (p.percentage * share) / 100) * 100) / 100));
    best = percentage;
    const out: ProcessingProgress = { percentage, pass };
    if (p.speed !== undefined) out.speed = p.speed;
    opts.onProgress?.(out);
  };
  const analysis = analysisArgs(plan, input, outputPath);
  try {
    if (analysis) {
      await runMedia(bins.ffmpeg, analysis, {
        signal: opts.signal,
        timeoutMs: opts.timeoutMs,
        durationMs: opts.durationMs,
        tool: 'ffmpeg',
        onProgress: (p) => report('analysis', p, 0, ANALYSIS_SHARE * 100),
      });
    }
    const offset = analysis ? ANALYSIS_SHARE * 100 : 0;
    await runMedia(bins.ffmpeg, processingArgs(plan, input, outputPath), {
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
      durationMs: opts.durationMs,
      tool: 'ffmpeg',
      onProgress: (p) => report('encode', p, offset, 100 - offset),
    });
  } catch (err) {
    await rm(outputPath, { force: true });
    throw err;
  } finally {
    if (analysis) await rm(trf, { force: true });
  }
  const { size } = await stat(outputPath);
  return { outputPath, bytes: size, passes: analysis ? 2 : 1 };
}

export type SegmentedProcessingPlan = ProcessingPlan & { segmented: SegmentedPlan };

/** One segment of a segmented plan into `outputPath` (no partial file left on failure); progress over the segment's length. */
export async function runSegment(
  bins: Pick<MediaBinaries, 'ffmpeg'>,
  input: string,
  outputPath: string,
  plan: SegmentedProcessingPlan,
  index: number,
  opts: Omit<RunProcessingOptions, 'durationMs'>,
): Promise<RunProcessingResult> {
  const segment = plan.segmented.segments[index];
  if (!segment) throw new Error(`segment ${index} is not in the plan (${plan.segmented.segments.length} segments)`);
  return runStep(bins, segmentArgs(plan, segment, input, outputPath), outputPath, segment.durationS * 1000, opts);
}

/** The audio pass of a segmented plan into `outputPath`; undefined when the source has no audio. */
export async function runAudioPass(
  bins: Pick<MediaBinaries, 'ffmpeg'>,
  input: string,
  outputPath: string,
  plan: SegmentedProcessingPlan,
  opts: Omit<RunProcessingOptions, 'durationMs'>,
): Promise<RunProcessingResult | undefined> {
  const args = audioPassArgs(plan, input, outputPath);
  if (!args) return undefined;
  return runStep(bins, args, outputPath, plan.output.durationMs, opts);
}

/** The join of a segmented plan: the segment files in order (and the audio pass's file) into the output file. */
export async function runJoin(
  bins: Pick<MediaBinaries, 'ffmpeg' | 'ffprobe'>,
  segments: string[],
  audio: string | undefined,
  outputPath: string,
  plan: SegmentedProcessingPlan,
  opts: Omit<RunProcessingOptions, 'durationMs'>,
): Promise<RunProcessingResult> {
  await mkdir(path.dirname(outputPath), { recursive: true });
  const list = `${outputPath}.segments.txt`;
  // Each segment lasts its frames at the output rate: the concat demuxer would otherwise place
  // the next one after the duration its file states, which MP4 rounds to the millisecond (a
  // 29.97 frames/s join came out 2 ms long over 4 segments, read back as 29.95 frames/s).
  const frameS = plan.output.fps.den / plan.output.fps.num;
  const durations = await Promise.all(segments.map(async (f) => (await segmentFrames(bins, f, opts.signal)) * frameS));
  await writeFile(list, concatDemuxerList(segments, durations));
  try {
    return await runStep(bins, joinArgs(plan, list, audio, outputPath), outputPath, plan.output.durationMs, opts);
  } finally {
    await rm(list, { force: true });
  }
}

/** The frames of a segment file (a segment without any is an error, not a zero-length part). */
async function segmentFrames(bins: Pick<MediaBinaries, 'ffprobe'>, file: string, signal?: AbortSignal): Promise<number> {
  const n = await countVideoPackets(bins, file, { signal });
  if (!Number.isInteger(n) || n < 1) throw new Error(`segment ${path.basename(file)} has no video frames`);
  return n;
}

async function runStep(bins: Pick<MediaBinaries, 'ffmpeg'>, args: string[], outputPath: string, durationMs: number, opts: Omit<RunProcessingOptions, 'durationMs'>): Promise<RunProcessingResult> {
  await mkdir(path.dirname(outputPath), { recursive: true });
  let best = 0;
  try {
    await runMedia(bins.ffmpeg, args, {
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
      durationMs,
      tool: 'ffmpeg',
      onProgress: (p) => {
        if (opts.signal?.aborted) return;
        best = Math.max(best, Math.min(100, p.percentage));
        opts.onProgress?.({ percentage: best, pass: 'encode', ...(p.speed !== undefined ? { speed: p.speed } : {}) });
      },
    });
  } catch (err) {
    await rm(outputPath, { force: true });
    throw err;
  }
  const { size } = await stat(outputPath);
  return { outputPath, bytes: size, passes: 1 };
}
