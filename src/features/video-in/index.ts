/** Video in: HTTPS, bucket and location sources copied to platform storage, and direct resumable uploads. What other features and the composition root may use. */
export { VIDEO_IN_COPY_JOB, VIDEO_IN_UPLOAD_FINISH_JOB, videoInJobs } from './video-in.jobs';
export type { VideoInJobDeps } from './video-in.jobs';
export { VideoInSources } from './video-in-sources';
export { toBucketSettings, videoInHandlers } from './video-in.handlers';
export { VideoInService } from './video-in.service';
export { UploadEndpoint } from './upload-endpoint';
export { expireUploads, videoInPeriodicTasks } from './video-in.tasks';
