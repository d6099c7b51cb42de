/**
 * What the processing feature needs from the options -> ffmpeg engine (src/processing): an
 * interface, so the service states its needs and composition binds the implementation.
 */
import type { MediaBinaries, ProbeResult } from '../../media';

export interface PlannedOutput {
  width: number;
  height: number;
  /** Output codec as a product name source (e.g. H264, HEVC, PRORES, DNXHR...). */
  codec: string;
}

export interface EnginePlan {
  container: string;
  fileExtension: string;
  mimeType: string;
  output: PlannedOutput;
  /** The options as applied, with notes on classical equivalents of proprietary filters. */
  applied: Record<string, unknown>;
}

export interface EngineEstimate {
  outputBytes: number;
  computeSeconds: number;
  gigapixels: number;
}

export interface ProcessingEngine {
  /** Finds what this installation's ffmpeg can do (once); call before validate/plan. */
  prepare(): Promise<void>;
  /** Throws a 400 DomainError for options that are invalid or not supported here. */
  validate(options: Record<string, unknown>, fieldPrefix?: string): void;
  /** Throws a 400 DomainError for options that do not fit this source. */
  plan(options: Record<string, unknown>, source: ProbeResult, range: { startMs: number; endMs: number }): EnginePlan;
  estimate(plan: EnginePlan, source: ProbeResult, range: { startMs: number; endMs: number }): EngineEstimate;
  run(
    bins: MediaBinaries,
    input: string,
    output: string,
    plan: EnginePlan,
    opts: { durationMs: number; signal: AbortSignal; timeoutMs: number; onProgress: (p: { percentage: number }) => void },
  ): Promise<void>;
}
