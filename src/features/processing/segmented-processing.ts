/**
 * Segmented processing (docs/processing.md "Segmented processing"): a processing job whose plan
 * is split (src/processing-planner/segments.ts) becomes one job per video segment and one for the
 * audio pass, which any worker may claim, and a join once all of them are done.
 *
 * - `split` (from the processing job, once): the parts' rows and their jobs, in one transaction.
 * - A part's job plans again with the segment length of the split (so workers configured
 *   differently agree), runs its ffmpeg step, stores the file as a blob
 *   (`videos/<id>/segments/<part>`), then marks the part done; the part that completes the set
 *   enqueues the join in the same transaction (the video row is locked, so exactly one does).
 * - The join fetches the parts, joins them without re-encoding and finishes like an unsplit job
 *   (ProcessingService.finish): one output file, DONE, ingestion.
 * - Progress: each part writes its own; the stage's progress is their mean weighted by duration
 *   (the audio pass weighs little) over the first 97 %, the join the rest. The time left comes
 *   from that aggregate's measured rate, so it reflects every worker at once.
 * - Failure: a part or the join is retried alone (its own attempts); when one gives up, the
 *   processing is FAILED and refunded once (ProcessingService.fail). The parts' blobs are
 *   removed after the join or the failure, and by the sweep (`sweepLeftovers`) after a crash.
 */
import path from 'node:path';
import type { Db } from '../../db/database';
import { TransactionalService } from '../../db/transactional';
import type { JobQueue } from '../../jobs/job-queue';
import type { JobContext, JobHandler } from '../../jobs/worker';
import type { Clock } from '../../shared/clock';
import { ProgressEta, writeProgress } from '../../shared/progress-eta';
import { storeFile, withLocalFile } from '../../storage/blob-files';
import type { BlobStore } from '../../storage/blob-store';
import type { MediaBinariesProvider } from '../../media';
import { findVideo, type Video, type VideoStage } from '../videos';
import type { EnginePlan, EngineSegments, ProcessingEngine } from './engine';
import { probeOf, rangeOf } from './processing-inputs';
import { SegmentRecord, segmentsStore } from './segments.store';
import { JOIN_JOB, SEGMENT_JOB } from './processing.jobs';
import { processingAttempt } from './processing-attempt';

/** Share of the stage's progress the parts make up (the join makes the rest). */
const PARTS_SHARE = 0.97;
/** Weight of the audio pass against a video segment of the same length (it encodes audio only). */
const AUDIO_WEIGHT = 0.05;

export interface SegmentedProcessingDeps {
  db: Db;
  clock: Clock;
  jobs: JobQueue;
  blobs: BlobStore;
  binaries: MediaBinariesProvider;
  engine: ProcessingEngine;
  timeoutMs: number;
}

/** The stage's progress (0..1) from its parts' progress, weighted by their durations. */
export function partsProgress(parts: Pick<SegmentRecord, 'kind' | 'durationMs' | 'progress'>[]): number {
  let total = 0;
  let done = 0;
  for (const p of parts) {
    const w = p.durationMs * (p.kind === 'audio' ? AUDIO_WEIGHT : 1);
    total += w;
    done += w * Math.min(1, Math.max(0, p.progress));
  }
  return total > 0 ? (done / total) * PARTS_SHARE : 0;
}

/** What segmented processing uses of the processing service (processing.service.ts). */
export interface ProcessingStageOwner {
  readonly stage: VideoStage<'processing'>;
  sourceAvailable(videoId: string, source: Video | undefined): Promise<boolean>;
  failAfterAttempt(videoId: string, err: unknown, ctx: JobContext): Promise<void>;
  finish(videoId: string, source: Video | undefined, plan: EnginePlan, out: string, signal: AbortSignal): Promise<void>;
}

export class SegmentedProcessing extends TransactionalService {
  constructor(
    private readonly processing: ProcessingStageOwner,
    private readonly deps: SegmentedProcessingDeps,
  ) {
    super(deps.db);
  }

  /** The parts and their jobs, once (a processing job run again after a crash adds nothing). */
  async split(videoId: string, segments: EngineSegments): Promise<void> {
    await this.processing.stage.whenIn(videoId, ['IN_PROGRESS'], async (trx, _v, now) => {
      if ((await segmentsStore.byVideo(trx, videoId)).length) return;
      const parts: Omit<SegmentRecord, 'status' | 'progress' | 'blobKey' | 'updatedAt'>[] = segments.durationsMs.map((durationMs, part) => ({
        videoId,
        part,
        kind: 'video',
        durationMs,
        segmentSeconds: segments.segmentSeconds,
        createdAt: now,
      }));
      if (segments.audio) {
        const total = segments.durationsMs.reduce((a, b) => a + b, 0);
        parts.push({ videoId, part: parts.length, kind: 'audio', durationMs: total, segmentSeconds: segments.segmentSeconds, createdAt: now });
      }
      await segmentsStore.insertAll(trx, parts);
      // Claimed in order (run_at, all already due): the segments from the start, then the audio pass (short, so it fills a gap).
      const order = [...parts.filter((p) => p.kind === 'video'), ...parts.filter((p) => p.kind === 'audio')];
      for (const [i, p] of order.entries()) {
        const runAt = new Date(now.getTime() - (order.length - i));
        await SEGMENT_JOB.enqueue(this.deps.jobs, trx, { videoId, part: p.part }, { runAt });
      }
    });
  }

  /** `video.process-segment`: one part's ffmpeg step, its file stored, the part done (and the join enqueued by the last part). */
  readonly runPart: JobHandler<{ videoId: string; part: number }> = async ({ videoId, part }, ctx) => {
    const started = await this.started(videoId);
    if (!started) return;
    const parts = await segmentsStore.byVideo(this.db, videoId);
    const mine = parts.find((p) => p.part === part);
    if (!mine || mine.status === 'done') return;
    const { video, source } = started;
    if (!(await this.processing.sourceAvailable(videoId, source))) return;
    const attempt = { binaries: this.deps.binaries, engine: this.deps.engine, progress: () => this.progressWriter(videoId, part), failed: (err: unknown) => this.failAfterAttempt(videoId, err, ctx) };
    await processingAttempt(ctx, attempt, async ({ dir, bins, progress }) => {
      const plan = this.plan(video, source, mine.segmentSeconds);
      const segments = this.deps.engine.segmentsOf(plan);
      if (!segments || segments.durationsMs.length + (segments.audio ? 1 : 0) !== parts.length) {
        throw new Error(`the plan no longer has the ${parts.length} parts video ${videoId} was split into`);
      }
      const ext = mine.kind === 'audio' ? segments.audioExtension : segments.segmentExtension;
      const out = path.join(dir, `part-${part}${ext}`);
      const opts = { signal: ctx.signal, timeoutMs: this.deps.timeoutMs, onProgress: (p: { percentage: number }) => progress.observe(p.percentage / 100) };
      await withLocalFile(this.deps.blobs, source.blobKey!, dir, (file) =>
        mine.kind === 'audio' ? this.deps.engine.runAudio(bins, file, out, plan, opts) : this.deps.engine.runSegment(bins, file, out, plan, part, opts),
      );
      const key = `videos/${videoId}/segments/${part}${ext}`;
      await storeFile(this.deps.blobs, key, out, { signal: ctx.signal });
      await progress.stop();
      const kept = await this.processing.stage.whenIn(videoId, ['IN_PROGRESS'], async (trx, _v, now) => {
        await segmentsStore.markDone(trx, videoId, part, key, now);
        const all = await segmentsStore.byVideo(trx, videoId);
        if (all.every((p) => p.status === 'done')) {
          await JOIN_JOB.enqueue(this.deps.jobs, trx, { videoId });
        }
      });
      // The processing ended meanwhile (another part failed, the video was deleted): nothing will join this part.
      if (!kept) await this.deps.blobs.delete(key).catch(() => undefined);
    });
  };

  /** `video.process-join`: the parts joined into the output, then finished as an unsplit job would be. */
  readonly runJoin: JobHandler<{ videoId: string }> = async ({ videoId }, ctx) => {
    const started = await this.started(videoId);
    if (!started) return;
    const { video, source } = started;
    const parts = await segmentsStore.byVideo(this.db, videoId);
    if (!parts.length || parts.some((p) => p.status !== 'done' || !p.blobKey)) return;
    const eta = new ProgressEta({ label: 'processing' });
    eta.observe(PARTS_SHARE);
    const attempt = {
      binaries: this.deps.binaries,
      engine: this.deps.engine,
      progress: () => writeProgress(eta, (e) => this.processing.stage.progress(videoId, e)),
      failed: (err: unknown) => this.failAfterAttempt(videoId, err, ctx),
    };
    await processingAttempt(ctx, attempt, async ({ dir, bins, progress }) => {
      const plan = this.plan(video, source, parts[0]!.segmentSeconds);
      const out = path.join(dir, `output${plan.fileExtension}`);
      const videoParts = parts.filter((p) => p.kind === 'video');
      const audio = parts.find((p) => p.kind === 'audio');
      await withLocalFiles(
        this.deps.blobs,
        [...videoParts, ...(audio ? [audio] : [])].map((p) => p.blobKey!),
        dir,
        async (files) => {
          const audioFile = audio ? files.at(-1) : undefined;
          await this.deps.engine.join(bins, files.slice(0, videoParts.length), audioFile, out, plan, {
            signal: ctx.signal,
            timeoutMs: this.deps.timeoutMs,
            onProgress: (p) => eta.observe(PARTS_SHARE + ((1 - PARTS_SHARE) * p.percentage) / 100),
          });
        },
      );
      await progress.stop();
      await this.processing.finish(videoId, source, plan, out, ctx.signal);
      eta.finish();
      await this.removeParts(videoId).catch((err: unknown) => ctx.log.warn({ err, videoId }, 'could not remove the segments of a joined video'));
    });
  };

  /** Removes the parts (rows and blobs) of videos whose processing ended or that are gone; returns how many videos. */
  async sweepLeftovers(limit = 100): Promise<number> {
    const ids = await segmentsStore.leftoverVideoIds(this.db, limit);
    for (const id of ids) await this.removeParts(id);
    return ids.length;
  }

  private async failAfterAttempt(videoId: string, err: unknown, ctx: JobContext): Promise<void> {
    await this.processing.failAfterAttempt(videoId, err, ctx);
    // Failed for good: the other parts' files are of no use any more.
    const v = await findVideo(this.db, videoId);
    if (v?.processing?.status === 'FAILED') await this.removeParts(videoId).catch(() => undefined);
  }

  private async removeParts(videoId: string): Promise<void> {
    const parts = await segmentsStore.byVideo(this.db, videoId);
    for (const p of parts) if (p.blobKey) await this.deps.blobs.delete(p.blobKey);
    await this.transactional((trx) => segmentsStore.deleteAll(trx, videoId));
  }

  /** The video and its source while its processing runs; undefined when it ended or is gone. */
  private async started(videoId: string) {
    const video = await findVideo(this.db, videoId);
    if (!video?.processing || video.processing.status !== 'IN_PROGRESS' || !video.sourceVideoId) return undefined;
    const source = await findVideo(this.db, video.sourceVideoId);
    if (!source) return undefined;
    return { video, source };
  }

  private plan(video: Video, source: Video, segmentSeconds: number): EnginePlan {
    const probe = probeOf(source);
    return this.deps.engine.plan(video.processing?.options ?? {}, probe, rangeOf(video, probe), { segmentSeconds });
  }

  /**
   * A part's progress, once a second: its own row, then the stage's aggregate over every part
   * with the time left measured on that aggregate (ProgressEta), one write at a time.
   */
  private progressWriter(videoId: string, part: number) {
    const { db } = this;
    const { clock } = this.deps;
    const eta = new ProgressEta({ label: 'processing' });
    let mine = 0;
    let chain: Promise<void> = Promise.resolve();
    let stopped = false;
    const timer = setInterval(() => {
      chain = chain
        .then(async () => {
          if (stopped) return;
          await segmentsStore.setProgress(db, videoId, part, mine, clock.now());
          eta.observe(partsProgress(await segmentsStore.byVideo(db, videoId)));
          await this.processing.stage.progress(videoId, eta.estimate());
        })
        .catch(() => undefined);
    }, 1000);
    timer.unref?.();
    return {
      observe(fraction: number) {
        mine = Math.max(mine, fraction);
      },
      async stop() {
        clearInterval(timer);
        await chain;
        stopped = true;
      },
    };
  }
}

/** Local paths of several stored objects at once (temporary copies, removed after `fn`, where the store has no local files). */
async function withLocalFiles<T>(blobs: BlobStore, keys: string[], dir: string, fn: (files: string[]) => Promise<T>): Promise<T> {
  const files: string[] = [];
  const next = async (i: number): Promise<T> => {
    if (i === keys.length) return fn(files);
    return withLocalFile(blobs, keys[i]!, dir, async (file) => {
      files.push(file);
      return next(i + 1);
    });
  };
  return next(0);
}
