import type { components } from '../../../generated/api';
import type { HandlerMap } from '../../http/operations';
import { toBucketSettings } from '../video-in';
import type { VideoOutService } from './video-out.service';
import { toVideoOutput } from '../videos';
import type { Video } from '../videos';

type Schemas = components['schemas'];

/** `output` is required: a video never copied out shows an empty one (no `state`). */
function toVideoOutStatus(v: Video): Schemas['VideoOutStatus'] {
  return { videoId: v.id, output: toVideoOutput(v) ?? {} };
}

export function videoOutHandlers(videoOut: VideoOutService) {
  return {
    async copyVideoDataToBucket({ principal, path, body }) {
      const video = await videoOut.copyToBucket(principal.userId, path.videoId, { objectKeyPrefix: body.objectKeyPrefix, bucket: toBucketSettings(body.s3Bucket) });
      return { status: 202, body: toVideoOutStatus(video) };
    },
    async copyVideoDataToBucketOutputLocationId({ principal, path, body }) {
      const video = await videoOut.copyToOutputLocation(principal.userId, path.videoId, path.outputLocationId, { objectKeyPrefix: body.objectKeyPrefix });
      return { status: 202, body: toVideoOutStatus(video) };
    },
    async generateVideoDownloadUrl({ principal, path, query }) {
      const link = await videoOut.downloadUrl(principal.userId, path.videoId, query.durationMinutes);
      return {
        status: 200,
        body: {
          videoId: link.videoId,
          presignedUrl: link.url,
          expiresAt: link.expiresAt.toISOString(),
          fileSize: link.fileSize,
          mimeType: link.mimeType,
          fileExtension: link.fileExtension,
          suggestedFileName: link.suggestedFileName,
          ...(link.crc32c !== undefined ? { crc32cChecksum: link.crc32c } : {}),
        },
      };
    },
    async getVideoOutStatus({ principal, path }) {
      return { status: 200, body: toVideoOutStatus(await videoOut.status(principal.userId, path.videoId)) };
    },
    async restartFailedVideoOutOperation({ principal, path }) {
      return { status: 202, body: toVideoOutStatus(await videoOut.restart(principal.userId, path.videoId)) };
    },
    async abandonFailedVideoOutOperation({ principal, path }) {
      await videoOut.abandon(principal.userId, path.videoId);
      return { status: 204 };
    },
  } satisfies HandlerMap<
    'copyVideoDataToBucket' | 'copyVideoDataToBucketOutputLocationId' | 'generateVideoDownloadUrl' | 'getVideoOutStatus' | 'restartFailedVideoOutOperation' | 'abandonFailedVideoOutOperation'
  >;
}
