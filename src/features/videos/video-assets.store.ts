/** SQL of a video's assets: the thumbnails, full frames and web video that ingestion makes. */
import type { Knex } from 'knex';
import { asDate } from '../../db/database';
import { DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export type AssetKind = 'THUMBNAIL' | 'FRAME' | 'WEB_VIDEO';

export interface VideoAsset {
  id: string;
  videoId: string;
  kind: AssetKind;
  ordinal: number;
  blobKey: string;
  contentType: string;
  size: number;
  width?: number;
  height?: number;
  positionMs?: number;
  createdAt: Date;
}

const optional = (v: unknown) => (v === null || v === undefined ? undefined : Number(v));

/** A row as the drivers return it (see src/db/store.ts). */
interface VideoAssetRow {
  id: string;
  video_id: string;
  kind: AssetKind;
  ordinal: DbInt;
  blob_key: string;
  content_type: string;
  size: DbInt;
  width: Nullable<DbInt>;
  height: Nullable<DbInt>;
  position_ms: Nullable<DbInt>;
  created_at: DbTimestamp;
}

function fromRow(r: VideoAssetRow): VideoAsset {
  return {
    id: r.id,
    videoId: r.video_id,
    kind: r.kind,
    ordinal: Number(r.ordinal),
    blobKey: r.blob_key,
    contentType: r.content_type,
    size: Number(r.size),
    width: optional(r.width),
    height: optional(r.height),
    positionMs: optional(r.position_ms),
    createdAt: asDate(r.created_at),
  };
}
const videoAssetRows = rowMapper(fromRow);

export const videoAssetsStore = {
  /** Inserts or replaces (same video, kind and ordinal: a re-run of ingestion) an asset. */
  async putAsset(db: Knex, a: VideoAsset): Promise<void> {
    await db('video_assets')
      .insert({
        id: a.id,
        video_id: a.videoId,
        kind: a.kind,
        ordinal: a.ordinal,
        blob_key: a.blobKey,
        content_type: a.contentType,
        size: a.size,
        width: a.width ?? null,
        height: a.height ?? null,
        position_ms: a.positionMs ?? null,
        created_at: a.createdAt,
      })
      .onConflict(['video_id', 'kind', 'ordinal'])
      .merge(['blob_key', 'content_type', 'size', 'width', 'height', 'position_ms', 'created_at']);
  },

  async assetsOf(db: Knex, videoId: string): Promise<VideoAsset[]> {
    const rows = await db('video_assets')
      .where({ video_id: videoId })
      .orderBy([{ column: 'kind' }, { column: 'ordinal' }]);
    return videoAssetRows.many(rows);
  },

  async asset(db: Knex, videoId: string, assetId: string): Promise<VideoAsset | undefined> {
    const row = (await db('video_assets').where({ video_id: videoId, id: assetId }).first()) as VideoAssetRow | undefined;
    return videoAssetRows.one(row);
  },
};
