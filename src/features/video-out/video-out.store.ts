/**
 * SQL for video out: the copy of a video to a customer bucket (`video_out_operations`, one row
 * per video), the parts that copy has sent (`video_out_parts`), and the bytes served by download
 * URLs until they are billed (`video_download_usage`). The video's own `output` state lives on
 * `videos` and is changed through videosStore.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { asDate } from '../../db/database';
import type { UploadDescriptor } from '../../storage/blob-store';
import { partCrcsStore } from '../../storage/part-crcs.store';
import { DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export type VideoOutTargetKind = 'BUCKET' | 'OUTPUT_LOCATION';

export interface VideoOutOperation {
  videoId: string;
  /** This copy (the billing job id and stale jobs are told apart by it). */
  id: string;
  targetKind: VideoOutTargetKind;
  outputLocationId?: string;
  /** BucketSettings as JSON, sealed with the SecretBox (see video-out.service). */
  sealedBucket: string;
  objectKey: string;
  size: number;
  contentType?: string;
  /** The customer's multipart upload, once created. */
  upload?: UploadDescriptor;
  attempt: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A row as the drivers return it (see src/db/store.ts). */
interface VideoOutOperationRow {
  video_id: string;
  id: string;
  target_kind: VideoOutTargetKind;
  output_location_id: Nullable<string>;
  sealed_bucket: string;
  object_key: string;
  size: DbInt;
  content_type: Nullable<string>;
  upload_json: Nullable<string>;
  attempt: DbInt;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

function fromRow(r: VideoOutOperationRow): VideoOutOperation {
  return {
    videoId: r.video_id,
    id: r.id,
    targetKind: r.target_kind,
    outputLocationId: r.output_location_id ?? undefined,
    sealedBucket: r.sealed_bucket,
    objectKey: r.object_key,
    size: Number(r.size),
    contentType: r.content_type ?? undefined,
    upload: r.upload_json ? (JSON.parse(r.upload_json) as VideoOutOperation['upload']) : undefined,
    attempt: Number(r.attempt),
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}
const videoOutOperationRows = rowMapper(fromRow);

/** Bytes served by download URLs, gathered into one batch per team and video. */
export interface DownloadBatch {
  batchId: string;
  teamId: string;
  videoId: string;
  bytes: number;
  responses: number;
}

export const videoOutStore = {
  /** Writes the operation of a new copy, replacing the finished one before it (and its parts). */
  async replace(db: Knex, op: Omit<VideoOutOperation, 'upload' | 'attempt' | 'updatedAt'>): Promise<void> {
    await db('video_out_parts').where({ video_id: op.videoId }).delete();
    await db('video_out_operations').where({ video_id: op.videoId }).delete();
    await db('video_out_operations').insert({
      video_id: op.videoId,
      id: op.id,
      target_kind: op.targetKind,
      output_location_id: op.outputLocationId ?? null,
      sealed_bucket: op.sealedBucket,
      object_key: op.objectKey,
      size: op.size,
      content_type: op.contentType ?? null,
      upload_json: null,
      attempt: 1,
      created_at: op.createdAt,
      updated_at: op.createdAt,
    });
  },

  async byVideoId(db: Knex, videoId: string): Promise<VideoOutOperation | undefined> {
    const row = (await db('video_out_operations').where({ video_id: videoId }).first()) as VideoOutOperationRow | undefined;
    return videoOutOperationRows.one(row);
  },

  /** Operations of these videos (deletion aborts their unfinished uploads). */
  async ofVideos(db: Knex, videoIds: readonly string[]): Promise<VideoOutOperation[]> {
    if (videoIds.length === 0) return [];
    return videoOutOperationRows.many(await db('video_out_operations').whereIn('video_id', [...videoIds]));
  },

  /** Records the upload of operation `id`; false when that operation is gone (abandoned, deleted). */
  async setUpload(db: Knex, videoId: string, id: string, upload: UploadDescriptor | null, now: Date): Promise<boolean> {
    const n = await db('video_out_operations')
      .where({ video_id: videoId, id })
      .update({ upload_json: upload ? JSON.stringify(upload) : null, updated_at: now });
    return Number(n) > 0;
  },

  /** New bucket settings for the copy (a restart takes its output location's current ones). */
  async setSealedBucket(db: Knex, videoId: string, id: string, sealedBucket: string, now: Date): Promise<void> {
    await db('video_out_operations').where({ video_id: videoId, id }).update({ sealed_bucket: sealedBucket, updated_at: now });
  },

  async restart(db: Knex, videoId: string, now: Date): Promise<void> {
    await db('video_out_operations')
      .where({ video_id: videoId })
      .update({ attempt: db.raw('attempt + 1'), updated_at: now });
  },

  async delete(db: Knex, videoId: string): Promise<void> {
    await db('video_out_parts').where({ video_id: videoId }).delete();
    await db('video_out_operations').where({ video_id: videoId }).delete();
  },

  /** The CRC-32C of each part already sent, so a restart sends only the rest. */
  ...partCrcsStore('video_out_parts'),

  /** One served download response (bytes actually sent). */
  async recordDownload(db: Knex, d: { teamId: string; videoId: string; bytes: number; servedAt: Date }): Promise<void> {
    await db('video_download_usage').insert({ id: randomUUID(), team_id: d.teamId, video_id: d.videoId, bytes: d.bytes, served_at: d.servedAt, batch_id: null, billed_at: null });
  },

  /**
   * Gathers every unbatched row into one new batch per team and video. A row lands in exactly one
   * batch: the update only takes rows that still have none, so two processes gathering at once
   * split the rows between them.
   */
  async gatherDownloadBatches(db: Knex): Promise<void> {
    const groups = await db('video_download_usage').whereNull('batch_id').distinct<{ team_id: string; video_id: string }[]>('team_id', 'video_id');
    for (const g of groups) {
      await db('video_download_usage').whereNull('batch_id').where({ team_id: g.team_id, video_id: g.video_id }).update({ batch_id: randomUUID() });
    }
  },

  /** Batches not billed yet, with their totals. */
  async unbilledBatches(db: Knex): Promise<DownloadBatch[]> {
    const rows: { batch_id: string; team_id: string; video_id: string; bytes: DbInt; responses: DbInt }[] = await db('video_download_usage')
      .whereNotNull('batch_id')
      .whereNull('billed_at')
      .groupBy('batch_id', 'team_id', 'video_id')
      .select('batch_id', 'team_id', 'video_id')
      .sum({ bytes: 'bytes' })
      .count({ responses: '*' });
    return rows.map((r) => ({ batchId: r.batch_id, teamId: r.team_id, videoId: r.video_id, bytes: Number(r.bytes), responses: Number(r.responses) }));
  },

  async markBatchBilled(db: Knex, batchId: string, now: Date): Promise<void> {
    await db('video_download_usage').where({ batch_id: batchId }).update({ billed_at: now });
  },
};
