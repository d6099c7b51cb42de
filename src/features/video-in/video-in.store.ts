/**
 * SQL for the copies into the platform (`video_in_operations`) and the parts they have stored
 * (`video_in_parts`). One row per master video; the video's own state (upload status, progress,
 * file) lives on `videos` and is changed through videosStore.
 */
import type { Knex } from 'knex';
import { asBool, asDate, asOptionalDate } from '../../db/database';
import type { SourceInfo } from '../../net/https-range-source';
import type { UploadDescriptor } from '../../storage/blob-store';
import { partCrcsStore } from '../../storage/part-crcs.store';
import { DbBool, DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

/** UPLOAD: a direct resumable upload (tus), docs/uploads.md. */
export type VideoInSourceKind = 'HTTPS' | 'BUCKET' | 'INPUT_LOCATION' | 'UPLOAD';

export interface VideoInOperation {
  videoId: string;
  sourceKind: VideoInSourceKind;
  /** HTTPS sources: the URL as given. */
  sourceUrl?: string;
  inputLocationId?: string;
  /** Bucket sources: the bucket settings and credentials, sealed (see video-in.service). */
  sealedBucket?: string;
  objectKey?: string;
  maxConnections: number;
  expectedCrc32c?: number;
  skipChecksum: boolean;
  /** Size and validator of the source as probed when the video was created. */
  pinned: SourceInfo;
  upload?: UploadDescriptor;
  /** Runs of the copy so far (1 for the first, +1 per restart). */
  attempt: number;
  /** Direct uploads: the tus upload id (in its URL), when the session ends, when the last byte arrived. */
  tusUploadId?: string;
  uploadExpiresAt?: Date;
  uploadReceivedAt?: Date;
  createdAt: Date;
  updatedAt: Date;
}

/** A row as the drivers return it (see src/db/store.ts). */
interface VideoInOperationRow {
  video_id: string;
  source_kind: VideoInSourceKind;
  source_url: Nullable<string>;
  input_location_id: Nullable<string>;
  sealed_bucket: Nullable<string>;
  object_key: Nullable<string>;
  max_connections: DbInt;
  expected_crc32c: Nullable<DbInt>;
  skip_checksum: DbBool;
  pinned_json: string;
  upload_json: Nullable<string>;
  attempt: DbInt;
  tus_upload_id: Nullable<string>;
  upload_expires_at: Nullable<DbTimestamp>;
  upload_received_at: Nullable<DbTimestamp>;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

function fromRow(r: VideoInOperationRow): VideoInOperation {
  return {
    videoId: r.video_id,
    sourceKind: r.source_kind,
    sourceUrl: r.source_url ?? undefined,
    inputLocationId: r.input_location_id ?? undefined,
    sealedBucket: r.sealed_bucket ?? undefined,
    objectKey: r.object_key ?? undefined,
    maxConnections: Number(r.max_connections),
    expectedCrc32c: r.expected_crc32c === null || r.expected_crc32c === undefined ? undefined : Number(r.expected_crc32c),
    skipChecksum: asBool(r.skip_checksum),
    pinned: JSON.parse(r.pinned_json) as VideoInOperation['pinned'],
    upload: r.upload_json ? (JSON.parse(r.upload_json) as VideoInOperation['upload']) : undefined,
    attempt: Number(r.attempt),
    tusUploadId: r.tus_upload_id ?? undefined,
    uploadExpiresAt: asOptionalDate(r.upload_expires_at),
    uploadReceivedAt: asOptionalDate(r.upload_received_at),
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}
const videoInOperationRows = rowMapper(fromRow);

export const videoInStore = {
  async insert(db: Knex, op: Omit<VideoInOperation, 'upload' | 'attempt' | 'updatedAt' | 'uploadReceivedAt'>): Promise<void> {
    await db('video_in_operations').insert({
      video_id: op.videoId,
      source_kind: op.sourceKind,
      source_url: op.sourceUrl ?? null,
      input_location_id: op.inputLocationId ?? null,
      sealed_bucket: op.sealedBucket ?? null,
      object_key: op.objectKey ?? null,
      max_connections: op.maxConnections,
      expected_crc32c: op.expectedCrc32c ?? null,
      skip_checksum: op.skipChecksum,
      pinned_json: JSON.stringify(op.pinned),
      upload_json: null,
      attempt: 1,
      tus_upload_id: op.tusUploadId ?? null,
      upload_expires_at: op.uploadExpiresAt ?? null,
      created_at: op.createdAt,
      updated_at: op.createdAt,
    });
  },

  async byVideoId(db: Knex, videoId: string): Promise<VideoInOperation | undefined> {
    const row = (await db('video_in_operations').where({ video_id: videoId }).first()) as VideoInOperationRow | undefined;
    return videoInOperationRows.one(row);
  },

  async setUpload(db: Knex, videoId: string, upload: UploadDescriptor, now: Date): Promise<void> {
    await db('video_in_operations')
      .where({ video_id: videoId })
      .update({ upload_json: JSON.stringify(upload), updated_at: now });
  },

  /** The upload is lost: the next run starts a fresh one and copies every part again. */
  async forgetUpload(db: Knex, videoId: string): Promise<void> {
    await db('video_in_operations').where({ video_id: videoId }).update({ upload_json: null });
    await this.forgetParts(db, videoId);
  },

  /** The direct upload whose tus id this is. */
  async byTusUploadId(db: Knex, tusUploadId: string): Promise<VideoInOperation | undefined> {
    const row = (await db('video_in_operations').where({ tus_upload_id: tusUploadId }).first()) as VideoInOperationRow | undefined;
    return videoInOperationRows.one(row);
  },

  /** The last byte of a direct upload arrived (once: false when it had already). */
  async markReceived(db: Knex, videoId: string, now: Date): Promise<boolean> {
    const n = await db('video_in_operations').where({ video_id: videoId }).whereNull('upload_received_at').update({ upload_received_at: now, updated_at: now });
    return n > 0;
  },

  /** Of these videos, those with a direct upload whose last byte has not arrived. */
  async unfinishedUploads(db: Knex, videoIds: readonly string[]): Promise<string[]> {
    if (!videoIds.length) return [];
    const rows = await db('video_in_operations').where('source_kind', 'UPLOAD').whereNull('upload_received_at').whereIn('video_id', videoIds).select<{ video_id: string }[]>('video_id');
    return rows.map((r) => r.video_id);
  },

  /** Video ids of direct uploads past their session's end whose last byte never arrived. */
  async expiredUploads(db: Knex, now: Date, limit: number): Promise<string[]> {
    const rows = await db('video_in_operations')
      .where('source_kind', 'UPLOAD')
      .whereNull('upload_received_at')
      .where('upload_expires_at', '<', now)
      .join('videos', 'videos.id', 'video_in_operations.video_id')
      .whereIn('videos.upload_status', ['INITIAL', 'IN_PROGRESS'])
      .orderBy('upload_expires_at')
      .limit(limit)
      .select<{ video_id: string }[]>('video_in_operations.video_id');
    return rows.map((r) => r.video_id);
  },

  /** A restart: one more run, optionally without the checksum comparison. */
  async restart(db: Knex, videoId: string, skipChecksum: boolean, now: Date): Promise<void> {
    await db('video_in_operations')
      .where({ video_id: videoId })
      .update({ attempt: db.raw('attempt + 1'), ...(skipChecksum ? { skip_checksum: true } : {}), updated_at: now });
  },

  /** The CRC-32C of each part already stored, so a restart copies only the rest. */
  ...partCrcsStore('video_in_parts'),
};
