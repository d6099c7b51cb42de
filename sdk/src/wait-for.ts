/**
 * `waitFor(client, videoId, stage)`: polls `GET /v1/videos/{videoId}` until a stage of the video
 * is `DONE` (resolves with its last state) or `FAILED` (throws `VidmillStageFailedError` with the
 * stage's `StageError` code), reporting progress on every change.
 *
 * Stages and where the video representation holds them:
 * - `videoIn`: the copy or upload into the platform, `upload.uploadState` (master videos);
 * - `ingestion`: `ingestion.ingestionState`; a failed video in (or failed processing, for a
 *   derived video) fails the wait too, as ingestion will then never run;
 * - `processing`: `processing.processingState` of a video created by processing;
 * - `videoOut`: the latest copy out, `output.state`.
 */
import type { components } from './generated/api';
import type { VidmillClient } from './client';
import { unwrap } from './client';
import { abortableSleep } from './sleep';

export type Video = components['schemas']['Video'];
export type OperationStatus = components['schemas']['OperationStatus'];
export type VideoStage = 'videoIn' | 'ingestion' | 'processing' | 'videoOut';
export const VIDEO_STAGES: readonly VideoStage[] = ['videoIn', 'ingestion', 'processing', 'videoOut'];

/** A stage's state as the video showed it at one poll. */
export interface StageProgress {
  stage: VideoStage;
  /** `INITIAL` also while the stage has no state yet. */
  status: OperationStatus;
  progressPercentage: number;
  /** Estimated seconds left, when the server can tell. */
  etaSeconds?: number;
  /** Bytes received so far (video in only). */
  bytesTransferred?: number;
  /** Why the stage failed (`FAILED` only). */
  error?: { errorCode: string; message: string };
}

/** `waitFor`'s answer: the stage's final state and the whole video of the last poll. */
export interface StageResult extends StageProgress {
  video: Video;
}

export interface WaitForOptions {
  /** Give up after this long (default 30 minutes) with `VidmillWaitTimeoutError`. */
  timeoutMs?: number;
  /** Pause between polls (default 2 s). */
  intervalMs?: number;
  /** Called with the stage's progress whenever it changed since the last poll (and on the first). */
  onProgress?: (progress: StageProgress) => void;
  /** Stops waiting; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** A stage of the video ended `FAILED`: `errorCode` is its `StageError` code. */
export class VidmillStageFailedError extends Error {
  override readonly name = 'VidmillStageFailedError';
  constructor(
    readonly videoId: string,
    /** The stage that failed: the one waited for, or one it depends on. */
    readonly stage: VideoStage,
    readonly errorCode: string,
    message: string,
    readonly video: Video,
  ) {
    super(`${stage} of video ${videoId} failed: ${errorCode}: ${message}`);
  }
}

export class VidmillWaitTimeoutError extends Error {
  override readonly name = 'VidmillWaitTimeoutError';
  constructor(
    readonly videoId: string,
    readonly stage: VideoStage,
    readonly timeoutMs: number,
    /** The stage's state at the last poll. */
    readonly last: StageProgress,
  ) {
    super(`${stage} of video ${videoId} not done after ${timeoutMs} ms (last ${last.status} ${last.progressPercentage} %)`);
  }
}

/** The state of `stage` in a video representation. */
export function stageProgress(video: Video, stage: VideoStage): StageProgress {
  const state = stageState(video, stage);
  const error = state?.error;
  return {
    stage,
    status: state?.status ?? 'INITIAL',
    progressPercentage: state?.progressPercentage ?? (state?.status === 'DONE' ? 100 : 0),
    ...(state?.etaSeconds !== undefined ? { etaSeconds: state.etaSeconds } : {}),
    ...(state?.bytesTransferred !== undefined ? { bytesTransferred: state.bytesTransferred } : {}),
    ...(error ? { error: { errorCode: error.errorCode, message: error.message } } : {}),
  };
}

interface StageState {
  status?: OperationStatus;
  progressPercentage?: number;
  etaSeconds?: number;
  bytesTransferred?: number;
  error?: { errorCode: string; message: string };
}

function stageState(video: Video, stage: VideoStage): StageState | undefined {
  switch (stage) {
    case 'videoIn': {
      const s = video.upload?.uploadState;
      return s && { ...s, status: s.uploadStatus };
    }
    case 'ingestion': {
      const s = video.ingestion?.ingestionState;
      return s && { ...s, status: s.ingestionStatus };
    }
    case 'processing': {
      const s = video.processing?.processingState;
      return s && { ...s, status: s.processingStatus };
    }
    case 'videoOut':
      return video.output?.state;
  }
}

/** Stages that must succeed before `stage` can run: their failure ends the wait. */
function prerequisites(video: Video, stage: VideoStage): VideoStage[] {
  if (stage !== 'ingestion') return [];
  return video.processing ? ['processing'] : ['videoIn'];
}

export async function waitFor(client: VidmillClient, videoId: string, stage: VideoStage, options: WaitForOptions = {}): Promise<StageResult> {
  const timeoutMs = options.timeoutMs ?? 30 * 60_000;
  const intervalMs = options.intervalMs ?? 2_000;
  const deadline = Date.now() + timeoutMs;
  let last: StageProgress | undefined;
  for (;;) {
    options.signal?.throwIfAborted();
    const video = unwrap(await client.api.GET('/v1/videos/{videoId}', { params: { path: { videoId } }, signal: options.signal }));
    for (const before of prerequisites(video, stage)) {
      const p = stageProgress(video, before);
      if (p.status === 'FAILED') throw failed(videoId, p, video);
    }
    const progress = stageProgress(video, stage);
    if (!last || changed(last, progress)) options.onProgress?.(progress);
    last = progress;
    if (progress.status === 'DONE') return { ...progress, video };
    if (progress.status === 'FAILED') throw failed(videoId, progress, video);
    if (Date.now() + intervalMs > deadline) throw new VidmillWaitTimeoutError(videoId, stage, timeoutMs, progress);
    await abortableSleep(intervalMs, options.signal);
  }
}

function failed(videoId: string, p: StageProgress, video: Video): VidmillStageFailedError {
  return new VidmillStageFailedError(videoId, p.stage, p.error?.errorCode ?? 'UNKNOWN', p.error?.message ?? 'the stage failed', video);
}

function changed(a: StageProgress, b: StageProgress): boolean {
  return a.status !== b.status || a.progressPercentage !== b.progressPercentage || a.etaSeconds !== b.etaSeconds || a.bytesTransferred !== b.bytesTransferred;
}
