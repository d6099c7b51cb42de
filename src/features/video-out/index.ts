/** The video-out feature's public face: what other features and the composition root may use. */
export { VIDEO_OUT_ABORT_JOB, VIDEO_OUT_BILL_JOB, VIDEO_OUT_COPY_JOB, videoOutJobs } from './video-out.jobs';
export type { VideoOutJobDeps } from './video-out.jobs';
export { videoOutHandlers } from './video-out.handlers';
export { videoOutPeriodicTasks } from './video-out.tasks';
export { VideoOutService } from './video-out.service';
