/** Video in: HTTPS, bucket and location sources copied to platform storage. What other features and the composition root may use. */
export { videoInCopyJob, videoInGiveUps } from './video-in-copy.job';
export { VideoInSources } from './video-in-sources';
export { toBucketSettings, videoInHandlers } from './video-in.handlers';
export { VIDEO_IN_COPY_JOB, VideoInService } from './video-in.service';
