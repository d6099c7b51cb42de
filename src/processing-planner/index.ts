/**
 * The processing engine: options -> ffmpeg plan (pure), validation, the run, the estimate and
 * the built-in configurations. No HTTP, database or job code: the processing service and job
 * call these. docs/processing.md describes every option.
 */
export * from './options';
export { validateOptions, staticCodec, ProcessingOptionsError } from './validate';
export type { ProcessingIssue, ProcessingErrorCode } from './validate';
export { buildProcessingPlan } from './plan';
export { processingArgs, analysisArgs, segmentArgs, audioPassArgs, joinArgs, transformsPath, TRANSFORMS_TOKEN } from './ffmpeg-args';
export { scalerTarget } from './scaler';
export { DEFAULT_CRF } from './output-args';
export type { ProcessingPlan, PlanOutput, PlanWork, PlanEnvironment, AppliedNote, X26xPreset } from './plan-types';
export type { Rational } from './rational';
export { runProcessing, runSegment, runAudioPass, runJoin, ANALYSIS_SHARE } from './run';
export { MAX_SPLIT_AV_START_OFFSET_MS } from './segments';
export type { SegmentedProcessingPlan } from './run';
export type { SegmentedPlan, PlanSegment } from './plan-types';
export type { RunProcessingOptions, RunProcessingResult, ProcessingProgress } from './run';
export { estimateProcessing } from './estimate';
export { checkerExpectation } from './applied-output';
export type { ProcessingEstimate } from './estimate';
export { engineCapabilities, availableEncoders, FULL_CAPABILITIES } from './capabilities';
export type { EngineCapabilities } from './capabilities';
export { BUILT_IN_CONFIGURATIONS } from './built-ins';
export type { BuiltInConfiguration } from './built-ins';
export type { ColorSpec } from './colour';
