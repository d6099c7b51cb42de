/** SQL for the parts of segmented processing jobs (migration 017): one row per video segment and the audio pass. */
import type { Knex } from 'knex';
import { DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';
import { asDate } from '../../db/database';

export type SegmentKind = 'video' | 'audio';

export interface SegmentRecord {
  videoId: string;
  /** 0..n-1: the video segments in output order; n: the audio pass. */
  part: number;
  kind: SegmentKind;
  durationMs: number;
  /** The segment length the split used (every job of the video plans with it). */
  segmentSeconds: number;
  status: 'queued' | 'done';
  /** 0..1. */
  progress: number;
  blobKey?: string;
  createdAt: Date;
  updatedAt: Date;
}

interface SegmentRow {
  video_id: string;
  part: DbInt;
  kind: SegmentKind;
  duration_ms: DbInt;
  segment_seconds: DbInt;
  status: SegmentRecord['status'];
  progress: number | string;
  blob_key: Nullable<string>;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

const rows = rowMapper((r: SegmentRow): SegmentRecord => ({
  videoId: r.video_id,
  part: Number(r.part),
  kind: r.kind,
  durationMs: Number(r.duration_ms),
  segmentSeconds: Number(r.segment_seconds),
  status: r.status,
  progress: Number(r.progress),
  blobKey: r.blob_key ?? undefined,
  createdAt: asDate(r.created_at),
  updatedAt: asDate(r.updated_at),
}));

const TABLE = 'processing_segments';

export const segmentsStore = {
  async insertAll(db: Knex, parts: Omit<SegmentRecord, 'status' | 'progress' | 'blobKey' | 'updatedAt'>[]): Promise<void> {
    if (!parts.length) return;
    await db(TABLE).insert(
      parts.map((p) => ({
        video_id: p.videoId,
        part: p.part,
        kind: p.kind,
        duration_ms: p.durationMs,
        segment_seconds: p.segmentSeconds,
        status: 'queued',
        progress: 0,
        blob_key: null,
        created_at: p.createdAt,
        updated_at: p.createdAt,
      })),
    );
  },

  async byVideo(db: Knex, videoId: string): Promise<SegmentRecord[]> {
    return rows.many((await db(TABLE).where({ video_id: videoId }).orderBy('part')) as SegmentRow[]);
  },

  async markDone(db: Knex, videoId: string, part: number, blobKey: string, now: Date): Promise<void> {
    await db(TABLE).where({ video_id: videoId, part }).update({ status: 'done', progress: 1, blob_key: blobKey, updated_at: now });
  },

  async setProgress(db: Knex, videoId: string, part: number, progress: number, now: Date): Promise<void> {
    await db(TABLE).where({ video_id: videoId, part, status: 'queued' }).update({ progress, updated_at: now });
  },

  async deleteAll(db: Knex, videoId: string): Promise<void> {
    await db(TABLE).where({ video_id: videoId }).delete();
  },

  /** Videos with parts left over from a processing stage that has ended (DONE, FAILED) or a video that is gone. */
  async leftoverVideoIds(db: Knex, limit: number): Promise<string[]> {
    const ids = await db(TABLE)
      .distinct(`${TABLE}.video_id`)
      .leftJoin('videos', 'videos.id', `${TABLE}.video_id`)
      .where((q) => {
        void q.whereNull('videos.id').orWhereIn('videos.processing_status', ['DONE', 'FAILED']);
      })
      .limit(limit);
    return ids.map((r: { video_id: string }) => r.video_id);
  },
};
