/**
 * One attempt of a processing job: the whole job (`video.process`), a part of a split video
 * (`video.process-segment`) or the join (`video.process-join`). Each needs the same frame around
 * its own work: the claim's scratch folder, a progress writer, ffmpeg found and the engine's
 * capabilities read; a failure handed to the caller's `failed` (retry or FAILED with the refund)
 * once the writer has stopped; the writer stopped and the folder removed however it ends.
 */
import { mkdir, rm } from 'node:fs/promises';
import type { JobContext } from '../../jobs/worker';
import type { MediaBinaries, MediaBinariesProvider } from '../../media';
import type { ProcessingEngine } from './engine';

/** Something that writes progress until stopped (stopping twice is harmless). */
export interface ProgressStopper {
  stop(): Promise<void>;
}

export interface AttemptSetting<W extends ProgressStopper> {
  binaries: Pick<MediaBinariesProvider, 'get'>;
  engine: Pick<ProcessingEngine, 'prepare'>;
  /** Starts the attempt's progress writer (after the scratch folder exists). */
  progress: () => W;
  /** Told of a failure of `work` (after the writer stopped); it rethrows for the queue to retry. */
  failed: (err: unknown) => Promise<void>;
}

export async function processingAttempt<W extends ProgressStopper>(
  ctx: JobContext,
  setting: AttemptSetting<W>,
  work: (attempt: { dir: string; bins: MediaBinaries; progress: W }) => Promise<void>,
): Promise<void> {
  // This claim's scratch folder (the worker removes it, or whoever takes the job over).
  const dir = await ctx.scratchDir();
  await mkdir(dir, { recursive: true });
  const progress = setting.progress();
  try {
    const bins = await setting.binaries.get();
    await setting.engine.prepare();
    await work({ dir, bins, progress });
  } catch (err) {
    await progress.stop();
    await setting.failed(err);
  } finally {
    await progress.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
