/**
 * SQL for the `videos` table. Every area that changes a video's state (video in, ingestion,
 * the free clip, processing, video out) goes through the update functions here, so the row
 * shape stays in one place. Services own the rules and the transactions.
 */
import type { Knex } from 'knex';
import { asBool, asDate, asOptionalDate, isPostgres } from '../../db/database';
import type { UploadDescriptor } from '../../storage/blob-store';
import { fetchPage, Page, PageRequest } from '../../shared/paging';
import { TeamScope, whereTeamInScope } from '../accounts';
import { DbBool, DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export type VideoKind = 'MASTER' | 'CLIP' | 'PROCESSED';
export type OperationStatus = 'INITIAL' | 'IN_PROGRESS' | 'DONE' | 'FAILED';

export interface StageError {
  code: string;
  message: string;
}

export interface VideoFileInfo {
  name: string;
  size: number;
  /** MIME type. */
  type: string;
  /** Human container name, e.g. "QuickTime". */
  containerName: string;
  lastModified: Date;
}

export interface UploadState {
  status: OperationStatus;
  progress: number;
  /** Bytes of the file received so far (copied, or sent to a direct upload); absent when not recorded. */
  bytesTransferred?: number;
  etaSeconds?: number;
  updatedAt: Date;
  error?: StageError;
}

export interface IngestionState {
  status: OperationStatus;
  progress: number;
  etaSeconds?: number;
  updatedAt: Date;
  error?: StageError;
  metadataAvailable: boolean;
  thumbnailsAvailable: boolean;
  fullFramesAvailable: boolean;
  webVideoAvailable: boolean;
  /** VideoMetadata as produced by media/probe (plain JSON). */
  metadata?: Record<string, unknown>;
  /** VideoQualityAssessment (plain JSON). */
  quality?: Record<string, unknown>;
  /** The probe's plain facts (durationMs, width, height, hasAudio, fps...), for processing. */
  probe?: Record<string, unknown>;
}

/** The output stage: the latest copy of the video out of the platform (video out). */
export interface OutputState {
  status: OperationStatus;
  progress: number;
  etaSeconds?: number;
  updatedAt: Date;
  error?: StageError;
}

/** The processing stage (the free clip's cut; processing jobs later). */
export interface ProcessingState {
  status: OperationStatus;
  progress: number;
  etaSeconds?: number;
  updatedAt: Date;
  error?: StageError;
  startMs?: number;
  endMs?: number;
  /** The options as requested (processing jobs). */
  options?: Record<string, unknown>;
  /** What the job applies: the options resolved and the output they make (processing jobs). */
  appliedOptions?: Record<string, unknown>;
  /** The appraisal the job was charged by (processing jobs). */
  appraisal?: Record<string, unknown>;
}

export interface Video {
  id: string;
  kind: VideoKind;
  teamId: string;
  projectId: string;
  userId: string;
  name: string;
  description?: string;
  masterVideoId?: string;
  sourceVideoId?: string;
  clipId?: string;
  isSample: boolean;
  fullIngestion: boolean;
  blobKey?: string;
  file?: VideoFileInfo;
  crc32c?: number;
  upload?: UploadState;
  ingestion?: IngestionState;
  processing?: ProcessingState;
  output?: OutputState;
  createdAt: Date;
  updatedAt: Date;
}

/** A stored file of a video: where it is in platform storage, its CRC-32C and size, and (when given) its description. */
export interface StoredVideoFile {
  blobKey: string;
  crc32c?: number;
  size?: number;
  file?: VideoFileInfo;
}

export interface NewVideo {
  id: string;
  kind?: VideoKind;
  teamId: string;
  projectId: string;
  userId: string;
  name: string;
  description?: string;
  masterVideoId?: string;
  sourceVideoId?: string;
  clipId?: string;
  fullIngestion?: boolean;
  blobKey?: string;
  file?: VideoFileInfo;
  /** Videos made by video in start with upload INITIAL. */
  uploadStatus?: OperationStatus;
  /** Videos made by processing (the clip too) start with processing INITIAL over this range. */
  processing?: { startMs?: number; endMs?: number; options?: Record<string, unknown>; appliedOptions?: Record<string, unknown>; appraisal?: Record<string, unknown> };
  createdAt: Date;
}

/** Filters of the video list (`getVideos`). */
export interface VideoListFilter {
  projectId?: string;
  /** Only videos derived from this master. */
  masterVideoId?: string;
  /** Only videos whose clipId is this. */
  clipId?: string;
  /** INCLUDE (default): clips too; EXCLUDE: no clips; ONLY: clips alone. */
  clipMode?: 'INCLUDE' | 'EXCLUDE' | 'ONLY';
}

/**
 * What counts as a clip: the free clip itself (kind CLIP) and every video processed from a clip
 * (clip_id set). `isClipVideo` and the SQL of `whereClipMode` are the same rule; keep them together.
 */
export function isClipVideo(v: Pick<Video, 'kind' | 'clipId'>): boolean {
  return v.kind === 'CLIP' || v.clipId !== undefined;
}

function whereClipMode(q: Knex.QueryBuilder, mode: VideoListFilter['clipMode']): Knex.QueryBuilder {
  if (mode === 'ONLY')
    return q.where((w) => {
      w.where('videos.kind', 'CLIP').orWhereNotNull('videos.clip_id');
    });
  if (mode === 'EXCLUDE')
    return q.where((w) => {
      w.whereNot('videos.kind', 'CLIP').whereNull('videos.clip_id');
    });
  return q;
}

/**
 * The videos derived from `v`, as a query on `videos`: for a master every video made from it
 * (clips and processed videos); for a clip the processed videos made from it; for any other
 * video nothing.
 */
function derivedQuery(db: Knex, v: Pick<Video, 'id' | 'kind'>): Knex.QueryBuilder {
  const q = db('videos');
  if (v.kind === 'MASTER') return q.where('videos.master_video_id', v.id);
  if (v.kind === 'CLIP') return q.where('videos.clip_id', v.id).where('videos.kind', 'PROCESSED');
  return q.whereRaw('1 = 0');
}

const num = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : Number(v));
const str = (v: Nullable<string> | undefined): string | undefined => (v === null || v === undefined ? undefined : String(v));
/** The common columns of a stage (`upload`, `ingestion`, `processing`, `output`): status, progress, time left, time, error. */
type Stage = 'upload' | 'ingestion' | 'processing' | 'output';

function stageFromRow<S extends Stage>(r: StageRow<S> & { updated_at: DbTimestamp }, stage: S) {
  const code = r[`${stage}_error_code`];
  return {
    status: r[`${stage}_status`] as OperationStatus,
    progress: Number(r[`${stage}_progress`]),
    etaSeconds: num(r[`${stage}_eta_seconds`]),
    updatedAt: asOptionalDate(r[`${stage}_updated_at`]) ?? asDate(r.updated_at),
    error: code ? { code, message: r[`${stage}_error_message`] ?? '' } : undefined,
  };
}

/**
 * A running stage's progress as its columns take it (src/shared/progress-eta.ts estimates): the
 * percentage stays under 100 until the stage is DONE; no estimate yet is a null time left.
 */
export function progressUpdate(e: { fraction: number; etaSeconds?: number }): { progress: number; etaSeconds: number | null } {
  return { progress: Math.min(99, Math.floor(e.fraction * 100)), etaSeconds: e.etaSeconds === undefined ? null : Math.round(e.etaSeconds) };
}

/** The update of a stage's common columns. */
function stagePatch(stage: Stage, u: { status?: OperationStatus; progress?: number; etaSeconds?: number | null; error?: StageError | null }, now: Date) {
  const patch: Record<string, unknown> = { [`${stage}_updated_at`]: now, updated_at: now };
  if (u.status !== undefined) patch[`${stage}_status`] = u.status;
  if (u.progress !== undefined) patch[`${stage}_progress`] = u.progress;
  if (u.etaSeconds !== undefined) patch[`${stage}_eta_seconds`] = u.etaSeconds;
  if (u.error !== undefined) {
    patch[`${stage}_error_code`] = u.error?.code ?? null;
    patch[`${stage}_error_message`] = u.error?.message ?? null;
  }
  return patch;
}

const json = (v: unknown): Record<string, unknown> | undefined => (typeof v === 'string' && v ? (JSON.parse(v) as Record<string, unknown>) : undefined);

/** A `videos` row as the drivers return it (see src/db/store.ts): the video's columns and each stage's. */
export type VideoRow = VideoColumns & StageRow<'upload'> & StageRow<'ingestion'> & StageRow<'processing'> & StageRow<'output'>;

interface VideoColumns {
  id: string;
  kind: VideoKind;
  team_id: string;
  project_id: string;
  user_id: string;
  name: string;
  description: Nullable<string>;
  master_video_id: Nullable<string>;
  source_video_id: Nullable<string>;
  clip_id: Nullable<string>;
  is_sample: DbBool;
  full_ingestion: DbBool;
  blob_key: Nullable<string>;
  file_crc32c: Nullable<DbInt>;
  upload_bytes?: Nullable<DbInt>;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
  file_name: Nullable<string>;
  file_size: Nullable<DbInt>;
  file_type: Nullable<string>;
  file_container: Nullable<string>;
  file_last_modified: Nullable<DbTimestamp>;
  metadata_available: DbBool;
  thumbnails_available: DbBool;
  full_frames_available: DbBool;
  web_video_available: DbBool;
  metadata_json: Nullable<string>;
  quality_json: Nullable<string>;
  probe_json: Nullable<string>;
  processing_start_ms: Nullable<DbInt>;
  processing_end_ms: Nullable<DbInt>;
  processing_options_json: Nullable<string>;
  processing_applied_options_json: Nullable<string>;
  processing_appraisal_json: Nullable<string>;
}

/** The columns every stage has, prefixed with its name. */
type StageRow<S extends Stage> = Record<`${S}_status`, Nullable<OperationStatus>> &
  Record<`${S}_progress` | `${S}_eta_seconds`, Nullable<DbInt>> &
  Record<`${S}_updated_at`, Nullable<DbTimestamp>> &
  Record<`${S}_error_code` | `${S}_error_message`, Nullable<string>>;

export function videoFromRow(r: VideoRow): Video {
  const v: Video = {
    id: r.id,
    kind: r.kind,
    teamId: r.team_id,
    projectId: r.project_id,
    userId: r.user_id,
    name: r.name,
    description: str(r.description),
    masterVideoId: str(r.master_video_id),
    sourceVideoId: str(r.source_video_id),
    clipId: str(r.clip_id),
    isSample: asBool(r.is_sample),
    fullIngestion: asBool(r.full_ingestion),
    blobKey: str(r.blob_key),
    crc32c: num(r.file_crc32c),
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
  if (r.file_name !== null && r.file_name !== undefined) {
    v.file = {
      name: r.file_name,
      size: num(r.file_size) ?? 0,
      type: r.file_type ?? 'application/octet-stream',
      containerName: r.file_container ?? 'unknown',
      lastModified: asOptionalDate(r.file_last_modified) ?? asDate(r.created_at),
    };
  }
  if (r.upload_status) {
    v.upload = { ...stageFromRow(r, 'upload'), bytesTransferred: num(r.upload_bytes) };
  }
  if (r.ingestion_status) {
    v.ingestion = {
      ...stageFromRow(r, 'ingestion'),
      metadataAvailable: asBool(r.metadata_available),
      thumbnailsAvailable: asBool(r.thumbnails_available),
      fullFramesAvailable: asBool(r.full_frames_available),
      webVideoAvailable: asBool(r.web_video_available),
      metadata: json(r.metadata_json),
      quality: json(r.quality_json),
      probe: json(r.probe_json),
    };
  }
  if (r.processing_status) {
    v.processing = {
      ...stageFromRow(r, 'processing'),
      startMs: num(r.processing_start_ms),
      endMs: num(r.processing_end_ms),
      options: json(r.processing_options_json),
      appliedOptions: json(r.processing_applied_options_json),
      appraisal: json(r.processing_appraisal_json),
    };
  }
  if (r.output_status) {
    v.output = stageFromRow(r, 'output');
  }
  return v;
}
const videoRows = rowMapper(videoFromRow);

/** Columns of a file description (video in sets it when the source is probed). */
function fileColumns(file: VideoFileInfo) {
  return {
    file_name: file.name,
    file_size: file.size,
    file_type: file.type,
    file_container: file.containerName,
    file_last_modified: file.lastModified,
  };
}

export interface UploadUpdate {
  status?: OperationStatus;
  progress?: number;
  /** Bytes received so far. */
  bytes?: number;
  etaSeconds?: number | null;
  /** null clears a previous error (restart). */
  error?: StageError | null;
}

export interface IngestionUpdate {
  status?: OperationStatus;
  progress?: number;
  etaSeconds?: number | null;
  error?: StageError | null;
  metadataAvailable?: boolean;
  thumbnailsAvailable?: boolean;
  fullFramesAvailable?: boolean;
  webVideoAvailable?: boolean;
  metadata?: Record<string, unknown> | null;
  quality?: Record<string, unknown> | null;
  probe?: Record<string, unknown> | null;
}

export interface ProcessingUpdate {
  /** What the job applies, once it has planned (replaces what the appraisal planned). */
  appliedOptions?: Record<string, unknown>;
  /** The source range read, once the job knows where its frames really are (the free clip's first and after-last frame). */
  range?: { startMs: number; endMs: number };
  status?: OperationStatus;
  progress?: number;
  etaSeconds?: number | null;
  error?: StageError | null;
}

export interface OutputUpdate {
  status?: OperationStatus;
  progress?: number;
  etaSeconds?: number | null;
  error?: StageError | null;
}

export const videosStore = {
  async insert(db: Knex, v: NewVideo): Promise<void> {
    await db('videos').insert({
      id: v.id,
      kind: v.kind ?? 'MASTER',
      team_id: v.teamId,
      project_id: v.projectId,
      user_id: v.userId,
      name: v.name,
      description: v.description ?? null,
      master_video_id: v.masterVideoId ?? null,
      source_video_id: v.sourceVideoId ?? null,
      clip_id: v.clipId ?? null,
      full_ingestion: v.fullIngestion ?? false,
      blob_key: v.blobKey ?? null,
      ...(v.file ? fileColumns(v.file) : {}),
      upload_status: v.uploadStatus ?? null,
      upload_progress: 0,
      upload_updated_at: v.uploadStatus ? v.createdAt : null,
      ...(v.processing
        ? {
            processing_status: 'INITIAL',
            processing_progress: 0,
            processing_updated_at: v.createdAt,
            processing_start_ms: v.processing.startMs ?? null,
            processing_end_ms: v.processing.endMs ?? null,
            processing_options_json: v.processing.options ? JSON.stringify(v.processing.options) : null,
            processing_applied_options_json: v.processing.appliedOptions ? JSON.stringify(v.processing.appliedOptions) : null,
            processing_appraisal_json: v.processing.appraisal ? JSON.stringify(v.processing.appraisal) : null,
          }
        : {}),
      created_at: v.createdAt,
      updated_at: v.createdAt,
    });
  },

  async existsInProject(db: Knex, projectId: string): Promise<boolean> {
    return Boolean(await db('videos').where({ project_id: projectId }).first('id'));
  },

  async byId(db: Knex, id: string): Promise<Video | undefined> {
    const row = (await db('videos').where({ id }).first()) as VideoRow | undefined;
    return videoRows.one(row);
  },

  /** The video when its team is in scope (member of an API-enabled team, or that team). */
  async byIdInScope(db: Knex, id: string, scope: TeamScope): Promise<Video | undefined> {
    const row = await whereTeamInScope(db, db('videos').where('videos.id', id), 'videos.team_id', scope).first<VideoRow | undefined>('videos.*');
    return videoRows.one(row);
  },

  /** Locks the row for the rest of the transaction (PostgreSQL) and returns it. */
  async byIdForUpdate(trx: Knex, id: string): Promise<Video | undefined> {
    const q = trx('videos').where({ id });
    const row = (await (isPostgres(trx) ? q.forUpdate() : q).first()) as VideoRow | undefined;
    return videoRows.one(row);
  },

  /** A video's stored file (and its description, when given): one statement. */
  async setStored(db: Knex, id: string, stored: StoredVideoFile, now: Date): Promise<void> {
    await db('videos')
      .where({ id })
      .update({
        ...(stored.file ? fileColumns(stored.file) : {}),
        blob_key: stored.blobKey,
        ...(stored.crc32c !== undefined ? { file_crc32c: stored.crc32c } : {}),
        ...(stored.size !== undefined ? { file_size: stored.size } : {}),
        updated_at: now,
      });
  },

  async updateUpload(db: Knex, id: string, u: UploadUpdate, now: Date): Promise<void> {
    await db('videos')
      .where({ id })
      .update({ ...stagePatch('upload', u, now), ...(u.bytes !== undefined ? { upload_bytes: u.bytes } : {}) });
  },

  async updateIngestion(db: Knex, id: string, u: IngestionUpdate, now: Date): Promise<void> {
    const patch = stagePatch('ingestion', u, now);
    if (u.metadataAvailable !== undefined) patch.metadata_available = u.metadataAvailable;
    if (u.thumbnailsAvailable !== undefined) patch.thumbnails_available = u.thumbnailsAvailable;
    if (u.fullFramesAvailable !== undefined) patch.full_frames_available = u.fullFramesAvailable;
    if (u.webVideoAvailable !== undefined) patch.web_video_available = u.webVideoAvailable;
    if (u.metadata !== undefined) patch.metadata_json = u.metadata === null ? null : JSON.stringify(u.metadata);
    if (u.quality !== undefined) patch.quality_json = u.quality === null ? null : JSON.stringify(u.quality);
    if (u.probe !== undefined) patch.probe_json = u.probe === null ? null : JSON.stringify(u.probe);
    await db('videos').where({ id }).update(patch);
  },

  async updateProcessing(db: Knex, id: string, u: ProcessingUpdate, now: Date): Promise<void> {
    const patch = stagePatch('processing', u, now);
    if (u.appliedOptions !== undefined) patch.processing_applied_options_json = JSON.stringify(u.appliedOptions);
    if (u.range !== undefined) Object.assign(patch, { processing_start_ms: u.range.startMs, processing_end_ms: u.range.endMs });
    await db('videos').where({ id }).update(patch);
  },

  async updateOutput(db: Knex, id: string, u: OutputUpdate, now: Date): Promise<void> {
    await db('videos')
      .where({ id })
      .update(stagePatch('output', u, now));
  },

  /** Progress of a running copy out; no effect once the copy has finished or failed. */
  async updateOutputProgress(db: Knex, id: string, u: { progress: number; etaSeconds: number | null }, now: Date): Promise<void> {
    await db('videos')
      .where({ id, output_status: 'IN_PROGRESS' })
      .update(stagePatch('output', u, now));
  },

  /** No copy out any more (a failed one was abandoned): the video shows no `output`. */
  async clearOutput(db: Knex, id: string, now: Date): Promise<void> {
    await db('videos').where({ id }).update({
      output_status: null,
      output_progress: 0,
      output_eta_seconds: null,
      output_updated_at: null,
      output_error_code: null,
      output_error_message: null,
      updated_at: now,
    });
  },

  async byIds(db: Knex, ids: readonly string[]): Promise<Video[]> {
    if (ids.length === 0) return [];
    return videoRows.many(await db('videos').whereIn('id', [...ids]));
  },

  page(db: Knex, scope: TeamScope, filter: VideoListFilter, req: PageRequest): Promise<Page<Video>> {
    let q = whereTeamInScope(db, db('videos'), 'videos.team_id', scope);
    if (filter.projectId) q = q.where('videos.project_id', filter.projectId);
    if (filter.masterVideoId) q = q.where('videos.master_video_id', filter.masterVideoId);
    if (filter.clipId) q = q.where('videos.clip_id', filter.clipId);
    return fetchPage(whereClipMode(q, filter.clipMode), req, videoRows.from, 'videos');
  },

  derivedPage(db: Knex, v: Pick<Video, 'id' | 'kind'>, req: PageRequest): Promise<Page<Video>> {
    return fetchPage(derivedQuery(db, v), req, videoRows.from, 'videos');
  },

  /** Ids of the videos derived from `v`, oldest first. */
  async derivedIds(db: Knex, v: Pick<Video, 'id' | 'kind'>): Promise<string[]> {
    const rows = await derivedQuery(db, v)
      .orderBy([{ column: 'videos.created_at' }, { column: 'videos.id' }])
      .select<{ id: string }[]>('videos.id');
    return rows.map((r) => r.id);
  },

  /** Platform-storage keys the rows of these videos point at: their files and ingestion assets. */
  async blobKeysOf(db: Knex, ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const files = await db('videos')
      .whereIn('id', [...ids])
      .whereNotNull('blob_key')
      .select<{ blob_key: string }[]>('blob_key');
    const assets = await db('video_assets')
      .whereIn('video_id', [...ids])
      .select<{ blob_key: string }[]>('blob_key');
    return [...files, ...assets].map((r) => r.blob_key);
  },

  /** Multipart uploads of video-in copies of these videos that may still hold parts. */
  async uploadsOf(db: Knex, ids: readonly string[]): Promise<UploadDescriptor[]> {
    if (ids.length === 0) return [];
    const rows = await db('video_in_operations')
      .whereIn('video_id', [...ids])
      .whereNotNull('upload_json')
      .select('upload_json');
    return rows.map((r: { upload_json: string }) => JSON.parse(r.upload_json) as UploadDescriptor);
  },

  /** Removes the rows of these videos and of everything stored about them (not their blobs). */
  async deleteWithRecords(db: Knex, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await db('video_in_parts')
      .whereIn('video_id', [...ids])
      .delete();
    await db('video_in_operations')
      .whereIn('video_id', [...ids])
      .delete();
    await db('video_out_parts')
      .whereIn('video_id', [...ids])
      .delete();
    await db('video_out_operations')
      .whereIn('video_id', [...ids])
      .delete();
    await db('video_assets')
      .whereIn('video_id', [...ids])
      .delete();
    await db('videos')
      .whereIn('id', [...ids])
      .delete();
  },

  async rename(db: Knex, id: string, patch: { name?: string; description?: string }, now: Date): Promise<void> {
    await db('videos')
      .where({ id })
      .update({ ...(patch.name !== undefined ? { name: patch.name } : {}), ...(patch.description !== undefined ? { description: patch.description } : {}), updated_at: now });
  },
};
