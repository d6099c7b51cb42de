import type { components } from '../../../generated/api';
import type { HandlerMap } from '../../http/operations';
import type { BucketSettings } from '../../storage/bucket-access';
import type { CreateVideoInput, VideoInService } from './video-in.service';
import { toVideoIngestion, toVideoUpload } from '../videos';
import type { Video } from '../videos';

type Schemas = components['schemas'];

function toVideoInStatus(v: Video): Schemas['VideoInStatus'] {
  const ingestion = toVideoIngestion(v);
  return { videoId: v.id, upload: toVideoUpload(v) ?? {}, ...(ingestion ? { ingestion } : {}) };
}

/** The contract's BucketWithAccessKeys as domain bucket settings (video out uses it too). */
export function toBucketSettings(b: Schemas['BucketWithAccessKeys']): BucketSettings {
  return {
    bucket: b.bucket,
    endpoint: b.endpoint,
    region: b.region,
    forcePathStyle: b.forcePathStyle ?? false,
    credentials: { accessKey: b.accessKey, secretAccessKey: b.secretAccessKey },
  };
}

type BaseBody = Pick<Schemas['CreateMasterVideoFromHttps'], 'name' | 'description' | 'projectId' | 'fileName'>;

function baseInput(query: { selectTeamId?: string; fullIngestion?: boolean }, body: BaseBody): CreateVideoInput {
  return {
    selectTeamId: query.selectTeamId,
    name: body.name,
    description: body.description,
    projectId: body.projectId,
    fileName: body.fileName,
    fullIngestion: query.fullIngestion ?? false,
  };
}

export function videoInHandlers(videoIn: VideoInService) {
  return {
    async createMasterVideoFromHttps({ principal, query, body }) {
      const video = await videoIn.createFromHttps(principal.userId, {
        ...baseInput(query, body),
        url: body.url,
        crc32c: query.crc32c,
        maxConcurrentConnections: query.maxConcurrentConnections,
      });
      return { status: 202, body: toVideoInStatus(video) };
    },
    async createMasterVideoFromBucket({ principal, query, body }) {
      const video = await videoIn.createFromBucket(principal.userId, { ...baseInput(query, body), objectKey: body.objectKey, bucket: toBucketSettings(body.s3Bucket) });
      return { status: 202, body: toVideoInStatus(video) };
    },
    async createMasterVideoFromBucketInputLocationId({ principal, path, query, body }) {
      const video = await videoIn.createFromInputLocation(principal.userId, path.inputLocationId, { ...baseInput(query, body), objectKey: body.objectKey });
      return { status: 202, body: toVideoInStatus(video) };
    },
    async createMasterVideoFromUpload({ principal, query, body }) {
      const session = await videoIn.createFromUpload(principal.userId, { ...baseInput(query, body), size: body.size, crc32c: query.crc32c });
      return {
        status: 201,
        body: { videoId: session.video.id, uploadUrl: session.uploadUrl, size: session.size, expiresAt: session.expiresAt.toISOString() },
      };
    },
    async getVideoInStatus({ principal, path }) {
      return { status: 200, body: toVideoInStatus(await videoIn.status(principal.userId, path.videoId)) };
    },
    async restartFailedVideoInOperation({ principal, path, query }) {
      return { status: 202, body: toVideoInStatus(await videoIn.restart(principal.userId, path.videoId, query.skipChecksumValidation ?? false)) };
    },
    async abandonFailedVideoInOperation({ principal, path }) {
      await videoIn.abandon(principal.userId, path.videoId);
      return { status: 204 };
    },
  } satisfies HandlerMap<
    | 'createMasterVideoFromUpload'
    | 'createMasterVideoFromHttps'
    | 'createMasterVideoFromBucket'
    | 'createMasterVideoFromBucketInputLocationId'
    | 'getVideoInStatus'
    | 'restartFailedVideoInOperation'
    | 'abandonFailedVideoInOperation'
  >;
}
