/**
 * How a domain `Video` is shown on the wire (the contract's `Video` and its parts). Used by
 * handlers only: the videos API here, and the status operations of video in, processing and
 * video out, which reuse `toVideoUpload` / `toVideoIngestion` / `toVideoOutput`.
 */
import type { components } from '../../../generated/api';
import type { OperationStatus, StageError, Video, VideoFileInfo } from './videos.store';
import { isClipVideo } from './videos.store';
import { toJobAppraisalDto } from './appraisal-view';

type Schemas = components['schemas'];
export type VideoDto = Schemas['Video'];

const inFlight = (s: OperationStatus | undefined) => s === 'INITIAL' || s === 'IN_PROGRESS';

/** Seconds left of a stage: 0 once it has finished; while it runs, only when measured (src/shared/progress-eta.ts). */
function etaOf(stage: { status: OperationStatus; etaSeconds?: number }): number | undefined {
  return stage.status === 'DONE' || stage.status === 'FAILED' ? 0 : stage.etaSeconds;
}

/** Why a stage failed, on the wire; a FAILED stage with nothing recorded says so. */
function toStageError(status: OperationStatus, e: StageError | undefined): Schemas['StageError'] | undefined {
  if (status !== 'FAILED') return undefined;
  const { code, message } = e ?? { code: 'UNKNOWN', message: 'The stage failed for a reason that was not recorded.' };
  return { errorCode: code, message };
}

/** The processing state of a video (the free clip's cut, processing jobs), if it has one. */
export function processingStatusOf(v: Video): OperationStatus | undefined {
  return v.processing?.status;
}

/** How a derived video was made: state and source range (options arrive with processing jobs). */
export function toVideoProcessing(v: Video): Schemas['VideoProcessing'] | undefined {
  const p = v.processing;
  if (!p) return undefined;
  const eta = etaOf(p);
  const error = toStageError(p.status, p.error);
  const source = v.sourceVideoId
    ? {
        sourceVideo: {
          videoId: v.sourceVideoId,
          ...(p.startMs !== undefined ? { startPositionMilliseconds: p.startMs } : {}),
          ...(p.endMs !== undefined ? { endPositionMilliseconds: p.endMs } : {}),
        },
      }
    : {};
  const notes = (p.appraisal as { notes?: Schemas['AppliedOptionNote'][] } | undefined)?.notes;
  return {
    ...(p.options ? { options: p.options } : {}),
    ...(p.appliedOptions ? { appliedOptions: p.appliedOptions } : {}),
    ...(notes ? { appliedNotes: notes } : {}),
    processingState: {
      updatedAt: p.updatedAt.toISOString(),
      ...(eta !== undefined ? { etaSeconds: eta } : {}),
      processingStatus: p.status,
      progressPercentage: p.progress,
      ...(error ? { error } : {}),
    },
    ...source,
  };
}

export function toVideoFile(f: VideoFileInfo): Schemas['VideoFile'] {
  return { name: f.name, size: f.size, type: f.type, containerName: f.containerName, lastModified: f.lastModified.toISOString() };
}

/** Source file and copy state; masters only (undefined for derived videos). */
export function toVideoUpload(v: Video): Schemas['VideoUpload'] | undefined {
  if (v.kind !== 'MASTER' || (!v.upload && !v.file)) return undefined;
  const out: Schemas['VideoUpload'] = {};
  if (v.file) out.file = toVideoFile(v.file);
  if (v.upload) {
    const eta = etaOf(v.upload);
    // A finished copy has received the whole file, whatever the last progress write said.
    const bytes = v.upload.status === 'DONE' && v.file ? v.file.size : v.upload.bytesTransferred;
    out.uploadState = {
      updatedAt: v.upload.updatedAt.toISOString(),
      uploadStatus: v.upload.status,
      progressPercentage: v.upload.progress,
      ...(bytes !== undefined ? { bytesTransferred: bytes } : {}),
      ...(eta !== undefined ? { etaSeconds: eta } : {}),
    };
    const error = toStageError(v.upload.status, v.upload.error);
    if (error) out.uploadState.error = { ...error, code: error.errorCode };
  }
  return out;
}

/** Ingestion state, metadata and quality; undefined until ingestion begins. */
export function toVideoIngestion(v: Video): Schemas['VideoIngestion'] | undefined {
  const i = v.ingestion;
  if (!i) return undefined;
  const eta = etaOf(i);
  const error = toStageError(i.status, i.error);
  return {
    ingestionState: {
      updatedAt: i.updatedAt.toISOString(),
      ...(eta !== undefined ? { etaSeconds: eta } : {}),
      ingestionStatus: i.status,
      webVideoAvailable: i.webVideoAvailable,
      thumbnailsAvailable: i.thumbnailsAvailable,
      fullFramesAvailable: i.fullFramesAvailable,
      videoMetadataAvailable: i.metadataAvailable,
      progressPercentage: i.progress,
      ...(error ? { error } : {}),
    },
    metadata: i.metadata ?? {},
    qualityAssessment: i.quality ?? { metrics: [] },
  };
}

/** The latest copy out of the platform (video out); undefined when there is none. */
export function toVideoOutput(v: Video): Schemas['VideoOutput'] | undefined {
  const o = v.output;
  if (!o) return undefined;
  const error = toStageError(o.status, o.error);
  const eta = etaOf(o);
  return {
    state: {
      updatedAt: o.updatedAt.toISOString(),
      status: o.status,
      progressPercentage: o.progress,
      ...(eta !== undefined ? { etaSeconds: eta } : {}),
      ...(error ? { errorMessage: `${error.errorCode}: ${error.message}`, error } : {}),
    },
  };
}

/** The flags, computed from the state every time so they cannot drift from it. */
export function videoFlags(v: Video): Schemas['VideoFlags'] {
  const processing = processingStatusOf(v);
  return {
    isMaster: v.kind === 'MASTER',
    isProcessing: inFlight(processing),
    isProcessed: processing === 'DONE',
    isIngesting: inFlight(v.ingestion?.status) || inFlight(v.upload?.status),
    isIngested: v.ingestion?.status === 'DONE',
    isClip: isClipVideo(v),
    isSample: v.isSample,
  };
}

/** The master shown on a derived video (needs the master's file). */
function toMasterVideo(m: Video | undefined): Schemas['MasterVideo'] | undefined {
  if (!m?.file) return undefined;
  return { id: m.id, createdAt: m.createdAt.toISOString(), updatedAt: m.updatedAt.toISOString(), videoFile: toVideoFile(m.file) };
}

export function toVideoDto(v: Video, master?: Video): VideoDto {
  const upload = toVideoUpload(v);
  const ingestion = toVideoIngestion(v);
  const processing = toVideoProcessing(v);
  const output = toVideoOutput(v);
  const masterVideo = v.kind === 'MASTER' ? undefined : toMasterVideo(master);
  return {
    id: v.id,
    createdAt: v.createdAt.toISOString(),
    updatedAt: v.updatedAt.toISOString(),
    userId: v.userId,
    name: v.name,
    ...(v.description !== undefined ? { description: v.description } : {}),
    teamId: v.teamId,
    ...(upload ? { upload } : {}),
    ...(ingestion ? { ingestion } : {}),
    ...(processing ? { processing } : {}),
    projectId: v.projectId,
    ...(masterVideo ? { masterVideo } : {}),
    flags: videoFlags(v),
    ...(v.processing?.appraisal ? { processingJobAppraisal: toJobAppraisalDto(v.processing.appraisal) } : {}),
    ...(v.clipId !== undefined ? { clipId: v.clipId } : {}),
    ...(output ? { output } : {}),
  };
}
