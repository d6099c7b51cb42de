/** The video-out feature's public face: what other features and the composition root may use. */
export { videoOutJobs } from './video-out.jobs';
export type { VideoOutJobDeps } from './video-out.jobs';
export { videoOutHandlers } from './video-out.handlers';
export { videoOutPeriodicTasks } from './video-out.tasks';
export { VIDEO_OUT_ABORT_JOB, VIDEO_OUT_BILL_JOB, VIDEO_OUT_COPY_JOB, VideoOutService } from './video-out.service';
