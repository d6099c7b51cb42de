import type { HandlerMap } from '../../http/operations';
import { mapPage, pageRequest } from '../../shared/paging';
import { toVideoDto } from './video-view';
import type { VideosService, VideoWithMaster } from './videos.service';
import type { LinkedAsset, VideoAssetsService } from './video-assets.service';
import type { components } from '../../../generated/api';

const assetDto = (a: LinkedAsset): components['schemas']['VideoAsset'] => ({
  id: a.id,
  url: a.url,
  contentType: a.contentType,
  size: a.size,
  ...(a.width !== undefined ? { width: a.width } : {}),
  ...(a.height !== undefined ? { height: a.height } : {}),
  ...(a.positionMs !== undefined ? { positionMs: a.positionMs } : {}),
});

const dto = ({ video, master }: VideoWithMaster) => toVideoDto(video, master);

export function videosHandlers(videos: VideosService, assets: VideoAssetsService) {
  return {
    async getVideos({ principal, query }) {
      const { teamId, projectId, masterVideoId, clipId, clipMode } = query;
      const page = await videos.list(principal.userId, teamId, { projectId, masterVideoId, clipId, clipMode }, pageRequest(query));
      return { status: 200, body: mapPage(page, dto) };
    },
    async getVideoById({ principal, path }) {
      return { status: 200, body: dto(await videos.get(principal.userId, path.videoId)) };
    },
    async patchVideo({ principal, path, body }) {
      return { status: 200, body: dto(await videos.patch(principal.userId, path.videoId, { name: body.name, description: body.description })) };
    },
    async deleteVideoById({ principal, path, body }) {
      return { status: 200, body: await videos.delete(principal.userId, path.videoId, body) };
    },
    async getDerivedVideos({ principal, path, query }) {
      return { status: 200, body: mapPage(await videos.derived(principal.userId, path.videoId, pageRequest(query)), dto) };
    },
    async getVideoAssets({ principal, path, query }) {
      const links = await assets.links(principal.userId, path.videoId, query.expiresInMinutes);
      return {
        status: 200,
        body: {
          videoId: links.videoId,
          expiresAt: links.expiresAt.toISOString(),
          thumbnails: links.thumbnails.map(assetDto),
          fullFrames: links.fullFrames.map(assetDto),
          ...(links.webVideo ? { webVideo: assetDto(links.webVideo) } : {}),
        },
      };
    },
  } satisfies HandlerMap<'getVideos' | 'getVideoById' | 'patchVideo' | 'deleteVideoById' | 'getDerivedVideos' | 'getVideoAssets'>;
}
