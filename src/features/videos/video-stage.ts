/**
 * One stage of a video (upload = video in, ingestion, processing = the clip's cut or a processing
 * job, output = video out) moved from state to state. Every move the spec names writes its
 * webhook event (`recordEvent`) in the transaction of the change, and only when the stage is
 * still in the state the caller expects, so a job run twice writes each change and event once.
 *
 * The stage is also the only writer of video rows outside this feature: the row a stage's work
 * creates (`create`: an upload, a processing, the free clip's cut), the file it produced
 * (`recordFile`), what ingestion learnt (`recordFacts`), what processing applied and showed
 * (`recordApplied`, `recordSourceRange`), the output given up (`clearOutput`). Each is typed to
 * the stages that write it (a `this` parameter), so ingestion cannot record a processing's options.
 */
import type { Knex } from 'knex';
import type { Db } from '../../db/database';
import { TransactionalService } from '../../db/transactional';
import type { JobContext } from '../../jobs/worker';
import type { Clock } from '../../shared/clock';
import { recordEvent } from '../webhooks';
import { IngestionUpdate, NewVideo, OperationStatus, progressUpdate, StageError, StoredVideoFile, Video, videosStore } from './videos.store';

export type VideoStageName = 'upload' | 'ingestion' | 'processing' | 'output';

/** A change of a stage's common columns that records no event (a restart, a new copy, the start of ingestion). */
export interface StageReset {
  status: 'INITIAL' | 'IN_PROGRESS';
  progress?: number;
  etaSeconds?: number | null;
  error: null;
}

/** Which states a move starts from: a list, or a check of the locked video (in the transaction). */
export type StageGuard = readonly OperationStatus[] | ((v: Video, trx: Knex) => boolean | Promise<boolean>);

type Update = { status?: OperationStatus; progress?: number; etaSeconds?: number | null; error?: StageError | null; bytes?: number };

const WRITE: Record<VideoStageName, (db: Knex, id: string, u: Update, now: Date) => Promise<void>> = {
  upload: (db, id, u, now) => videosStore.updateUpload(db, id, u, now),
  ingestion: (db, id, u, now) => videosStore.updateIngestion(db, id, u, now),
  processing: (db, id, u, now) => videosStore.updateProcessing(db, id, u, now),
  output: (db, id, u, now) => videosStore.updateOutput(db, id, u, now),
};

/** The time left a DONE stage shows: none for the copies, zero for the media stages. */
const DONE_ETA: Record<VideoStageName, number | null> = { upload: null, ingestion: 0, processing: 0, output: null };

/** What ingestion learnt of a video (metadata, the assets available, quality); the stage's state is written by the moves. */
export type IngestionFacts = Omit<IngestionUpdate, 'status' | 'progress' | 'etaSeconds' | 'error'>;

/**
 * A stage of videos over the `Db` it is built on (the pool, or a caller's transaction: `whenIn`
 * is then a savepoint of it).
 */
export class VideoStage<S extends VideoStageName = VideoStageName> extends TransactionalService {
  constructor(
    db: Db,
    private readonly clock: Clock,
    readonly stage: S,
  ) {
    super(db);
  }

  /** A new video whose work begins with this stage (video in's upload, a processing, the free clip's cut), in the caller's transaction. */
  async create(this: VideoStage<'upload' | 'processing'>, trx: Knex, v: NewVideo): Promise<void> {
    await videosStore.insert(trx, v);
  }

  /** The file this stage produced (a copy in, a processed video, a clip), in the caller's transaction. */
  async recordFile(this: VideoStage<'upload' | 'processing'>, trx: Knex, id: string, stored: StoredVideoFile, now: Date): Promise<void> {
    await videosStore.setStored(trx, id, stored, now);
  }

  /** What ingestion learnt of a video, as soon as it knows it (each fact on its own: a reader sees it before the stage is DONE). */
  async recordFacts(this: VideoStage<'ingestion'>, id: string, facts: IngestionFacts): Promise<void> {
    await videosStore.updateIngestion(this.db, id, facts, this.clock.now());
  }

  /** What a processing job applies, once it has planned (replaces what the appraisal planned). */
  async recordApplied(this: VideoStage<'processing'>, id: string, appliedOptions: Record<string, unknown>): Promise<void> {
    await videosStore.updateProcessing(this.db, id, { appliedOptions }, this.clock.now());
  }

  /**
   * The source range a derived video really shows (`processing.sourceVideo`), in whole
   * milliseconds rounded down: the time of its first frame, and of the source frame after its last
   * (a range read again from these gives the same frames: from the first at or after its start,
   * up to the last that starts before its end). In the caller's transaction.
   */
  async recordSourceRange(this: VideoStage<'processing'>, trx: Knex, id: string, range: { startMs: number; endMs: number }, now: Date): Promise<void> {
    await videosStore.updateProcessing(trx, id, { range: { startMs: Math.floor(range.startMs + 1e-6), endMs: Math.floor(range.endMs + 1e-6) } }, now);
  }

  /** No copy out any more (a failed one was abandoned): the video shows no `output`. In the caller's transaction. */
  async clearOutput(this: VideoStage<'output'>, trx: Knex, id: string, now: Date): Promise<void> {
    await videosStore.clearOutput(trx, id, now);
  }

  /**
   * Runs `fn` in a transaction with the video locked, only when the stage passes `from`
   * (a video that is gone or whose stage moved meanwhile is left alone). True when `fn` ran.
   */
  async whenIn(videoId: string, from: StageGuard, fn: (trx: Knex, v: Video, now: Date) => Promise<void>): Promise<boolean> {
    return this.transactional(async (trx) => this.whenInWithin(trx, videoId, from, fn));
  }

  /** `whenIn` in the caller's transaction (the lease sweep's give-up handlers). */
  async whenInWithin(trx: Knex, videoId: string, from: StageGuard, fn: (trx: Knex, v: Video, now: Date) => Promise<void>): Promise<boolean> {
    const v = await videosStore.byIdForUpdate(trx, videoId);
    if (!v || !(await this.passes(v, from, trx))) return false;
    await fn(trx, v, this.clock.now());
    return true;
  }

  /** INITIAL -> IN_PROGRESS with its `*.started` event, once. */
  start(videoId: string, event: string): Promise<boolean> {
    return this.whenIn(videoId, ['INITIAL'], (trx, v, now) => this.started(trx, v, event, now));
  }

  /** IN_PROGRESS and its event, in the caller's transaction. */
  async started(trx: Knex, v: Video, event: string, now: Date): Promise<void> {
    await WRITE[this.stage](trx, v.id, { status: 'IN_PROGRESS' }, now);
    await recordEvent(trx, { teamId: v.teamId, eventType: event, videoId: v.id, occurredAt: now });
  }

  /** DONE (progress 100, no error) and its event, in the caller's transaction. */
  async done(trx: Knex, v: Video, event: string, now: Date): Promise<void> {
    await WRITE[this.stage](trx, v.id, { status: 'DONE', progress: 100, etaSeconds: DONE_ETA[this.stage], error: null }, now);
    await recordEvent(trx, { teamId: v.teamId, eventType: event, videoId: v.id, occurredAt: now });
  }

  /** FAILED with its error, and its event carrying the error, in the caller's transaction. */
  async failed(trx: Knex, v: Video, error: StageError, event: string, now: Date): Promise<void> {
    await WRITE[this.stage](trx, v.id, { status: 'FAILED', etaSeconds: null, error }, now);
    await recordEvent(trx, { teamId: v.teamId, eventType: event, videoId: v.id, occurredAt: now, error });
  }

  /** Back to INITIAL or IN_PROGRESS with the error cleared, no event (a restart, a new copy, ingestion's start). */
  async reset(trx: Knex, videoId: string, to: StageReset, now: Date): Promise<void> {
    await WRITE[this.stage](trx, videoId, to, now);
  }

  /**
   * Writes a running stage's progress and time left as estimated (src/shared/progress-eta.ts):
   * under 100 % until DONE. The output's progress is written only while the copy runs.
   */
  async progress(videoId: string, e: { fraction: number; etaSeconds?: number; bytes?: number }): Promise<void> {
    // Bytes received are kept by the upload stage only (video in's `bytesTransferred`).
    const u = { ...progressUpdate(e), ...(this.stage === 'upload' && e.bytes !== undefined ? { bytes: e.bytes } : {}) };
    if (this.stage === 'output') await videosStore.updateOutputProgress(this.db, videoId, u, this.clock.now());
    else await WRITE[this.stage](this.db, videoId, u, this.clock.now());
  }

  /** The progress (and bytes received) of a running stage, in the caller's transaction (after a `whenIn` guard). */
  async progressWithin(trx: Knex, videoId: string, e: { fraction: number; etaSeconds?: number; bytes?: number }, now: Date): Promise<void> {
    const u = { ...progressUpdate(e), ...(this.stage === 'upload' && e.bytes !== undefined ? { bytes: e.bytes } : {}) };
    await WRITE[this.stage](trx, videoId, u, now);
  }

  private async passes(v: Video, from: StageGuard, trx: Knex): Promise<boolean> {
    if (typeof from === 'function') return from(v, trx);
    const status = v[this.stage]?.status;
    return status !== undefined && from.includes(status);
  }
}

/** The states of a stage whose job is still to finish: what a give-up marks FAILED. */
export const RUNNING: readonly OperationStatus[] = ['INITIAL', 'IN_PROGRESS'];

/**
 * The retry decision of a stage's job after a failed attempt (its lease held): the queue runs
 * it again (the caller rethrows) when the failure may pass and attempts are left; otherwise the
 * failure is final and the caller records the stage FAILED.
 */
export function retriesLeft(ctx: JobContext, transient: boolean): boolean {
  return transient && ctx.job.attempts < ctx.job.maxAttempts;
}
