/**
 * Video in: creating a master video from an HTTPS URL or a bucket object, the state of its copy
 * into the platform, and restarting or abandoning a failed copy. The create probes the source
 * first (every unusable source is a 4xx before anything is written), then writes the video, its
 * copy operation and the copy job in one transaction. The copy itself is `video-in.copy`
 * (video-in.jobs.ts).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Db } from '../../db/database';
import type { JobQueue } from '../../jobs/job-queue';
import type { SourceInfo } from '../../net/https-range-source';
import type { SecretBox } from '../../security/secret-box';
import type { BucketSettings } from '../../storage/bucket-access';
import type { Clock } from '../../shared/clock';
import { BadRequestError, ConflictError, NotFoundError } from '../../shared/errors';
import type { TusStorage } from '../../storage/tus-storage';
import type { AccountsService } from '../accounts';
import type { LocationsService } from '../locations';
import type { ProjectsService } from '../projects';
import { MAX_VIDEO_BYTES, VideoInSources, SourceSpec } from './video-in-sources';
import { VideoInOperation, videoInStore } from './video-in.store';
import { videoFileFromSource } from './video-file-info';
import type { VideosService } from '../videos';
import { derivedVideoIds, findVideo, findVideoInScope, lockVideo, RUNNING, stageError, Video, VideoEvents, VideoStage } from '../videos';
import { TransactionalService } from '../../db/transactional';
import { VIDEO_IN_COPY_JOB, VIDEO_IN_UPLOAD_FINISH_JOB, videoFileKey } from './video-in.jobs';

export const DEFAULT_MAX_CONNECTIONS = 10;

export interface CreateVideoInput {
  selectTeamId?: string;
  name: string;
  description?: string;
  projectId?: string;
  fileName?: string;
  fullIngestion: boolean;
}

export interface CopyJobPayload {
  videoId: string;
}

/** Sealing context of a copy's bucket settings: bound to the video, useless elsewhere. */
export const bucketSealContext = (videoId: string) => `video-in:${videoId}:bucket`;

export interface VideoInServiceDeps {
  db: Db;
  clock: Clock;
  accounts: AccountsService;
  locations: LocationsService;
  videos: VideosService;
  jobs: JobQueue;
  secretBox: SecretBox;
  sources: VideoInSources;
  projects: ProjectsService;
  /** Direct uploads: where their bytes wait, how their URLs are signed, and how long a session lasts. */
  uploads: TusStorage;
  links: UploadLinkSigner;
  uploadExpiryMs: number;
}

/** Signs and checks upload URLs (src/http/signed-links.ts). */
export interface UploadLinkSigner {
  token(path: string, expiresAt: Date): string;
  verifyToken(path: string, token: unknown, now: Date): 'valid' | 'expired' | 'invalid';
  absolute(path: string): URL;
}

/** The tus path of a direct upload (under the public URL). */
export const TUS_PATH = '/tus/uploads';
export const uploadPath = (uploadId: string) => `${TUS_PATH}/${uploadId}`;
/** The tus upload id of a video: its id without dashes (32 hex digits). */
export const uploadIdOf = (videoId: string) => videoId.replace(/-/g, '');

export interface UploadSession {
  video: Video;
  uploadUrl: string;
  size: number;
  expiresAt: Date;
}

export class VideoInService extends TransactionalService {
  private readonly clock: Clock;
  private readonly accounts: AccountsService;
  private readonly locations: LocationsService;
  private readonly videos: VideosService;
  private readonly jobs: JobQueue;
  private readonly secretBox: SecretBox;
  readonly sources: VideoInSources;
  private readonly projects: ProjectsService;
  readonly uploads: TusStorage;
  readonly links: UploadLinkSigner;
  private readonly uploadExpiryMs: number;
  constructor(deps: VideoInServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.accounts = deps.accounts;
    this.locations = deps.locations;
    this.videos = deps.videos;
    this.jobs = deps.jobs;
    this.secretBox = deps.secretBox;
    this.sources = deps.sources;
    this.projects = deps.projects;
    this.uploads = deps.uploads;
    this.links = deps.links;
    this.uploadExpiryMs = deps.uploadExpiryMs;
  }

  /**
   * A master video whose file comes as a direct resumable upload (tus) of exactly `size` bytes:
   * the video (upload INITIAL), its operation (source kind UPLOAD) and the empty tus upload. No
   * job yet: the last byte enqueues the finishing job (upload-endpoint.ts).
   */
  async createFromUpload(userId: string, input: CreateVideoInput & { size: number; crc32c?: number }): Promise<UploadSession> {
    if (input.size > MAX_VIDEO_BYTES) {
      throw new BadRequestError('VIDEO_TOO_LARGE', `The file has ${input.size} bytes; video in accepts at most 500 GB (${MAX_VIDEO_BYTES} bytes)`);
    }
    const { teamId, projectId } = await this.placement(userId, input);
    const videoId = randomUUID();
    const uploadId = uploadIdOf(videoId);
    const now = this.clock.now();
    const expiresAt = new Date(Math.floor((now.getTime() + this.uploadExpiryMs) / 1000) * 1000);
    const pinned: SourceInfo = { size: input.size };
    const fileName = input.fileName ?? 'upload';
    const storeId = this.uploads.storeId(uploadId, videoFileKey(videoId));
    await this.uploads.create(storeId, input.size, { videoId }, now);
    try {
      await this.create(
        userId,
        teamId,
        projectId,
        input,
        fileName,
        pinned,
        (id, at) => ({
          videoId: id,
          sourceKind: 'UPLOAD',
          maxConnections: 1,
          expectedCrc32c: input.crc32c,
          skipChecksum: false,
          pinned,
          tusUploadId: uploadId,
          uploadExpiresAt: expiresAt,
          createdAt: at,
        }),
        { videoId, enqueueCopy: false },
      );
    } catch (err) {
      await this.uploads.discard(storeId, false).catch(() => undefined);
      throw err;
    }
    const url = this.links.absolute(uploadPath(uploadId));
    url.search = `token=${this.links.token(uploadPath(uploadId), expiresAt)}`;
    return { video: (await findVideo(this.db, videoId))!, uploadUrl: url.toString(), size: input.size, expiresAt };
  }

  async createFromHttps(userId: string, input: CreateVideoInput & { url: string; crc32c?: number; maxConcurrentConnections?: number }): Promise<Video> {
    const { teamId, projectId } = await this.placement(userId, input);
    const spec: SourceSpec = { kind: 'HTTPS', url: input.url };
    const pinned = await this.sources.probe(spec);
    const fileName = input.fileName ?? fileNameFromUrl(input.url);
    return this.create(userId, teamId, projectId, input, fileName, pinned, (videoId, now) => ({
      videoId,
      sourceKind: 'HTTPS',
      sourceUrl: input.url,
      maxConnections: input.maxConcurrentConnections ?? DEFAULT_MAX_CONNECTIONS,
      expectedCrc32c: input.crc32c,
      skipChecksum: false,
      pinned,
      createdAt: now,
    }));
  }

  async createFromBucket(userId: string, input: CreateVideoInput & { objectKey: string; bucket: BucketSettings }): Promise<Video> {
    const { teamId, projectId } = await this.placement(userId, input);
    return this.createFromBucketSettings(userId, teamId, projectId, input, input.bucket, 'BUCKET');
  }

  async createFromInputLocation(userId: string, inputLocationId: string, input: CreateVideoInput & { objectKey: string }): Promise<Video> {
    const { teamId, projectId } = await this.placement(userId, input);
    const location = await this.locations.get(userId, 'input', inputLocationId);
    if (location.teamId !== teamId) throw new NotFoundError(`Input location ${inputLocationId} not found in team ${teamId}`);
    const bucket = await this.locations.bucketSettings(userId, 'input', inputLocationId);
    return this.createFromBucketSettings(userId, teamId, projectId, input, bucket, 'INPUT_LOCATION', inputLocationId);
  }

  /** The master video, which must have been made by video in (404 otherwise). */
  async status(userId: string, videoId: string): Promise<Video> {
    const video = await findVideoInScope(this.db, videoId, { memberUserId: userId });
    if (!video || video.kind !== 'MASTER' || !video.upload) throw new NotFoundError('Video not found, or not created by video in');
    return video;
  }

  /**
   * Resumes a FAILED copy from the parts already stored (409 VIDEO_IN_OPERATION_NOT_FAILED
   * otherwise). The status goes straight back to IN_PROGRESS with the progress it had. The source
   * must still pass the outbound guard (400 INVALID_HTTPS_URL / INVALID_BUCKET_ENDPOINT).
   */
  async restart(userId: string, videoId: string, skipChecksumValidation: boolean): Promise<Video> {
    const current = await this.status(userId, videoId);
    const stored = await videoInStore.byVideoId(this.db, videoId);
    if (current.upload?.status === 'FAILED' && stored && stored.sourceKind !== 'UPLOAD') {
      // The stored source is checked again under the policy as it is now (400 INVALID_HTTPS_URL or
      // INVALID_BUCKET_ENDPOINT, nothing enqueued); the copy's connections are checked once more.
      await this.sources.checkStored(this.sourceSpecOf(stored));
    }
    await this.transactional(async (trx) => {
      const video = await lockVideo(trx, videoId);
      if (!video?.upload) throw new NotFoundError('Video not found');
      if (video.upload.status !== 'FAILED') {
        throw new ConflictError('VIDEO_IN_OPERATION_NOT_FAILED', `The copy of video ${videoId} is ${video.upload.status}; only a FAILED copy can be restarted`);
      }
      const op = await videoInStore.byVideoId(trx, videoId);
      if (op?.sourceKind === 'UPLOAD') {
        throw new ConflictError(
          'VIDEO_IN_UPLOAD_NOT_RESTARTABLE',
          `Video ${videoId} came from a direct upload, whose bytes are removed when it fails: create a new upload to send the file again, and abandon this video`,
        );
      }
      const now = this.clock.now();
      await videoInStore.restart(trx, videoId, skipChecksumValidation, now);
      await new VideoStage(this.db, this.clock, 'upload').reset(trx, videoId, { status: 'IN_PROGRESS', etaSeconds: null, error: null }, now);
      await VIDEO_IN_COPY_JOB.enqueue(this.jobs, trx, { videoId });
    });
    return this.status(userId, videoId);
  }

  /** Deletes a FAILED video-in video and everything copied so far (409 unless FAILED). */
  async abandon(userId: string, videoId: string): Promise<void> {
    await this.status(userId, videoId);
    await this.transactional(async (trx) => {
      const video = await lockVideo(trx, videoId);
      if (!video?.upload) throw new NotFoundError('Video not found');
      if (video.upload.status !== 'FAILED') {
        throw new ConflictError('VIDEO_IN_OPERATION_NOT_FAILED', `The copy of video ${videoId} is ${video.upload.status}; only a FAILED copy can be abandoned`);
      }
      await this.videos.within(trx).removeLocked(video, await derivedVideoIds(trx, video));
    });
  }

  /** A video as stored (no scope check: the upload endpoint has checked its token). */
  video(videoId: string): Promise<Video | undefined> {
    return findVideo(this.db, videoId);
  }

  /** The direct upload whose tus id this is (the upload endpoint). */
  uploadOperation(uploadId: string): Promise<VideoInOperation | undefined> {
    return videoInStore.byTusUploadId(this.db, uploadId);
  }

  /** The tus data store's id of a video's upload. */
  uploadStoreId(videoId: string): string {
    return this.uploads.storeId(uploadIdOf(videoId), videoFileKey(videoId));
  }

  /**
   * Bytes received by a direct upload (written at most about once a second per upload by the
   * endpoint): the first moves the upload INITIAL -> IN_PROGRESS with `video_in.started`; a
   * finished or failed upload is left alone.
   */
  async uploadProgress(videoId: string, bytes: number, size: number): Promise<void> {
    const stage = new VideoStage(this.db, this.clock, 'upload');
    // Only forward: a write that arrives late (after a later one, or after the last byte's) is dropped.
    const ahead = (v: Video) => !!v.upload && RUNNING.includes(v.upload.status) && (v.upload.bytesTransferred ?? -1) < bytes;
    await stage.whenIn(videoId, ahead, async (trx, v, now) => {
      if (v.upload?.status === 'INITIAL') await stage.started(trx, v, VideoEvents.videoIn.started, now);
      await stage.progressWithin(trx, videoId, { fraction: bytes / size, bytes }, now);
    });
  }

  /**
   * The last byte of a direct upload arrived: recorded once, with the finishing job
   * (`video-in.upload-finish`) in the same transaction, before the client hears 204.
   */
  async uploadReceived(videoId: string, size: number): Promise<void> {
    const stage = new VideoStage(this.db, this.clock, 'upload');
    await stage.whenIn(videoId, RUNNING, async (trx, v, now) => {
      if (!(await videoInStore.markReceived(trx, videoId, now))) return;
      if (v.upload?.status === 'INITIAL') await stage.started(trx, v, VideoEvents.videoIn.started, now);
      await stage.progressWithin(trx, videoId, { fraction: 1, bytes: size }, now);
      await VIDEO_IN_UPLOAD_FINISH_JOB.enqueue(this.jobs, trx, { videoId });
    });
  }

  /**
   * Ends a direct upload whose last byte has not arrived (expired, or terminated by its client)
   * as FAILED with `code`, then removes its bytes. False when it had already ended.
   */
  async endUpload(videoId: string, code: 'UPLOAD_EXPIRED' | 'UPLOAD_ABANDONED'): Promise<boolean> {
    const stage = new VideoStage(this.db, this.clock, 'upload');
    const ended = await stage.whenIn(
      videoId,
      async (v, trx) => RUNNING.includes(v.upload!.status) && !(await videoInStore.byVideoId(trx, videoId))?.uploadReceivedAt,
      (trx, v, now) => stage.failed(trx, v, stageError('videoIn', code), VideoEvents.videoIn.failed, now),
    );
    if (ended) await this.uploads.discard(this.uploadStoreId(videoId), false);
    return ended;
  }

  /**
   * The removal hook (`videos.onRemove`, in the removing transaction): a video deleted while its
   * direct upload runs gets the finishing job, which finds it gone and removes the upload's bytes
   * after the commit. (An upload whose last byte arrived has that job already.)
   */
  async onVideosRemoved(videoIds: readonly string[]): Promise<void> {
    for (const videoId of await videoInStore.unfinishedUploads(this.db, videoIds)) {
      await VIDEO_IN_UPLOAD_FINISH_JOB.enqueue(this.jobs, this.db, { videoId });
    }
  }

  /** Direct uploads past their session's end (the expiry task). */
  expiredUploads(limit: number): Promise<string[]> {
    return videoInStore.expiredUploads(this.db, this.clock.now(), limit);
  }

  /** The copy operation of a video (for the job). */
  operation(videoId: string): Promise<VideoInOperation | undefined> {
    return videoInStore.byVideoId(this.db, videoId);
  }

  /** The source of a copy operation, as the job opens it. */
  sourceSpecOf(op: VideoInOperation): SourceSpec {
    if (op.sourceKind === 'HTTPS') return { kind: 'HTTPS', url: op.sourceUrl! };
    const bucket = JSON.parse(this.secretBox.open(op.sealedBucket!, bucketSealContext(op.videoId))) as BucketSettings;
    return { kind: 'BUCKET', bucket, key: op.objectKey! };
  }

  private async createFromBucketSettings(
    userId: string,
    teamId: string,
    projectId: string,
    input: CreateVideoInput & { objectKey: string },
    bucket: BucketSettings,
    sourceKind: 'BUCKET' | 'INPUT_LOCATION',
    inputLocationId?: string,
  ): Promise<Video> {
    const pinned = await this.sources.probe({ kind: 'BUCKET', bucket, key: input.objectKey });
    const fileName = input.fileName ?? (path.posix.basename(input.objectKey) || 'video');
    return this.create(userId, teamId, projectId, input, fileName, pinned, (videoId, now) => ({
      videoId,
      sourceKind,
      inputLocationId,
      sealedBucket: this.secretBox.seal(JSON.stringify(bucket), bucketSealContext(videoId)),
      objectKey: input.objectKey,
      maxConnections: DEFAULT_MAX_CONNECTIONS,
      skipChecksum: false,
      pinned,
      createdAt: now,
    }));
  }

  /** Writes the master video, its copy operation and the copy job in one transaction. */
  private async create(
    userId: string,
    teamId: string,
    projectId: string,
    input: CreateVideoInput,
    fileName: string,
    pinned: SourceInfo,
    operation: (videoId: string, now: Date) => Omit<VideoInOperation, 'upload' | 'attempt' | 'updatedAt' | 'uploadReceivedAt'>,
    opts: { videoId?: string; enqueueCopy?: boolean } = {},
  ): Promise<Video> {
    const videoId = opts.videoId ?? randomUUID();
    const now = this.clock.now();
    await this.transactional(async (trx) => {
      await new VideoStage(this.db, this.clock, 'upload').create(trx, {
        id: videoId,
        kind: 'MASTER',
        teamId,
        projectId,
        userId,
        name: input.name,
        description: input.description,
        fullIngestion: input.fullIngestion,
        file: videoFileFromSource(fileName, pinned, now),
        uploadStatus: 'INITIAL',
        createdAt: now,
      });
      await videoInStore.insert(trx, operation(videoId, now));
      if (opts.enqueueCopy !== false) await VIDEO_IN_COPY_JOB.enqueue(this.jobs, trx, { videoId });
    });
    return (await findVideo(this.db, videoId))!;
  }

  /** The team (selectTeamId or default) and the project (projectId of that team, or its default project). */
  private async placement(userId: string, input: CreateVideoInput): Promise<{ teamId: string; projectId: string }> {
    const team = await this.accounts.selectTeam(userId, input.selectTeamId);
    const project = await this.projects.placeVideo(team.id, input.projectId);
    return { teamId: team.id, projectId: project.id };
  }
}

/** The last path segment of the URL, decoded; "video" when there is none. */
export function fileNameFromUrl(url: string): string {
  try {
    const segment = new URL(url).pathname.split('/').filter(Boolean).pop();
    const name = segment ? decodeURIComponent(segment) : '';
    return name.slice(0, 255) || 'video';
  } catch {
    return 'video';
  }
}
