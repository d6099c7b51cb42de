/**
 * What the processing feature needs from the options -> ffmpeg engine (src/processing): an
 * interface, so the service states its needs and composition binds the implementation.
 */
import type { MediaBinaries, ProbeResult } from '../../media';

export interface PlannedOutput {
  width: number;
  height: number;
  /** Duration of the output: from the first frame at or after the range's start to its end. */
  durationMs: number;
  /** Output codec as a product name source (e.g. H264, HEVC, PRORES, DNXHR...). */
  codec: string;
}

export interface EnginePlan {
  container: string;
  fileExtension: string;
  mimeType: string;
  output: PlannedOutput;
  /**
   * The options as applied (resolved), the output they make (the contract's
   * VideoProcessingAppliedOutput shape) and notes on how options were applied (classical
   * equivalents of proprietary filters...).
   */
  applied: {
    options: Record<string, unknown>;
    output: Record<string, unknown>;
    notes: { field: string; requested: string; appliedAs: string; note: string }[];
  };
}

export interface EngineEstimate {
  outputBytes: number;
  computeSeconds: number;
  gigapixels: number;
}

/** How a plan is processed in parallel (segmented processing), when it is. */
export interface EngineSegments {
  /** The segment length the plan was split with. */
  segmentSeconds: number;
  /** Length of each video segment (ms), in output order. */
  durationsMs: number[];
  /** An audio pass runs over the whole range. */
  audio: boolean;
  /** What a segment file is (`.mp4`, `.mov`, `.ts`). */
  segmentExtension: string;
  audioExtension: string;
}

type StepOptions = { signal: AbortSignal; timeoutMs: number; onProgress: (p: { percentage: number }) => void };

export interface ProcessingEngine {
  /** Finds what this installation's ffmpeg can do (once); call before validate/plan. */
  prepare(): Promise<void>;
  /** Throws a 400 DomainError for options that are invalid or not supported here. */
  validate(options: Record<string, unknown>, fieldPrefix?: string): void;
  /**
   * Throws a 400 DomainError for options that do not fit this source. `segmentSeconds` overrides
   * the installation's segment length (the jobs of a split video plan with the length it was split with).
   */
  plan(options: Record<string, unknown>, source: ProbeResult, range: { startMs: number; endMs: number }, settings?: { segmentSeconds?: number }): EnginePlan;
  /** Size, compute time and gigapixels of the output the plan makes. */
  estimate(plan: EnginePlan, source: ProbeResult): EngineEstimate;
  run(
    bins: MediaBinaries,
    input: string,
    output: string,
    plan: EnginePlan,
    opts: { durationMs: number; signal: AbortSignal; timeoutMs: number; onProgress: (p: { percentage: number }) => void },
  ): Promise<void>;
  /** The plan's segments, or undefined when it is processed as one job. */
  segmentsOf(plan: EnginePlan): EngineSegments | undefined;
  /** One video segment of a segmented plan into `output`. */
  runSegment(bins: MediaBinaries, input: string, output: string, plan: EnginePlan, index: number, opts: StepOptions): Promise<void>;
  /** The audio pass of a segmented plan into `output` (only when `segmentsOf(plan).audio`). */
  runAudio(bins: MediaBinaries, input: string, output: string, plan: EnginePlan, opts: StepOptions): Promise<void>;
  /** The join: the segment files in order and the audio pass's file into the output file. */
  join(bins: MediaBinaries, segments: string[], audio: string | undefined, output: string, plan: EnginePlan, opts: StepOptions): Promise<void>;
}
