/**
 * The processing engine: options -> ffmpeg plan (pure), validation, the run, the estimate and
 * the built-in configurations. No HTTP, database or job code: the processing service and job
 * call these. docs/processing.md describes every option.
 */
export * from './options';
export { validateOptions, staticCodec, ProcessingOptionsError } from './validate';
export type { ProcessingIssue, ProcessingErrorCode } from './validate';
export { buildProcessingPlan, processingArgs, analysisArgs, scalerTarget, transformsPath, TRANSFORMS_TOKEN, DEFAULT_CRF } from './plan';
export type { ProcessingPlan, PlanOutput, PlanWork, PlanEnvironment, AppliedNote, Rational, X26xPreset } from './plan';
export { runProcessing, ANALYSIS_SHARE } from './run';
export type { RunProcessingOptions, RunProcessingResult, ProcessingProgress } from './run';
export { estimateProcessing } from './estimate';
export type { ProcessingEstimate } from './estimate';
export { engineCapabilities, availableEncoders, FULL_CAPABILITIES } from './capabilities';
export type { EngineCapabilities } from './capabilities';
export { BUILT_IN_CONFIGURATIONS } from './built-ins';
export type { BuiltInConfiguration } from './built-ins';
export type { ColorSpec } from './colour';
