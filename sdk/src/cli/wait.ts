/**
 * Waiting for a video's stage with progress, for `--wait` and `process`. Polls
 * `GET /v1/videos/{videoId}` (the SDK core's `waitFor` does the same for programs; this one also
 * draws the bar and stops on Ctrl-C).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { unwrap, type VidmillClient } from '../client';
import type { components } from '../generated/api';
import { checkInterrupted, CliError, EXIT } from './context';
import { createProgress, type Progress } from './progress';

type Video = components['schemas']['Video'];
type StageState = { status?: string; progressPercentage?: number; etaSeconds?: number; error?: { errorCode?: string; message?: string } };

/** The states of a video's stages, flattened. */
export function stagesOf(video: Video): { upload: StageState; ingestion: StageState; processing: StageState } {
  const u = video.upload?.uploadState;
  const i = video.ingestion?.ingestionState;
  const p = video.processing?.processingState;
  return {
    upload: { status: u?.uploadStatus, progressPercentage: u?.progressPercentage, etaSeconds: u?.etaSeconds, error: u?.error },
    ingestion: { status: i?.ingestionStatus, progressPercentage: i?.progressPercentage, etaSeconds: i?.etaSeconds, error: i?.error },
    processing: { status: p?.processingStatus, progressPercentage: p?.progressPercentage, etaSeconds: p?.etaSeconds, error: p?.error },
  };
}

/**
 * Waits until `stage` of the video is DONE, drawing its progress on stderr; `ingestion` also
 * shows the copy in before it. Resolves with the video; a FAILED stage throws a `CliError`
 * (exit 4) with the stage's errorCode and message.
 */
export async function waitForStage(client: VidmillClient, videoId: string, stage: 'ingestion' | 'processing', signal: AbortSignal, intervalMs = 1000): Promise<Video> {
  let bar: { label: string; progress: Progress } | undefined;
  const show = (label: string, s: StageState) => {
    if (bar?.label !== label) {
      bar?.progress.stop();
      bar = { label, progress: createProgress({ label, total: 100, unit: 'percent' }) };
    }
    bar.progress.update(s.status === 'DONE' ? 100 : (s.progressPercentage ?? 0), { etaSeconds: s.etaSeconds, status: s.status });
  };
  try {
    for (;;) {
      checkInterrupted(signal);
      const video = unwrap(await client.api.GET('/v1/videos/{videoId}', { params: { path: { videoId } }, signal }));
      const stages = stagesOf(video);
      const phases: Array<['upload' | 'ingestion' | 'processing', string]> =
        stage === 'ingestion'
          ? [
              ['upload', 'video in'],
              ['ingestion', 'ingestion'],
            ]
          : [['processing', 'processing']];
      let done = true;
      for (const [name, label] of phases) {
        const s = stages[name];
        if (s.status === 'FAILED') {
          show(label, s);
          throw new CliError(EXIT.FAILED, `The ${label} of video ${videoId} failed: ${s.error?.errorCode ?? 'FAILED'}: ${s.error?.message ?? 'no detail'}`, s.error?.errorCode);
        }
        if (s.status !== 'DONE') {
          show(label, s);
          done = false;
          break;
        }
      }
      if (done) {
        const last = phases[phases.length - 1];
        if (last) show(last[1], stages[last[0]]);
        return video;
      }
      await sleep(intervalMs, undefined, { signal }).catch(() => undefined);
    }
  } catch (err) {
    if (signal.aborted) checkInterrupted(signal);
    throw err;
  } finally {
    bar?.progress.stop();
  }
}
