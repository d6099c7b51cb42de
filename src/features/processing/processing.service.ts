/**
 * Processing: appraisals (a priced estimate that expires after 15 minutes), accepting one or
 * starting directly (a new processed video, charged once, and its job), the job itself (the
 * options -> ffmpeg engine on the source, then ingestion of the result), and the status.
 *
 * Accepting writes the processed video, the charge (idempotent by the video's id) and the job in
 * ONE transaction; starting plans once and writes the appraisal (accepted), the charge, the video
 * and the job in ONE transaction. A job that fails, or whose result cannot be ingested, is
 * refunded once.
 */
import { fileNameFrom } from '../../shared/file-names';
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Db } from '../../db/database';
import type { JobQueue } from '../../jobs/job-queue';
import type { JobContext, JobHandler } from '../../jobs/worker';
import { storeFile, withLocalFile } from '../../storage/blob-files';
import type { BlobStore } from '../../storage/blob-store';
import type { Clock } from '../../shared/clock';
import { ProgressEta, writeProgress } from '../../shared/progress-eta';
import { BadRequestError, ConflictError, DomainError, NotFoundError } from '../../shared/errors';
import { findTeam, type BillingType } from '../accounts';
import type { LedgerService, PricedJob, ProductUse } from '../billing';
import { StorageMeters } from '../billing';
import { priceStorage } from '../billing';
import type { IngestionService } from '../ingestion';
import type { MediaBinariesProvider } from '../../media';
import { mediaStageError, stageError } from '../videos';
import { findVideo, findVideoInScope, retriesLeft, StageError, Video, VideoStage } from '../videos';
import type { AppliedOptions, JobAppraisal } from '../videos';
import { processingProducts } from './billing-products';
import type { ConfigurationsService } from './configurations.service';
import type { EngineEstimate, EnginePlan, ProcessingEngine } from './engine';
import { AppraisalRecord, appraisalsStore } from './appraisals.store';
import { TransactionalService } from '../../db/transactional';
import { SegmentedProcessing } from './segmented-processing';
import { PROCESS_JOB } from './processing.jobs';
import { probeOf, processingEvents, rangeOf } from './processing-inputs';
import { processingAttempt } from './processing-attempt';
export { probeOf } from './processing-inputs';

export const APPRAISAL_TTL_MS = 15 * 60_000;
const MIN_LENGTH_MS = 1000;

function appliedOptionsOf(plan: EnginePlan): AppliedOptions {
  return { options: plan.applied.options, output: plan.applied.output };
}

export interface Appraisal {
  id: string;
  expiresAt: Date;
  /** The video accepting would create (not stored yet). */
  video: Video;
  source: Video;
}

export interface ProcessingRequest {
  options?: Record<string, unknown>;
  confId?: string;
  startPosMs?: number;
  endPosMs?: number;
}

export interface NewVideoNames {
  videoName?: string;
  videoDescription?: string;
}

/** A job planned from a request (ProcessingService.planJob): everything its appraisal needs but the team's billing type. */
interface PlannedJob {
  source: Video;
  options: Record<string, unknown>;
  configurationId?: string;
  range: { startMs: number; endMs: number };
  plan: EnginePlan;
  estimate: EngineEstimate;
  charge: ProductUse[];
}

export interface ProcessingServiceDeps {
  db: Db;
  clock: Clock;
  configurations: ConfigurationsService;
  ledger: LedgerService;
  jobs: JobQueue;
  blobs: BlobStore;
  ingestion: IngestionService;
  /** ffmpeg and ffprobe (the process's one provider, src/media/binaries.ts). */
  binaries: MediaBinariesProvider;
  engine: ProcessingEngine;
  timeoutMs: number;
}

export class ProcessingService extends TransactionalService {
  private readonly clock: Clock;
  private readonly configurations: ConfigurationsService;
  private readonly ledger: LedgerService;
  private readonly jobs: JobQueue;
  private readonly blobs: BlobStore;
  private readonly ingestion: IngestionService;
  private readonly binaries: MediaBinariesProvider;
  private readonly engine: ProcessingEngine;
  private readonly timeoutMs: number;
  /** Segmented processing: the segment, audio and join jobs of a split video. */
  readonly segmented: SegmentedProcessing;
  constructor(deps: ProcessingServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.configurations = deps.configurations;
    this.ledger = deps.ledger;
    this.jobs = deps.jobs;
    this.blobs = deps.blobs;
    this.ingestion = deps.ingestion;
    this.binaries = deps.binaries;
    this.engine = deps.engine;
    this.timeoutMs = deps.timeoutMs;
    this.segmented = new SegmentedProcessing(this, { db: deps.db, clock: deps.clock, jobs: deps.jobs, blobs: deps.blobs, binaries: deps.binaries, engine: deps.engine, timeoutMs: deps.timeoutMs });
  }

  /** A priced estimate of the job, stored for 15 minutes (accepting it is `accept`). */
  async appraise(userId: string, videoId: string, req: ProcessingRequest, names: NewVideoNames = {}): Promise<Appraisal> {
    const job = await this.planJob(userId, videoId, req);
    const priced = await this.ledger.estimate(job.source.teamId, job.charge);
    const record = this.appraisalOf(userId, job, priced, randomUUID(), this.clock.now());
    await appraisalsStore.insert(this.db, record);
    return { id: record.id, expiresAt: record.expiresAt, video: this.newVideo(record, job.source, names), source: job.source };
  }

  /**
   * Accepts an appraisal: 404 unknown (or of another video), 409 APPRAISAL_EXPIRED / already
   * accepted, 409 APPRAISAL_BILLING_OUT_DATED when the team's billing type changed since,
   * 409 INSUFFICIENT_PROJECTED_BALANCE_ERROR when the wallet cannot pay.
   */
  async accept(userId: string, videoId: string, appraisalId: string, names: NewVideoNames = {}): Promise<Video> {
    const source = await this.processable(userId, videoId);
    return this.transactional(async (trx) => {
      const a = await appraisalsStore.byIdForUpdate(trx, appraisalId);
      if (!a || a.sourceVideoId !== source.id) throw new NotFoundError('Appraisal not found');
      if (a.acceptedVideoId) throw new ConflictError('APPRAISAL_ALREADY_ACCEPTED', `Appraisal ${a.id} was accepted already (video ${a.acceptedVideoId})`);
      const now = this.clock.now();
      if (a.expiresAt.getTime() <= now.getTime()) throw new ConflictError('APPRAISAL_EXPIRED', `Appraisal ${a.id} expired at ${a.expiresAt.toISOString()}; create a new one`);
      const team = await findTeam(trx, source.teamId);
      if (!team) throw new NotFoundError('Team not found', 'TEAM_NOT_FOUND');
      if (team.billingType !== a.billingType) {
        throw new ConflictError('APPRAISAL_BILLING_OUT_DATED', `The team is billed by ${team.billingType} now, not ${a.billingType} as when the appraisal was made; create a new one`);
      }
      const appraisal = a.appraisal as unknown as JobAppraisal;
      const booked = await this.chargeFor(trx, source, a.videoId, appraisal.charge);
      // The billing type the ledger charged in is the team's under the lock; the check above read it before.
      if (booked.billingType !== a.billingType) {
        throw new ConflictError('APPRAISAL_BILLING_OUT_DATED', `The team is billed by ${booked.billingType} now, not ${a.billingType} as when the appraisal was made; create a new one`);
      }
      // The appraisal's amounts are what is booked; only a changed price list (a restart with
      // another VIDMILL_PRICE_LIST_FILE) could make them differ, and then the appraisal is out of date.
      const bookedCost = booked.billingType === 'WALLET' ? -booked.amountMicros : booked.credits;
      if (bookedCost !== (a.billingType === 'WALLET' ? appraisal.costMicros : appraisal.costCredits)) {
        throw new ConflictError('APPRAISAL_BILLING_OUT_DATED', `Prices changed since appraisal ${a.id} was made; create a new one`);
      }
      await appraisalsStore.markAccepted(trx, a.id, a.videoId);
      return this.createProcessedVideo(trx, userId, a, source, names, now);
    });
  }

  /**
   * Appraise and accept in one call (startProcessingByVideoId / ...AndConfId): the job is planned
   * once, then ONE transaction charges it (the ledger locks the team and reads its billing type,
   * the only read of the team; 409 INSUFFICIENT_PROJECTED_BALANCE_ERROR or
   * CLOUD_MARKETPLACE_ACCESS_NOT_AVAILABLE roll everything back), writes the appraisal priced for
   * that billing type and already accepted, the processed video and its job.
   */
  async start(userId: string, videoId: string, req: ProcessingRequest, names: NewVideoNames): Promise<Video> {
    const job = await this.planJob(userId, videoId, req);
    const priced = this.ledger.price(job.charge);
    return this.transactional(async (trx) => {
      const now = this.clock.now();
      const processedId = randomUUID();
      const booked = await this.chargeFor(trx, job.source, processedId, job.charge);
      const a = this.appraisalOf(userId, job, { ...priced, billingType: booked.billingType }, processedId, now);
      await appraisalsStore.insert(trx, { ...a, acceptedVideoId: processedId });
      return this.createProcessedVideo(trx, userId, a, job.source, names, now);
    });
  }

  /**
   * Plans a job for a request, once: the source (visible and ingested), the options (sent, or the
   * configuration's), the rules of this ffmpeg, the range, the plan, its estimate and the products
   * it is charged for. Reads no team and books nothing.
   */
  private async planJob(userId: string, videoId: string, req: ProcessingRequest): Promise<PlannedJob> {
    const source = await this.processable(userId, videoId);
    const options = await this.optionsOf(userId, req);
    await this.engine.prepare();
    this.engine.validate(options);
    const probe = probeOf(source);
    const range = positions(probe.durationMs, req.startPosMs, req.endPosMs);
    const plan = this.engine.plan(options, probe, range);
    const estimate = this.engine.estimate(plan, probe);
    const charge = processingProducts(options, plan, probe, estimate.gigapixels);
    return { source, options, configurationId: req.confId, range, plan, estimate, charge };
  }

  /** The appraisal of a planned job, priced for a billing type; `videoId` is the id the processed video gets. */
  private appraisalOf(userId: string, job: PlannedJob, priced: PricedJob & { billingType: BillingType }, videoId: string, now: Date): AppraisalRecord {
    const { plan, estimate } = job;
    const gb = estimate.outputBytes / 1e9;
    // What storage billing charges for the output kept one month (the same price and rounding).
    const storage = priceStorage(this.ledger.prices, gb);
    const download = this.ledger.estimateUtility({ productName: 'Download', category: 'DOWNLOAD_HTTPS', amount: gb });
    const appraisal: JobAppraisal = {
      billingType: priced.billingType,
      estimation: { fileSize: Math.round(estimate.outputBytes), totalComputeTimeSeconds: Math.max(1, Math.ceil(estimate.computeSeconds)) },
      outputDurationMillis: plan.output.durationMs,
      products: priced.products,
      discountPercentage: priced.discountPercentage,
      costMicros: priced.costMicros,
      normalCostMicros: priced.normalCostMicros,
      discountMicros: priced.discountMicros,
      costCredits: priced.costCredits,
      storage: { costMicros: storage.costMicros, costCredits: storage.costCredits },
      download: { costMicros: download.costMicros, costCredits: download.costCredits },
      charge: job.charge,
      notes: plan.applied.notes.map(({ field, requested, appliedAs, note }) => ({ field, requested, appliedAs, note })),
      appliedOptions: appliedOptionsOf(plan),
    };
    return {
      id: randomUUID(),
      teamId: job.source.teamId,
      userId,
      sourceVideoId: job.source.id,
      videoId,
      configurationId: job.configurationId,
      options: { ...job.options },
      startMs: job.range.startMs,
      endMs: job.range.endMs,
      billingType: priced.billingType,
      appraisal: appraisal as unknown as Record<string, unknown>,
      fileExtension: plan.fileExtension,
      expiresAt: new Date(now.getTime() + APPRAISAL_TTL_MS),
      createdAt: now,
    };
  }

  /**
   * The job's charge, idempotent by the processed video's id, in the caller's transaction. The
   * ledger checks the wallet's cover under the team lock (409 INSUFFICIENT_PROJECTED_BALANCE_ERROR,
   * rolling back the caller's writes too): a balance read here, before that lock, would let
   * accepts at once all pass on the same money.
   */
  private chargeFor(trx: Knex, source: Video, videoId: string, products: ProductUse[]): ReturnType<LedgerService['charge']> {
    return this.ledger.within(trx).charge(source.teamId, { jobId: videoId, videoId, sourceVideoId: source.id, products, reason: `Processing of ${source.name}` });
  }

  /** The processed video an accepted appraisal describes (`processing` INITIAL, full ingestion) and its job, written in the caller's transaction. */
  private async createProcessedVideo(trx: Knex, userId: string, a: AppraisalRecord, source: Video, names: NewVideoNames, now: Date): Promise<Video> {
    const video: Video = { ...this.newVideo(a, source, names, now), userId };
    await this.stage.create(trx, {
      id: video.id,
      kind: 'PROCESSED',
      teamId: video.teamId,
      projectId: video.projectId,
      userId,
      name: video.name,
      description: video.description,
      masterVideoId: video.masterVideoId,
      sourceVideoId: source.id,
      clipId: video.clipId,
      fullIngestion: true,
      processing: { startMs: a.startMs, endMs: a.endMs, options: a.options, appliedOptions: appliedOf(a), appraisal: a.appraisal },
      createdAt: now,
    });
    await PROCESS_JOB.enqueue(this.jobs, trx, { videoId: video.id });
    return video;
  }

  /** The processing state of a processed video (404 for a video not made by processing). */
  async status(userId: string, videoId: string): Promise<Video> {
    const v = await findVideoInScope(this.db, videoId, { memberUserId: userId });
    if (!v || !v.processing) throw new NotFoundError('Video not found, or not made by processing');
    return v;
  }

  /** Removes appraisals that expired more than a day ago (the periodic sweep). */
  async sweepAppraisals(): Promise<number> {
    return appraisalsStore.deleteExpiredBefore(this.db, new Date(this.clock.now().getTime() - 24 * 3600_000));
  }

  /** The processing stage of videos. */
  get stage(): VideoStage<'processing'> {
    return new VideoStage(this.db, this.clock, 'processing');
  }

  /** Refunds a processed video whose result could not be ingested (an ingestion failure listener). */
  readonly refundFailedIngestion = async (trx: Knex, video: Video): Promise<void> => {
    if (video.kind !== 'PROCESSED') return;
    await this.ledger.within(trx).refund(video.teamId, video.id, 'PROCESSED_VIDEO_INGESTION_FAILED', video.ingestion?.error?.message);
  };

  /**
   * `video.process` (processing.jobs.ts): the engine on the source, then ingestion of the result;
   * the processing stage moves INITIAL -> IN_PROGRESS -> DONE | FAILED (FAILED refunds the charge).
   */
  readonly runProcess: JobHandler<{ videoId: string }> = async ({ videoId }, ctx) => {
    const video = await findVideo(this.db, videoId);
    if (!video?.processing || !video.sourceVideoId) return;
    if (video.processing.status === 'DONE' || video.processing.status === 'FAILED') return;
    const source = await findVideo(this.db, video.sourceVideoId);
    const events = processingEvents(source);
    const stage = this.stage;
    await stage.start(videoId, events.started);
    if (!(await this.sourceAvailable(videoId, source))) return;
    const eta = new ProgressEta({ label: 'processing' });
    eta.observe(0);
    const attempt = {
      binaries: this.binaries,
      engine: this.engine,
      progress: () => writeProgress(eta, (e) => stage.progress(videoId, e)),
      failed: (err: unknown) => this.failAfterAttempt(videoId, err, ctx),
    };
    await processingAttempt(ctx, attempt, async ({ dir, bins, progress }) => {
      const probe = probeOf(source!);
      const range = rangeOf(video, probe);
      const plan: EnginePlan = this.engine.plan(video.processing?.options ?? {}, probe, range);
      await this.stage.recordApplied(videoId, appliedOptionsOf(plan) as unknown as Record<string, unknown>);
      const segments = this.engine.segmentsOf(plan);
      if (segments) {
        // Split: the segment jobs (any worker) and then the join finish it (segmented-processing.ts).
        await progress.stop();
        await this.segmented.split(videoId, segments);
        return;
      }
      const out = path.join(dir, `output${plan.fileExtension}`);
      await withLocalFile(this.blobs, source!.blobKey!, dir, (file) =>
        this.engine.run(bins, file, out, plan, {
          durationMs: range.endMs - range.startMs,
          signal: ctx.signal,
          timeoutMs: this.timeoutMs,
          onProgress: (p) => eta.observe(p.percentage / 100),
        }),
      );
      await progress.stop();
      await this.finish(videoId, source, plan, out, ctx.signal);
      eta.finish();
    });
  };

  /** The source still has its file; otherwise the processing is FAILED (SOURCE_VIDEO_NOT_AVAILABLE) and false. */
  async sourceAvailable(videoId: string, source: Video | undefined): Promise<boolean> {
    if (source?.blobKey && (await this.blobs.stat(source.blobKey))) return true;
    await this.stage.whenIn(videoId, ['IN_PROGRESS'], (trx, v) => this.fail(trx, v, stageError('processing', 'SOURCE_VIDEO_NOT_AVAILABLE')));
    return false;
  }

  /**
   * After a failed attempt of a processing job (the whole job, a segment, the join): rethrown for
   * the queue to run it again while that may help, else the processing is FAILED and refunded.
   */
  async failAfterAttempt(videoId: string, err: unknown, ctx: JobContext): Promise<void> {
    if (ctx.signal.aborted) throw err;
    if (retriesLeft(ctx, !(err instanceof DomainError))) throw err;
    const error = mediaStageError('processing', err);
    ctx.log.warn({ videoId, code: error.code, err }, 'processing failed');
    await this.stage.whenIn(videoId, ['IN_PROGRESS'], (trx, v) => this.fail(trx, v, error));
  }

  /**
   * The output file in platform storage and the processing DONE with its event, ingestion begun
   * and storage sampled, in one transaction. `source` is the source as the job read it (only its
   * kind is used, for the event's name: it does not change).
   */
  async finish(videoId: string, source: Video | undefined, plan: EnginePlan, out: string, signal: AbortSignal): Promise<void> {
    const key = `videos/${videoId}/file`;
    const stored = await storeFile(this.blobs, key, out, { signal });
    const { mtime } = await stat(out);
    await this.stage.whenIn(videoId, ['IN_PROGRESS'], async (trx, v, now) => {
      const file = { name: fileNameFrom(v.name, plan.fileExtension), size: stored.size, type: plan.mimeType, containerName: plan.container, lastModified: mtime };
      await this.stage.recordFile(trx, videoId, { blobKey: key, crc32c: stored.crc32c, size: stored.size, file }, now);
      await this.stage.done(trx, v, processingEvents(source).done, now);
      await this.ingestion.begin(trx, { ...v, blobKey: key });
      await new StorageMeters(trx).sample(v.teamId, now);
    });
  }

  /** FAILED with its event, and the charge given back (after the commit), in the caller's transaction. */
  async fail(trx: Knex, v: Video, error: StageError): Promise<void> {
    const now = this.clock.now();
    const source = v.sourceVideoId ? await findVideo(trx, v.sourceVideoId) : undefined;
    await this.stage.failed(trx, v, error, processingEvents(source).failed, now);
    await this.ledger.within(trx).refund(v.teamId, v.id, 'PROCESSING_FAILED', `${error.code}: ${error.message}`);
  }

  /** A video the user may process: visible, stored, and its metadata read (409 otherwise). */
  private async processable(userId: string, videoId: string): Promise<Video> {
    const v = await findVideoInScope(this.db, videoId, { memberUserId: userId });
    if (!v) throw new NotFoundError('Video not found');
    if (!v.blobKey || !v.ingestion?.metadataAvailable || !v.ingestion.probe) {
      throw new ConflictError('VIDEO_NOT_FULLY_INGESTED', `Video ${videoId} is not ingested yet (its data and metadata must be in the platform before processing)`);
    }
    return v;
  }

  private async optionsOf(userId: string, req: ProcessingRequest): Promise<Record<string, unknown>> {
    if (req.options) return req.options;
    if (!req.confId) throw new BadRequestError('MISSING_REQUEST_BODY', 'Processing options are required');
    return (await this.configurations.get(userId, req.confId)).options;
  }

  /** The processed video an appraisal describes (created at `now`): same team and project, derived from the source's master. */
  private newVideo(a: AppraisalRecord, source: Video, names: NewVideoNames, now = a.createdAt): Video {
    const clipId = source.kind === 'CLIP' ? source.id : source.clipId;
    return {
      id: a.videoId,
      kind: 'PROCESSED',
      teamId: source.teamId,
      projectId: source.projectId,
      userId: a.userId,
      name: (names.videoName ?? `${source.name} (processed)`).slice(0, 255),
      description: names.videoDescription,
      masterVideoId: source.kind === 'MASTER' ? source.id : source.masterVideoId,
      sourceVideoId: source.id,
      clipId,
      isSample: false,
      fullIngestion: true,
      processing: {
        status: 'INITIAL',
        progress: 0,
        updatedAt: now,
        startMs: a.startMs,
        endMs: a.endMs,
        options: a.options,
        ...(appliedOf(a) ? { appliedOptions: appliedOf(a) } : {}),
        appraisal: a.appraisal,
      },
      createdAt: now,
      updatedAt: now,
    };
  }
}

/** What an appraisal planned to apply (absent in appraisals stored before it was recorded). */
function appliedOf(a: AppraisalRecord): Record<string, unknown> | undefined {
  return (a.appraisal as { appliedOptions?: Record<string, unknown> }).appliedOptions;
}

/**
 * startPosMs / endPosMs: start defaults to 0, end to the duration (and is clamped to it).
 * 400 INVALID_START_POSITION when the start leaves less than a second before the end of the
 * source or of `endPosMs`; 400 INVALID_END_POSITION when the end is less than a second after the start.
 */
export function positions(durationMs: number, startPosMs?: number, endPosMs?: number): { startMs: number; endMs: number } {
  const start = startPosMs ?? 0;
  if (endPosMs !== undefined && endPosMs < start + MIN_LENGTH_MS) {
    throw new BadRequestError('INVALID_END_POSITION', `endPosMs must be at least ${MIN_LENGTH_MS} ms after startPosMs (${start})`);
  }
  const end = Math.min(endPosMs ?? durationMs, durationMs);
  if (start > durationMs - MIN_LENGTH_MS || start > end - MIN_LENGTH_MS) {
    throw new BadRequestError(
      'INVALID_START_POSITION',
      `startPosMs ${start} leaves less than ${MIN_LENGTH_MS} ms of the source (duration ${durationMs} ms${endPosMs !== undefined ? `, endPosMs ${endPosMs}` : ''})`,
    );
  }
  return { startMs: start, endMs: end };
}
