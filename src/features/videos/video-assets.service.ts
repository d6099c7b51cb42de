/**
 * Links to what ingestion made (thumbnails, full frames, the web video) and the public route
 * that serves them: signed, expiring, range-capable, no API key.
 */
import type { Knex } from 'knex';
import express, { Router } from 'express';
import type { Db } from '../../db/database';
import { sendBlob } from '../../http/blob-responses';
import { sendError } from '../../http/error-mapper';
import type { SignedLinks } from '../../http/signed-links';
import type { BlobStore } from '../../storage/blob-store';
import type { Clock } from '../../shared/clock';
import { NotFoundError } from '../../shared/errors';
import { VideoAsset, videoAssetsStore } from './video-assets.store';
import { videosStore } from './videos.store';
import { TransactionalService } from '../../db/transactional';

/** Records an asset a stage made (same video, kind and ordinal: replaces it), in the caller's transaction. */
export function recordVideoAsset(db: Knex, asset: VideoAsset): Promise<void> {
  return videoAssetsStore.putAsset(db, asset);
}

/** A video's assets, thumbnails first, each kind in order. */
export function videoAssetsOf(db: Knex, videoId: string): Promise<VideoAsset[]> {
  return videoAssetsStore.assetsOf(db, videoId);
}

export interface LinkedAsset extends VideoAsset {
  url: string;
}

export interface VideoAssetLinks {
  videoId: string;
  expiresAt: Date;
  thumbnails: LinkedAsset[];
  fullFrames: LinkedAsset[];
  webVideo?: LinkedAsset;
}

export const DEFAULT_LINK_MINUTES = 15;

/** The path of an asset's public route (signed by `links` and by the comparison page). */
export const assetPath = (videoId: string, assetId: string) => `/media/v1/videos/${videoId}/assets/${assetId}`;

export interface VideoAssetsServiceDeps {
  db: Db;
  clock: Clock;
  blobs: BlobStore;
  signer: SignedLinks;
}

export class VideoAssetsService extends TransactionalService {
  private readonly clock: Clock;
  private readonly blobs: BlobStore;
  private readonly signer: SignedLinks;
  constructor(deps: VideoAssetsServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.blobs = deps.blobs;
    this.signer = deps.signer;
  }

  async links(userId: string, videoId: string, minutes = DEFAULT_LINK_MINUTES): Promise<VideoAssetLinks> {
    const video = await videosStore.byIdInScope(this.db, videoId, { memberUserId: userId });
    if (!video) throw new NotFoundError('Video not found');
    const expiresAt = new Date(this.clock.now().getTime() + minutes * 60_000);
    const linked = (await videoAssetsStore.assetsOf(this.db, videoId)).map((a) => ({ ...a, url: this.signer.sign(assetPath(videoId, a.id), expiresAt) }));
    return {
      videoId,
      expiresAt,
      thumbnails: linked.filter((a) => a.kind === 'THUMBNAIL'),
      fullFrames: linked.filter((a) => a.kind === 'FRAME'),
      webVideo: linked.find((a) => a.kind === 'WEB_VIDEO'),
    };
  }

  /** GET/HEAD /media/v1/videos/:videoId/assets/:assetId?expires=..&signature=.. */
  routes(): Router {
    const router = express.Router();
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
    router.get('/media/v1/videos/:videoId/assets/:assetId', async (req, res, next) => {
      try {
        const { videoId, assetId } = req.params;
        if (!uuid.test(videoId) || !uuid.test(assetId)) return sendError(req, res, 404, 'NOT_FOUND', 'No such asset');
        const verdict = this.signer.verify(assetPath(videoId, assetId), req.query.expires, req.query.signature, this.clock.now());
        if (verdict === 'invalid') return sendError(req, res, 403, 'ACCESS_DENIED', 'The link signature is not valid');
        if (verdict === 'expired') return sendError(req, res, 403, 'ACCESS_DENIED', 'The link has expired; ask GET /v1/videos/{videoId}/assets for a new one');
        const asset = await videoAssetsStore.asset(this.db, videoId, assetId);
        if (!asset) return sendError(req, res, 404, 'NOT_FOUND', 'The asset no longer exists');
        const name = asset.blobKey.split('/').pop();
        await sendBlob(req, res, this.blobs, { key: asset.blobKey, size: asset.size, contentType: asset.contentType, fileName: name, etag: `"${asset.id}"` });
      } catch (err) {
        if (res.headersSent) return void res.destroy(err as Error);
        next(err);
      }
    });
    return router;
  }
}
