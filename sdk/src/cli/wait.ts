/**
 * Waiting for a video's stage with a progress bar, for `--wait` and `process`: the SDK's
 * `waitFor` (sdk/src/wait-for.ts) with its `onProgress` drawn on stderr; `ingestion` of a master
 * first follows the copy in (`videoIn`), so both show.
 */
import type { VidmillClient } from '../client';
import type { components } from '../generated/api';
import { waitFor, type VideoStage } from '../wait-for';
import { checkInterrupted } from './context';
import { createProgress } from './progress';

type Video = components['schemas']['Video'];
type StageState = { status?: string; progressPercentage?: number; etaSeconds?: number; error?: { errorCode?: string; message?: string } };

/** The states of a video's stages, flattened (for the tables). */
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

const LABELS: Record<VideoStage, string> = { videoIn: 'video in', ingestion: 'ingestion', processing: 'processing', videoOut: 'video out' };

/**
 * Waits until `stage` of the video is DONE, drawing its progress on stderr, and resolves with the
 * video: `ingestion` follows the copy in first, `processing` the result's ingestion after, so the
 * video is usable (download, compare) when this resolves. A FAILED stage throws the SDK's `VidmillStageFailedError` (exit 4); Ctrl-C `Interrupted`.
 */
export async function waitForStage(client: VidmillClient, videoId: string, stage: 'ingestion' | 'processing', signal: AbortSignal, intervalMs = 1000): Promise<Video> {
  // A processed video is usable (download, compare) once its ingestion is done too.
  const stages: VideoStage[] = stage === 'ingestion' ? ['videoIn', 'ingestion'] : ['processing', 'ingestion'];
  let video: Video | undefined;
  for (const s of stages) {
    const bar = createProgress({ label: LABELS[s], total: 100, unit: 'percent' });
    try {
      const result = await waitFor(client, videoId, s, {
        intervalMs,
        signal,
        onProgress: (p) => bar.update(p.status === 'DONE' ? 100 : p.progressPercentage, { etaSeconds: p.etaSeconds, status: p.status }),
      });
      bar.update(100, { etaSeconds: 0, status: result.status });
      video = result.video;
    } catch (err) {
      checkInterrupted(signal);
      throw err;
    } finally {
      bar.stop();
    }
  }
  return video!;
}
