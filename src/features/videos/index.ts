/** Videos: the catalogue, each video's stages and its assets. What other features and the composition root may use. */
export { toJobAppraisalDto } from './appraisal-view';
export type { AppliedOptions, JobAppraisal } from './appraisal-view';
export { mediaStageError, stageError } from './stage-errors';
export { VideoAssetsService, assetPath, recordVideoAsset, videoAssetsOf } from './video-assets.service';
export type { AssetKind, VideoAsset } from './video-assets.store';
export { VideoEvents, ingestionEventsFor } from './video-events';
export { PURGE_BLOBS_JOB, purgeBlobsJob } from './video-purge';
export { toVideoDto, toVideoIngestion, toVideoOutput, toVideoProcessing, toVideoUpload } from './video-view';
export { videosHandlers } from './videos.handlers';
export { VideosService } from './videos.service';
export { IngestionUpdate, OperationStatus, StageError, Video, progressUpdate, videosStore } from './videos.store';
export type { VideoFileInfo } from './videos.store';
