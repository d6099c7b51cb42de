/**
 * Binds the processing feature's ProcessingEngine to the options -> ffmpeg engine of
 * src/processing, with this installation's ffmpeg capabilities (found once, when first needed).
 */
import type { MediaBinaries } from '../../media';
import {
  buildProcessingPlan,
  EngineCapabilities,
  engineCapabilities,
  estimateProcessing,
  FULL_CAPABILITIES,
  ProcessingOptions,
  ProcessingPlan,
  runProcessing,
  validateOptions,
  ProcessingOptionsError,
} from '../../processing-planner';
import type { EnginePlan, ProcessingEngine } from './engine';

/** Engine errors name fields inside the options; the request names them from its own root. */
function prefixed<T>(prefix: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw err instanceof ProcessingOptionsError ? err.withFieldPrefix(prefix) : err;
  }
}

export class FfmpegProcessingEngine implements ProcessingEngine {
  private capabilities?: EngineCapabilities;

  constructor(private readonly binaries: () => Promise<MediaBinaries>) {}

  async prepare(): Promise<void> {
    this.capabilities ??= await engineCapabilities(await this.binaries());
  }

  validate(options: Record<string, unknown>, fieldPrefix = 'body'): void {
    prefixed(fieldPrefix, () => validateOptions(options as ProcessingOptions, this.capabilities ?? FULL_CAPABILITIES));
  }

  plan(options: Record<string, unknown>, source: Parameters<ProcessingEngine['plan']>[1], range: { startMs: number; endMs: number }): EnginePlan {
    const plan = prefixed('body', () => buildProcessingPlan(options as ProcessingOptions, source, range, { capabilities: this.capabilities ?? FULL_CAPABILITIES }));
    return plan as unknown as EnginePlan;
  }

  estimate(plan: EnginePlan, source: Parameters<ProcessingEngine['estimate']>[1]) {
    return estimateProcessing(plan as unknown as ProcessingPlan, source);
  }

  async run(bins: MediaBinaries, input: string, output: string, plan: EnginePlan, opts: Parameters<ProcessingEngine['run']>[4]): Promise<void> {
    await runProcessing(bins, input, output, plan as unknown as ProcessingPlan, opts);
  }
}
