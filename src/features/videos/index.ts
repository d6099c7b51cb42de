/** Videos: the catalogue, each video's stages and its assets. What other features and the composition root may use. */
export { toJobAppraisalDto } from './appraisal-view';
export type { AppliedOptions, JobAppraisal } from './appraisal-view';
export { mediaStageError, stageError } from './stage-errors';
export { VideoAssetsService, assetPath, recordVideoAsset, videoAssetsOf } from './video-assets.service';
export type { AssetKind, VideoAsset } from './video-assets.store';
export { VideoEvents, ingestionEventsFor, testEventError } from './video-events';
export { derivedVideoIds, findVideo, findVideoInScope, lockVideo } from './video-records';
export { RUNNING, VideoStage, retriesLeft } from './video-stage';
export type { IngestionFacts, StageGuard, VideoStageName } from './video-stage';
export { toVideoDto, toVideoIngestion, toVideoOutput, toVideoProcessing, toVideoUpload } from './video-view';
export { videosHandlers } from './videos.handlers';
export { PURGE_BLOBS_JOB, videosJobs } from './videos.jobs';
export { VideosService } from './videos.service';
export type { OperationStatus, StageError, Video, VideoFileInfo } from './videos.store';
