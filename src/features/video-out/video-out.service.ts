/**
 * Video out: copying a stored video to a customer's bucket (given in the request or a saved
 * output location), the state of that copy, restarting or abandoning a failed one, and download
 * URLs served by Vidmill itself.
 *
 * A copy is checked completely before the answer (the video's file is stored, no other copy of
 * it is running or failed, the endpoint passes the outbound guard, the bucket answers HeadBucket,
 * the target key is free), then the operation row, the video's `output` state and the
 * `video-out.copy` job are written in one transaction. The copy itself is `video-out.copy` (video-out.jobs.ts).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import express, { Router } from 'express';
import type { Logger } from 'pino';
import type { Db } from '../../db/database';
import { TransactionalService } from '../../db/transactional';
import { sendBlob } from '../../http/blob-responses';
import { sendError } from '../../http/error-mapper';
import type { SignedLinks } from '../../http/signed-links';
import type { JobQueue } from '../../jobs/job-queue';
import { checkBucketEndpoint, OutboundPolicy } from '../../net/outbound-url';
import type { SecretBox } from '../../security/secret-box';
import type { UploadDescriptor } from '../../storage/blob-store';
import { BucketAccess, BucketSettings, checkBucketAccess, checkObjectPresence, ObjectPresence } from '../../storage/bucket-access';
import type { BlobStore } from '../../storage/blob-store';
import type { Clock } from '../../shared/clock';
import { BadRequestError, ConflictError, NotFoundError } from '../../shared/errors';
import type { LedgerService } from '../billing';
import type { LocationsService } from '../locations';
import { VideoOutOperation, videoOutStore } from './video-out.store';
import { storedFileOf, VIDEO_OUT_ABORT_JOB, VIDEO_OUT_COPY_JOB } from './video-out.jobs';
import { findVideo, findVideoInScope, lockVideo, OperationStatus, Video, VideoStage } from '../videos';

export const DEFAULT_DOWNLOAD_MINUTES = 15;
/** S3's longest object key, in UTF-8 bytes. */
export const MAX_OBJECT_KEY_BYTES = 1024;

export interface VideoOutJobPayload {
  videoId: string;
  operationId: string;
}

export interface AbortUploadPayload {
  videoId: string;
  operationId: string;
  sealedBucket: string;
  upload: UploadDescriptor;
}

export interface BillCopyPayload {
  teamId: string;
  videoId: string;
  operationId: string;
  bytes: number;
}

/** Sealing context of a copy's bucket settings: bound to the video and the copy. */
export const outputSealContext = (videoId: string, operationId: string) => `video-out:${videoId}:${operationId}:bucket`;

/** The object key of a copy: prefix, `/`, file name; no doubled `/`, just the name for an empty prefix. */
export function objectKeyFor(prefix: string, fileName: string): string {
  if (prefix === '') return fileName;
  return prefix.endsWith('/') ? prefix + fileName : `${prefix}/${fileName}`;
}

const inFlight = (s: OperationStatus | undefined) => s === 'INITIAL' || s === 'IN_PROGRESS';

const EXTENSION_OF_TYPE: Record<string, string> = {
  'video/mp4': 'mp4',
  'video/x-m4v': 'm4v',
  'video/quicktime': 'mov',
  'application/mxf': 'mxf',
  'video/x-matroska': 'mkv',
  'video/webm': 'webm',
  'video/mp2t': 'ts',
  'video/mpeg': 'mpg',
  'video/x-msvideo': 'avi',
};

export interface VideoDownloadLink {
  videoId: string;
  url: string;
  expiresAt: Date;
  fileSize: number;
  mimeType: string;
  fileExtension: string;
  suggestedFileName: string;
  crc32c?: number;
}

export interface VideoOutDeps {
  db: Db;
  clock: Clock;
  locations: LocationsService;
  jobs: JobQueue;
  secretBox: SecretBox;
  blobs: BlobStore;
  links: SignedLinks;
  ledger: LedgerService;
  /** Which bucket endpoints may be reached (VIDMILL_ALLOW_PRIVATE_URLS). */
  policy: OutboundPolicy;
  /** HeadBucket and HeadObject on the target (tests may replace them). */
  checkAccess?: (settings: BucketSettings) => Promise<BucketAccess>;
  checkObject?: (settings: BucketSettings, key: string) => Promise<ObjectPresence>;
}

const downloadPath = (videoId: string) => `/media/v1/videos/${videoId}/download`;

export class VideoOutService extends TransactionalService {
  private readonly clock: Clock;
  private readonly checkAccess: NonNullable<VideoOutDeps['checkAccess']>;
  private readonly checkObject: NonNullable<VideoOutDeps['checkObject']>;
  /** The outbound policy the copy jobs' bucket clients connect under. */
  readonly policy: OutboundPolicy;
  /** The output stage of videos (the copy jobs move it too). */
  readonly output: VideoStage<'output'>;

  constructor(private readonly deps: VideoOutDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.policy = deps.policy;
    this.output = new VideoStage(deps.db, deps.clock, 'output');
    this.checkAccess = deps.checkAccess ?? ((s) => checkBucketAccess(s, deps.policy));
    this.checkObject = deps.checkObject ?? ((s, k) => checkObjectPresence(s, k, deps.policy));
  }

  /** Starts a copy to a bucket given with its credentials. */
  copyToBucket(userId: string, videoId: string, input: { objectKeyPrefix: string; bucket: BucketSettings }): Promise<Video> {
    return this.startCopy(userId, videoId, input.objectKeyPrefix, async () => ({ kind: 'BUCKET', bucket: input.bucket }));
  }

  /** Starts a copy to the bucket of a saved output location (of the video's team; 404 otherwise). */
  copyToOutputLocation(userId: string, videoId: string, outputLocationId: string, input: { objectKeyPrefix: string }): Promise<Video> {
    return this.startCopy(userId, videoId, input.objectKeyPrefix, async (video) => {
      const location = await this.deps.locations.get(userId, 'output', outputLocationId);
      if (location.teamId !== video.teamId) throw new NotFoundError(`Output location ${outputLocationId} not found in the team of video ${video.id}`);
      return { kind: 'OUTPUT_LOCATION', outputLocationId, bucket: await this.deps.locations.bucketSettings(userId, 'output', outputLocationId) };
    });
  }

  /** The video, which must be visible to the user (404 otherwise). */
  async status(userId: string, videoId: string): Promise<Video> {
    return this.visible(userId, videoId);
  }

  /**
   * Resumes a FAILED copy with the same multipart upload (409 VIDEO_OUT_OPERATION_NOT_FAILED
   * otherwise). A copy to an output location takes the location's current settings, so fixing
   * the location's credentials and restarting is how a refused copy is repaired.
   */
  async restart(userId: string, videoId: string): Promise<Video> {
    const visible = await this.visible(userId, videoId);
    const op = await videoOutStore.byVideoId(this.db, videoId);
    let resealed: string | undefined;
    let settings: BucketSettings | undefined;
    if (op?.targetKind === 'OUTPUT_LOCATION' && op.outputLocationId) {
      settings = await this.deps.locations.bucketSettings(userId, 'output', op.outputLocationId).catch((err) => {
        if (err instanceof NotFoundError) return undefined; // the location is gone: keep the settings the copy had
        throw err;
      });
      if (settings) resealed = this.deps.secretBox.seal(JSON.stringify(settings), outputSealContext(videoId, op.id));
    }
    // The bucket the restarted copy will use passes the outbound guard (it may predate the rule).
    if (op && visible.output?.status === 'FAILED') await checkBucketEndpoint((settings ?? this.bucketOf(op)).endpoint, this.policy);
    await this.transactional(async (trx) => {
      const video = await lockVideo(trx, videoId);
      if (!video) throw new NotFoundError('Video not found');
      const current = await videoOutStore.byVideoId(trx, videoId);
      if (video.output?.status !== 'FAILED' || !current) throw notFailed(videoId, video.output?.status, 'restarted');
      const now = this.clock.now();
      await videoOutStore.restart(trx, videoId, now);
      if (resealed && current.id === op?.id) {
        if (!sameBucket(this.bucketOf(current), JSON.parse(this.deps.secretBox.open(resealed, outputSealContext(videoId, current.id))) as BucketSettings)) {
          // The location now names another bucket: the upload there is released, the copy starts over.
          await this.releaseUpload(trx, current);
          await videoOutStore.setUpload(trx, videoId, current.id, null, now);
          await videoOutStore.forgetParts(trx, videoId);
        }
        await videoOutStore.setSealedBucket(trx, videoId, current.id, resealed, now);
      }
      await this.output.reset(trx, videoId, { status: 'IN_PROGRESS', etaSeconds: null, error: null }, now);
      await VIDEO_OUT_COPY_JOB.enqueue(this.deps.jobs, trx, { videoId, operationId: current.id });
    });
    return this.visible(userId, videoId);
  }

  /**
   * Gives up a FAILED copy (409 VIDEO_OUT_OPERATION_NOT_FAILED otherwise): the operation row and
   * the video's output state go, and a durable job aborts the multipart upload in the bucket.
   */
  async abandon(userId: string, videoId: string): Promise<void> {
    await this.visible(userId, videoId);
    await this.transactional(async (trx) => {
      const video = await lockVideo(trx, videoId);
      if (!video) throw new NotFoundError('Video not found');
      if (video.output?.status !== 'FAILED') throw notFailed(videoId, video.output?.status, 'abandoned');
      const op = await videoOutStore.byVideoId(trx, videoId);
      if (op) await this.releaseUpload(trx, op);
      await videoOutStore.delete(trx, videoId);
      await this.output.clearOutput(trx, videoId, this.clock.now());
    });
  }

  /**
   * Called in the transaction that deletes videos (VideosService.onRemove, bound with
   * `within(trx)`): their copies go, and the unfinished multipart uploads of those copies are
   * aborted by a job.
   */
  async onVideosRemoved(videoIds: readonly string[]): Promise<void> {
    for (const op of await videoOutStore.ofVideos(this.db, videoIds)) await this.releaseUpload(this.db, op);
  }

  /** A signed, expiring download URL for the video's file (409 VIDEO_PROCESSING_NOT_DONE while it is not stored). */
  async downloadUrl(userId: string, videoId: string, minutes = DEFAULT_DOWNLOAD_MINUTES): Promise<VideoDownloadLink> {
    const video = await this.visible(userId, videoId);
    const file = requireStored(video);
    // The link carries whole seconds; the answer says the same instant.
    const expiresAt = new Date(Math.floor((this.clock.now().getTime() + minutes * 60_000) / 1000) * 1000);
    const named = path.extname(file.name).slice(1);
    const fileExtension = named || EXTENSION_OF_TYPE[file.type.toLowerCase()] || 'bin';
    return {
      videoId,
      url: this.deps.links.sign(downloadPath(videoId), expiresAt),
      expiresAt,
      fileSize: file.size,
      mimeType: file.type,
      fileExtension,
      suggestedFileName: named ? file.name : `${file.name}.${fileExtension}`,
      crc32c: file.crc32c,
    };
  }

  /** GET/HEAD /media/v1/videos/:videoId/download?expires=..&signature=.. (no API key: the signature is the credential). */
  routes(log?: Logger): Router {
    const router = express.Router();
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
    router.get('/media/v1/videos/:videoId/download', async (req, res, next) => {
      const { videoId } = req.params;
      let sent = 0;
      let video: Video | undefined;
      try {
        if (!uuid.test(videoId)) return sendError(req, res, 404, 'NOT_FOUND', 'No such video');
        const verdict = this.deps.links.verify(downloadPath(videoId), req.query.expires, req.query.signature, this.clock.now());
        if (verdict === 'invalid') return sendError(req, res, 403, 'ACCESS_DENIED', 'The link signature is not valid');
        if (verdict === 'expired') return sendError(req, res, 403, 'ACCESS_DENIED', 'The link has expired; ask POST /v1/videos/{videoId}/out/https for a new one');
        video = await findVideo(this.db, videoId);
        const file = storedFileOf(video);
        if (!file) return sendError(req, res, 404, 'NOT_FOUND', 'The video no longer exists or its file is not available');
        const etag = file.crc32c !== undefined ? `"${file.crc32c.toString(16)}-${file.size.toString(16)}"` : `"${videoId}"`;
        sent = await sendBlob(req, res, this.deps.blobs, { key: file.key, size: file.size, contentType: file.type, fileName: file.name, etag, disposition: 'attachment' });
      } catch (err) {
        sent = (err as { bytesSent?: number }).bytesSent ?? sent;
        if (res.headersSent) res.destroy(err as Error);
        else next(err);
      } finally {
        if (sent > 0 && video) {
          const usage = { teamId: video.teamId, videoId, bytes: sent, servedAt: this.clock.now() };
          await videoOutStore.recordDownload(this.db, usage).catch((err) => log?.error({ err, ...usage }, 'video out: could not record served download bytes'));
        }
      }
    });
    return router;
  }

  /**
   * Accrues the bytes served by download URLs to billing (DOWNLOAD_HTTPS, in GB): one ledger
   * entry per team, video and batch. Idempotent per batch, so a crash between the ledger and the
   * mark only makes the next run find the entry already there. Run periodically by main.ts.
   */
  async billDownloads(): Promise<{ batches: number; bytes: number }> {
    await videoOutStore.gatherDownloadBatches(this.db);
    let batches = 0;
    let bytes = 0;
    const failures: unknown[] = [];
    for (const b of await videoOutStore.unbilledBatches(this.db)) {
      try {
        await this.deps.ledger.accrueUtility(b.teamId, {
          jobId: `download-https:${b.batchId}`,
          videoId: b.videoId,
          product: { productName: 'Download (HTTPS)', category: 'DOWNLOAD_HTTPS', amount: b.bytes / 1e9 },
        });
        await videoOutStore.markBatchBilled(this.db, b.batchId, this.clock.now());
        batches++;
        bytes += b.bytes;
      } catch (err) {
        failures.push(err);
      }
    }
    if (failures.length) throw new AggregateError(failures, `${failures.length} download batch(es) could not be billed; they are retried on the next run`);
    return { batches, bytes };
  }

  /** Accrues the bytes of a finished copy (job `video-out.bill`), idempotent per copy. */
  async billCopy(p: BillCopyPayload): Promise<void> {
    await this.deps.ledger.accrueUtility(p.teamId, {
      jobId: `video-out:${p.operationId}`,
      videoId: p.videoId,
      product: { productName: 'Download (bucket)', category: 'DOWNLOAD_S3', amount: p.bytes / 1e9 },
    });
  }

  /** The bucket settings of a copy, unsealed. */
  bucketOf(op: Pick<VideoOutOperation, 'videoId' | 'id' | 'sealedBucket'>): BucketSettings {
    return JSON.parse(this.deps.secretBox.open(op.sealedBucket, outputSealContext(op.videoId, op.id))) as BucketSettings;
  }

  private async startCopy(
    userId: string,
    videoId: string,
    prefix: string,
    target: (video: Video) => Promise<{ kind: 'BUCKET' | 'OUTPUT_LOCATION'; bucket: BucketSettings; outputLocationId?: string }>,
  ): Promise<Video> {
    const video = await this.visible(userId, videoId);
    const file = requireStored(video);
    assertNoCopyRunning(video);
    const { kind, bucket, outputLocationId } = await target(video);
    const objectKey = objectKeyFor(prefix, file.name);
    if (Buffer.byteLength(objectKey, 'utf8') > MAX_OBJECT_KEY_BYTES) {
      throw new BadRequestError('INVALID_INPUT', `The object key "${objectKey.slice(0, 64)}..." would be longer than ${MAX_OBJECT_KEY_BYTES} bytes; use a shorter objectKeyPrefix`, {
        validationErrors: [{ field: 'body.objectKeyPrefix', message: `prefix, "/" and the file name must fit in ${MAX_OBJECT_KEY_BYTES} bytes` }],
      });
    }
    // A stored output location is checked again: it may predate the rule or the policy.
    await checkBucketEndpoint(bucket.endpoint, this.policy);
    const access = await this.checkAccess(bucket);
    if (access.outcome === 'bucket-not-found') throw new NotFoundError(access.message, 'BUCKET_NOT_FOUND');
    if (access.outcome === 'endpoint-not-allowed') throw new BadRequestError('INVALID_BUCKET_ENDPOINT', access.message);
    if (access.outcome === 'refused') throw new BadRequestError('HEAD_BUCKET_ERROR', access.message);
    const presence = await this.checkObject(bucket, objectKey);
    if (presence.outcome === 'exists') {
      throw new ConflictError('OBJECT_ALREADY_EXISTS', `Object "${objectKey}" already exists in bucket "${bucket.bucket}"; choose another objectKeyPrefix or delete the object`);
    }
    if (presence.outcome === 'endpoint-not-allowed') throw new BadRequestError('INVALID_BUCKET_ENDPOINT', presence.message);
    if (presence.outcome === 'refused') throw new BadRequestError('HEAD_OBJECT_ERROR', presence.message);

    const operationId = randomUUID();
    await this.transactional(async (trx) => {
      const locked = await lockVideo(trx, videoId);
      if (!locked) throw new NotFoundError('Video not found');
      requireStored(locked);
      assertNoCopyRunning(locked);
      const now = this.clock.now();
      await videoOutStore.replace(trx, {
        videoId,
        id: operationId,
        targetKind: kind,
        outputLocationId,
        sealedBucket: this.deps.secretBox.seal(JSON.stringify(bucket), outputSealContext(videoId, operationId)),
        objectKey,
        size: file.size,
        contentType: file.type,
        createdAt: now,
      });
      await this.output.reset(trx, videoId, { status: 'INITIAL', progress: 0, etaSeconds: null, error: null }, now);
      await VIDEO_OUT_COPY_JOB.enqueue(this.deps.jobs, trx, { videoId, operationId });
    });
    return (await findVideo(this.db, videoId))!;
  }

  /** Enqueues the abort of a copy's multipart upload when it may still hold parts. */
  private async releaseUpload(trx: Db, op: VideoOutOperation): Promise<void> {
    if (!op.upload) return;
    const payload: AbortUploadPayload = { videoId: op.videoId, operationId: op.id, sealedBucket: op.sealedBucket, upload: op.upload };
    await VIDEO_OUT_ABORT_JOB.enqueue(this.deps.jobs, trx, payload);
  }

  /** The video when it belongs to a team the user is a member of (else 404, never 403). */
  private async visible(userId: string, videoId: string): Promise<Video> {
    const video = await findVideoInScope(this.db, videoId, { memberUserId: userId });
    if (!video) throw new NotFoundError('Video not found');
    return video;
  }
}

function sameBucket(a: BucketSettings, b: BucketSettings): boolean {
  return a.bucket === b.bucket && (a.endpoint ?? '') === (b.endpoint ?? '') && (a.region ?? '') === (b.region ?? '');
}

function requireStored(video: Video): NonNullable<ReturnType<typeof storedFileOf>> {
  const file = storedFileOf(video);
  if (file) return file;
  const stage = video.kind === 'MASTER' ? `its copy into the platform is ${video.upload?.status ?? 'not started'}` : `its processing is ${video.processing?.status ?? 'not started'}`;
  throw new ConflictError('VIDEO_PROCESSING_NOT_DONE', `The file of video ${video.id} is not stored yet: ${stage}`);
}

function assertNoCopyRunning(video: Video): void {
  const status = video.output?.status;
  if (inFlight(status)) {
    throw new ConflictError('VIDEO_ALREADY_BEING_COPIED_TO_OUTPUT_LOCATION', `Video ${video.id} is already being copied out (${status}); wait for that copy to finish`);
  }
  if (status === 'FAILED') {
    throw new ConflictError(
      'ONGOING_COPY_TO_OUTPUT_NEEDS_TO_BE_RESTARTED_OR_ABANDONED',
      `The last copy of video ${video.id} failed; restart it (POST .../out/restart) or abandon it (DELETE .../out/abandon) first`,
    );
  }
}

function notFailed(videoId: string, status: OperationStatus | undefined, what: string): ConflictError {
  return new ConflictError(
    'VIDEO_OUT_OPERATION_NOT_FAILED',
    status ? `The copy of video ${videoId} out of the platform is ${status}; only a FAILED copy can be ${what}` : `Video ${videoId} has no copy out of the platform to be ${what}`,
  );
}
