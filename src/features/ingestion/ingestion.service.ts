/**
 * Ingestion and the free clip. After video in (or the clip's cut) a video is ingested:
 * ffprobe reads its metadata (and the idet filter its real scanning); with full ingestion,
 * thumbnails, full-resolution frames, a web video and a quality assessment follow, each flagged
 * as it lands. When a master's ingestion is done, and the team has not turned it off, the free
 * 10-second clip is created as a derived video, cut from the master (`video.clip`, src/media/clip.ts) and ingested
 * under its own id.
 *
 * Every state change writes its event (`video_in_ingestion.*`, `clip_processing.*`,
 * `clip_ingestion.*`) in its transaction; both jobs are idempotent, so a worker that dies at any
 * point leaves a job that another worker runs again from the start of its stage.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Db } from '../../db/database';
import type { JobQueue } from '../../jobs/job-queue';
import type { JobHandler } from '../../jobs/worker';
import {
  assessQuality,
  clipWindow,
  cutClip,
  detectScanning,
  ingestionCosts,
  makeThumbnailsAndFrames,
  makeWebVideo,
  type MediaBinariesProvider,
  probeMedia,
  storedProbeFacts,
  UnsupportedMediaError,
} from '../../media';
import type { BlobStore } from '../../storage/blob-store';
import { storeFile, withLocalFile } from '../../storage/blob-files';
import type { Clock } from '../../shared/clock';
import { ProgressEta, weightedFraction, writeProgress } from '../../shared/progress-eta';
import { NotFoundError } from '../../shared/errors';
import { StorageMeters } from '../billing';
import { mediaStageError, stageError } from '../videos';
import { ingestionEventsFor, VideoEvents } from '../videos';
import { ingestionStore } from './ingestion.store';
import { recordVideoAsset, type AssetKind, type VideoAsset } from '../videos';
import { findVideo, IngestionFacts, retriesLeft, StageError, Video, VideoStage, VideoStageName } from '../videos';
import { TransactionalService } from '../../db/transactional';
import { CLIP_JOB, INGEST_JOB } from './ingestion.jobs';

/** Length of the free clip. */
export const FREE_CLIP_MS = 10_000;

export interface MediaSettings {
  /** Longest run of one ffmpeg or ffprobe process. */
  timeoutMs: number;
}

export interface VideoJobPayload {
  videoId: string;
}

/** Told, inside the transaction that records it, when a video's ingestion failed. */
export type IngestionFailureListener = (trx: Knex, video: Video) => Promise<void>;

export interface IngestionServiceDeps {
  db: Db;
  clock: Clock;
  jobs: JobQueue;
  blobs: BlobStore;
  /** ffmpeg and ffprobe (the process's one provider, src/media/binaries.ts). */
  binaries: MediaBinariesProvider;
  media: MediaSettings;
}

export class IngestionService extends TransactionalService {
  private readonly clock: Clock;
  private readonly jobs: JobQueue;
  private readonly blobs: BlobStore;
  private readonly binaries: MediaBinariesProvider;
  private readonly media: MediaSettings;
  private readonly failureListeners: IngestionFailureListener[] = [];

  constructor(deps: IngestionServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.jobs = deps.jobs;
    this.blobs = deps.blobs;
    this.binaries = deps.binaries;
    this.media = deps.media;
  }

  /** Processing refunds a processed video whose result cannot be ingested. */
  onFailure(listener: IngestionFailureListener): void {
    this.failureListeners.push(listener);
  }

  /** The ingestion stage of videos, or (the free clip's cut) their processing stage. */
  stage<S extends Extract<VideoStageName, 'ingestion' | 'processing'>>(name: S): VideoStage<S> {
    return new VideoStage(this.db, this.clock, name);
  }

  /** Records a failed ingestion with its event and tells the listeners, in the caller's transaction. */
  async recordFailure(trx: Knex, v: Video, error: StageError, now: Date): Promise<void> {
    await this.stage('ingestion').failed(trx, v, error, ingestionEventsFor(v.kind).failed, now);
    for (const listener of this.failureListeners) await listener(trx, v);
  }

  /** Records a failed cut of the free clip with its event, in the caller's transaction. */
  async recordClipFailure(trx: Knex, clip: Video, error: StageError, now: Date): Promise<void> {
    await this.stage('processing').failed(trx, clip, error, VideoEvents.clipProcessing.failed, now);
  }

  /** The team setting: does video in make the free clip (admin CLI `update-team --free-clip`). */
  async setFreeClipEnabled(teamId: string, enabled: boolean): Promise<void> {
    if (!(await ingestionStore.setFreeClipEnabled(this.db, teamId, enabled))) throw new NotFoundError(`Team ${teamId} not found`, 'TEAM_NOT_FOUND');
  }

  /** Starts ingestion of a stored video, in the caller's transaction (after its copy or cut). */
  async begin(trx: Knex, video: Video): Promise<void> {
    await this.stage('ingestion').reset(trx, video.id, { status: 'INITIAL', progress: 0, error: null }, this.clock.now());
    await INGEST_JOB.enqueue(this.jobs, trx, { videoId: video.id });
  }

  private get timeoutMs(): number {
    return this.media.timeoutMs;
  }

  /** `video.ingest` (ingestion.jobs.ts): ingests a stored video; its stage moves INITIAL -> IN_PROGRESS -> DONE | FAILED. */
  readonly runIngest: JobHandler<VideoJobPayload> = async ({ videoId }, ctx) => {
    const video = await findVideo(this.db, videoId);
    if (!video?.blobKey || !video.ingestion) return;
    if (video.ingestion.status === 'DONE' || video.ingestion.status === 'FAILED') return;
    const events = ingestionEventsFor(video.kind);
    const stage = this.stage('ingestion');
    await stage.start(videoId, events.started);
    const eta = new ProgressEta({ label: 'ingestion' });
    try {
      await this.ingest(video, await ctx.scratchDir(), ctx.signal, ctx.log, eta);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      if (retriesLeft(ctx, !(err instanceof UnsupportedMediaError))) throw err;
      const error = mediaStageError('ingestion', err);
      ctx.log.warn({ videoId, code: error.code, err }, 'ingestion failed');
      await stage.whenIn(videoId, ['IN_PROGRESS'], (trx, v, now) => this.recordFailure(trx, v, error, now));
      return;
    }
    await stage.whenIn(videoId, ['IN_PROGRESS'], async (trx, v, now) => {
      await stage.done(trx, v, events.done, now);
      if (v.kind === 'MASTER' && (await ingestionStore.freeClipEnabled(trx, v.teamId))) await this.createClip(trx, v, now);
    });
    eta.finish();
  };

  /**
   * Probe, scanning, and with full ingestion the assets and the quality assessment. Progress is
   * the steps weighted by their expected cost for this video (`ingestionCosts`), with the web
   * video's and the quality assessment's own progress (ffmpeg's) inside their steps; the time left comes from `eta` (src/shared/progress-eta.ts).
   */
  private async ingest(video: Video, dir: string, signal: AbortSignal, log: Logger, eta: ProgressEta): Promise<void> {
    const bins = await this.binaries.get();
    const id = video.id;
    const full = video.fullIngestion;
    const stage = this.stage('ingestion');
    const update = (u: IngestionFacts) => stage.recordFacts(id, u);
    // Steps: probe, scanning, then with full ingestion stills, web video, quality.
    let weights = [1];
    const reached = (step: number, fraction = 0) => eta.observe(weightedFraction(weights, step, fraction));
    eta.observe(0);
    const writes = writeProgress(eta, (e) => stage.progress(id, e), { onError: (err) => log.warn({ videoId: id, err }, 'ingestion: progress write failed') });
    await mkdir(dir, { recursive: true });
    try {
      await withLocalFile(this.blobs, video.blobKey!, dir, async (file) => {
        const opts = { signal, timeoutMs: this.timeoutMs };
        const probe = await probeMedia(bins, file, opts);
        const c = ingestionCosts(probe);
        weights = full ? [c.probe, c.scanning, c.stills, c.webVideo, c.quality] : [c.probe, c.scanning];
        reached(1);
        await writes.now();
        const heuristics = await detectScanning(bins, file, { ...opts, durationMs: probe.durationMs }).catch((err: unknown) => {
          log.warn({ videoId: id, err }, 'scanning detection failed; metadata keeps the container scanning only');
          return undefined;
        });
        const metadata = { ...probe.metadata } as Record<string, unknown>;
        if (heuristics) metadata.scanning = { ...(metadata.scanning ?? {}), heuristics };
        await update({ metadata, metadataAvailable: true, probe: storedProbeFacts(probe) });
        reached(2);
        if (!full) return;
        await writes.now();

        const durationMs = probe.durationMs;
        // One ffmpeg run decodes each position once for both the thumbnail and the full frame.
        const stills = await makeThumbnailsAndFrames(bins, file, path.join(dir, 'stills'), { ...opts, durationMs });
        await this.storeAssets(video, 'THUMBNAIL', 'image/jpeg', stills.thumbnails);
        await update({ thumbnailsAvailable: true });
        await this.storeAssets(video, 'FRAME', stills.frames[0]?.path.endsWith('.png') ? 'image/png' : 'image/jpeg', stills.frames);
        await update({ fullFramesAvailable: true });
        reached(3);
        await writes.now();

        const web = path.join(dir, 'web.mp4');
        await makeWebVideo(bins, file, web, { ...opts, durationMs, hasAudio: probe.hasAudio, onProgress: (p) => reached(3, p.percentage / 100) });
        const webProbe = await probeMedia(bins, web, opts);
        await this.storeAssets(video, 'WEB_VIDEO', 'video/mp4', [{ path: web, width: webProbe.width, height: webProbe.height }]);
        await update({ webVideoAvailable: true });
        reached(4);
        await writes.now();

        const quality = await assessQuality(bins, file, { ...opts, durationMs, fps: probe.fps, onProgress: (p) => reached(4, p.percentage / 100), scratchDir: dir });
        await update({ quality: quality as unknown as Record<string, unknown> });
      });
    } finally {
      await writes.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Stores the files, then records them and samples the team's storage in one transaction. */
  private async storeAssets(video: Video, kind: AssetKind, contentType: string, files: Array<{ path: string; positionMs?: number; width?: number; height?: number }>): Promise<void> {
    const assets: VideoAsset[] = [];
    let ordinal = 0;
    for (const f of files) {
      ordinal++;
      const key = `videos/${video.id}/assets/${kind.toLowerCase()}-${ordinal}${path.extname(f.path)}`;
      const { size } = await storeFile(this.blobs, key, f.path);
      assets.push({ id: randomUUID(), videoId: video.id, kind, ordinal, blobKey: key, contentType, size, width: f.width, height: f.height, positionMs: f.positionMs, createdAt: this.clock.now() });
    }
    await this.transactional(async (trx) => {
      for (const a of assets) await recordVideoAsset(trx, a);
      await new StorageMeters(trx).sample(video.teamId, this.clock.now());
    });
  }

  /** The free clip of a master whose ingestion just finished: a derived video and its cut job. */
  private async createClip(trx: Knex, master: Video, now: Date): Promise<void> {
    const durationMs = Number((master.ingestion?.metadata as { durationInMillis?: unknown } | undefined)?.durationInMillis ?? 0);
    const { startMs, durationMs: lengthMs } = clipWindow(durationMs, FREE_CLIP_MS);
    const clipId = randomUUID();
    await this.stage('processing').create(trx, {
      id: clipId,
      kind: 'CLIP',
      teamId: master.teamId,
      projectId: master.projectId,
      userId: master.userId,
      name: `${master.name} (free clip)`.slice(0, 255),
      description: `The free ${FREE_CLIP_MS / 1000}-second clip of ${master.name}`.slice(0, 511),
      masterVideoId: master.id,
      sourceVideoId: master.id,
      clipId,
      fullIngestion: master.fullIngestion,
      processing: { startMs, endMs: startMs + lengthMs },
      createdAt: now,
    });
    await CLIP_JOB.enqueue(this.jobs, trx, { videoId: clipId });
  }

  /**
   * `video.clip` (ingestion.jobs.ts): cuts the clip out of its master (to the frame, re-encoding
   * only what must be), stores it, then ingests it. The clip's processing stage moves INITIAL ->
   * IN_PROGRESS -> DONE | FAILED.
   */
  readonly runClip: JobHandler<VideoJobPayload> = async ({ videoId }, ctx) => {
    const clip = await findVideo(this.db, videoId);
    if (!clip?.processing || !clip.sourceVideoId) return;
    if (clip.processing.status === 'DONE' || clip.processing.status === 'FAILED') return;
    const master = await findVideo(this.db, clip.sourceVideoId);
    const stage = this.stage('processing');
    await stage.start(videoId, VideoEvents.clipProcessing.started);
    const fail = async (error: StageError) => {
      await stage.whenIn(videoId, ['IN_PROGRESS'], (trx, v, now) => this.recordClipFailure(trx, v, error, now));
    };
    if (!master?.blobKey || !master.file) return fail(stageError('clip', 'MASTER_VIDEO_NOT_AVAILABLE'));

    const ext = path.extname(master.file.name) || path.extname(master.blobKey) || '.mp4';
    // This claim's scratch folder (the worker removes it, or whoever takes the job over).
    const dir = await ctx.scratchDir();
    const eta = new ProgressEta({ label: 'clip' });
    eta.observe(0);
    const writes = writeProgress(eta, (e) => stage.progress(videoId, e), {
      onError: (err) => ctx.log.warn({ videoId, err }, 'free clip: progress write failed'),
    });
    await mkdir(dir, { recursive: true });
    try {
      const bins = await this.binaries.get();
      const out = path.join(dir, `clip${ext}`);
      const startMs = clip.processing.startMs ?? 0;
      const lengthMs = (clip.processing.endMs ?? startMs + FREE_CLIP_MS) - startMs;
      const container = (master.ingestion?.metadata as { containerName?: string } | undefined)?.containerName;
      const cut = await withLocalFile(
        this.blobs,
        master.blobKey,
        dir,
        (file) => cutClip(bins, file, out, { startMs, durationMs: lengthMs, container, signal: ctx.signal, timeoutMs: this.timeoutMs, onProgress: (f) => eta.observe(f) }),
        ctx.signal,
      );
      ctx.log.info({ videoId, container, method: cut.method, frames: cut.frames, encodedFrames: cut.encodedFrames, codec: cut.codec }, 'free clip: cut');
      if (cut.fellBack) ctx.log.info({ videoId, container }, 'free clip: written as Matroska (the source container cannot take these streams)');
      const key = `videos/${videoId}/file`;
      const stored = await storeFile(this.blobs, key, cut.path, { signal: ctx.signal });
      const { mtime } = await stat(cut.path);
      await writes.stop();
      await stage.whenIn(videoId, ['IN_PROGRESS'], async (trx, v, now) => {
        const base = path.basename(master.file!.name, path.extname(master.file!.name));
        const file = cut.fellBack
          ? { ...master.file!, name: `${base}-clip.mkv`.slice(0, 255), type: 'video/x-matroska', containerName: 'Matroska' }
          : { ...master.file!, name: `${base}-clip${ext}`.slice(0, 255) };
        await stage.recordFile(trx, videoId, { blobKey: key, crc32c: stored.crc32c, size: stored.size, file: { ...file, size: stored.size, lastModified: mtime } }, now);
        // The range shown is where the clip's frames really are (its first frame may fall up to
        // half a frame before the window's start).
        await stage.recordSourceRange(trx, videoId, { startMs: cut.startMs, endMs: cut.endMs }, now);
        await stage.done(trx, v, VideoEvents.clipProcessing.done, now);
        await this.begin(trx, { ...v, blobKey: key });
        await new StorageMeters(trx).sample(v.teamId, now);
      });
      eta.finish();
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      if (retriesLeft(ctx, !(err instanceof UnsupportedMediaError))) throw err;
      const error = mediaStageError('clip', err);
      ctx.log.warn({ videoId, code: error.code, err }, 'free clip: cut failed');
      await writes.stop();
      await fail(error);
    } finally {
      await writes.stop();
      await rm(dir, { recursive: true, force: true });
    }
  };
}
