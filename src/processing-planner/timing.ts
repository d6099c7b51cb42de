/**
 * The processed range: checked against the source, started on the source's first frame at or
 * after the requested start, and cut with seek (`-ss`) and duration (`-t`) options on the input
 * (on the output for a source whose demuxer cannot seek exactly).
 */
import { secondsArg } from './ffmpeg-syntax';
import type { PlanBuilder } from './plan-builder';
import { seeksExactly, type SourceFacts } from './source-facts';
import { throwIssues } from './validate';

export interface PlanTiming {
  /** Where the output starts in the source (seconds from the file's start). */
  startS: number;
  durationS: number;
  durationMs: number;
  /** Input options before `-i`: seek and duration of the range. */
  inputArgs: string[];
  /** Output options: the exact cut, for a source whose demuxer cannot seek exactly. */
  outputArgs: string[];
}

/**
 * How far before the range a source that cannot be sought exactly is entered: longer than any
 * GOP users send, so the keyframe its demuxer lands on is before the range, whose start is then
 * cut exactly on the decoded frames (an output `-ss`).
 */
export const INEXACT_SEEK_MARGIN_S = 30;

/**
 * How much a stored frame time may differ from the frame's place on the grid: a millisecond
 * (Matroska's and FLV's time base; a start rounded to it); at most a quarter frame.
 */
export const TIMESTAMP_SLACK_S = 0.001;

/**
 * Throws for a range outside the source. The output starts on the first frame at or after the
 * start (ffmpeg's exact seek keeps frames from -ss on; a -ss between two frames would leave the
 * first output frame late, and the constant-rate output would repeat it to fill the gap).
 */
export function planTiming(b: PlanBuilder, range: { startMs: number; endMs: number }): PlanTiming {
  const { src } = b;
  checkRange(b, range, src);
  throwIssues(b.issues);
  const startS = firstFrameAtOrAfter(range.startMs, range.endMs, src);
  const durationS = range.endMs / 1000 - startS;
  const durationMs = Math.round(durationS * 1000);
  const inputArgs: string[] = [];
  const outputArgs: string[] = [];
  // The cut is made a little before the first frame's time and after the range's end, so a
  // frame whose stored time is rounded (Matroska counts in milliseconds: 29.97's frame 1 is
  // stored at 33 ms, not 33.367) is neither dropped at the start nor kept past the end; the
  // output's own `-t` (muxerArgs) ends it exactly.
  const slack = src.fpsKnown ? Math.min(TIMESTAMP_SLACK_S, src.fps.den / src.fps.num / 4) : 0;
  const cutAt = startS - slack;
  if (seeksExactly(src)) {
    if (cutAt > 0) inputArgs.push('-ss', secondsArg(cutAt, 'floor'));
    if (cutAt > 0 || !src.durationMs || range.endMs < src.durationMs) inputArgs.push('-t', secondsArg(range.endMs / 1000 + slack - Math.max(0, cutAt)));
  } else {
    // MPEG-TS and the like: the demuxer's seek may land after the time asked for (a 10 s TS lost
    // a GOP at the start of a range), so it is entered a margin before the range and the range
    // is cut on the decoded frames; the output's own `-t` ends it.
    const entry = cutAt > INEXACT_SEEK_MARGIN_S ? secondsArg(cutAt - INEXACT_SEEK_MARGIN_S, 'floor') : undefined;
    if (entry) inputArgs.push('-ss', entry);
    const cut = cutAt - (entry ? Number(entry) : 0);
    if (cut > 0) outputArgs.push('-ss', secondsArg(cut, 'floor'));
  }
  return { startS, durationS, durationMs, inputArgs, outputArgs };
}

/**
 * The time (seconds from the file's start) of the source's first frame at or after `startMs`, on
 * its frame grid (frame rate, counted from where the video starts); the start itself when the
 * rate is unknown or no frame lies before `endMs`. A video that starts after the file (audio
 * first, or an MPEG-TS whose video follows its audio) starts the output at its own first frame
 * even for a range from 0: the audio before it is cut, so no frame is repeated to fill the gap.
 */
function firstFrameAtOrAfter(startMs: number, endMs: number, src: SourceFacts): number {
  if (!src.fpsKnown) return startMs / 1000;
  const offset = src.videoStartS;
  const frame = Math.max(0, Math.ceil(((startMs / 1000 - offset) * src.fps.num) / src.fps.den - 1e-9));
  const t = offset + (frame * src.fps.den) / src.fps.num;
  return t < endMs / 1000 ? t : startMs / 1000;
}

function checkRange(b: PlanBuilder, range: { startMs: number; endMs: number }, src: SourceFacts): void {
  const { startMs, endMs } = range;
  if (!Number.isFinite(startMs) || startMs < 0 || (src.durationMs > 0 && startMs >= src.durationMs)) {
    b.issues.add('INVALID_START_POSITION', 'startPosMs', `must be at least 0 and before the end of the source (${src.durationMs} ms)`, startMs);
  }
  if (!Number.isFinite(endMs) || endMs <= startMs || (src.durationMs > 0 && endMs > src.durationMs)) {
    b.issues.add('INVALID_END_POSITION', 'endPosMs', `must be after startPosMs and at most the source's duration (${src.durationMs} ms)`, endMs);
  }
}
