/** Processing: configurations, appraisals, processing jobs. What other features and the composition root may use. */
export { configurationsHandlers } from './configurations.handlers';
export { ConfigurationsService } from './configurations.service';
export type { BuiltInConfiguration } from './configurations.service';
export { FfmpegProcessingEngine } from './engine-adapter';
export { processingHandlers } from './processing.handlers';
export { JOIN_JOB, PROCESS_JOB, SEGMENT_JOB, processingJobs } from './processing.jobs';
export { ProcessingService } from './processing.service';
export { processingPeriodicTasks } from './processing.tasks';
