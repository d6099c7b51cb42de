/**
 * Binds the processing feature's ProcessingEngine to the options -> ffmpeg engine of
 * src/processing-planner, with this installation's ffmpeg capabilities (found once, when first
 * needed, from the ffmpeg of the process's MediaBinariesProvider).
 */
import type { MediaBinaries, MediaBinariesProvider } from '../../media';
import {
  buildProcessingPlan,
  EngineCapabilities,
  engineCapabilities,
  estimateProcessing,
  FULL_CAPABILITIES,
  ProcessingOptions,
  ProcessingPlan,
  runAudioPass,
  runJoin,
  runProcessing,
  runSegment,
  SegmentedProcessingPlan,
  validateOptions,
  X26xPreset,
  ProcessingOptionsError,
} from '../../processing-planner';
import type { EnginePlan, EngineSegments, ProcessingEngine } from './engine';

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

  constructor(
    private readonly binaries: Pick<MediaBinariesProvider, 'get'>,
    /** Installation settings: segment length (0: never split), ffmpeg threads (0: ffmpeg's choice), x264/x265 preset. */
    private readonly settings: { segmentSeconds: number; threads: number; encoderPreset: X26xPreset } = { segmentSeconds: 0, threads: 0, encoderPreset: 'medium' },
  ) {}

  async prepare(): Promise<void> {
    this.capabilities ??= await engineCapabilities(await this.binaries.get());
  }

  validate(options: Record<string, unknown>, fieldPrefix = 'body'): void {
    prefixed(fieldPrefix, () => validateOptions(options as ProcessingOptions, this.capabilities ?? FULL_CAPABILITIES));
  }

  plan(options: Record<string, unknown>, source: Parameters<ProcessingEngine['plan']>[1], range: { startMs: number; endMs: number }, settings: { segmentSeconds?: number } = {}): EnginePlan {
    const plan = prefixed('body', () =>
      buildProcessingPlan(options as ProcessingOptions, source, range, {
        capabilities: this.capabilities ?? FULL_CAPABILITIES,
        encoderPreset: this.settings.encoderPreset,
        segmentSeconds: settings.segmentSeconds ?? this.settings.segmentSeconds,
        ...(this.settings.threads > 0 ? { threads: this.settings.threads } : {}),
      }),
    );
    return plan as unknown as EnginePlan;
  }

  estimate(plan: EnginePlan, source: Parameters<ProcessingEngine['estimate']>[1]) {
    return estimateProcessing(plan as unknown as ProcessingPlan, source);
  }

  async run(bins: MediaBinaries, input: string, output: string, plan: EnginePlan, opts: Parameters<ProcessingEngine['run']>[4]): Promise<void> {
    await runProcessing(bins, input, output, plan as unknown as ProcessingPlan, opts);
  }

  segmentsOf(plan: EnginePlan): EngineSegments | undefined {
    const s = (plan as unknown as ProcessingPlan).segmented;
    if (!s) return undefined;
    return {
      segmentSeconds: s.segmentSeconds,
      durationsMs: s.segments.map((x) => Math.round(x.durationS * 1000)),
      audio: Boolean(s.audio),
      segmentExtension: s.segmentExtension,
      audioExtension: s.audio?.extension ?? '.mov',
    };
  }

  async runSegment(bins: MediaBinaries, input: string, output: string, plan: EnginePlan, index: number, opts: Parameters<ProcessingEngine['runSegment']>[5]): Promise<void> {
    await runSegment(bins, input, output, segmented(plan), index, opts);
  }

  async runAudio(bins: MediaBinaries, input: string, output: string, plan: EnginePlan, opts: Parameters<ProcessingEngine['runAudio']>[4]): Promise<void> {
    if (!(await runAudioPass(bins, input, output, segmented(plan), opts))) throw new Error('the plan has no audio pass');
  }

  async join(bins: MediaBinaries, segments: string[], audio: string | undefined, output: string, plan: EnginePlan, opts: Parameters<ProcessingEngine['join']>[5]): Promise<void> {
    await runJoin(bins, segments, audio, output, segmented(plan), opts);
  }
}

function segmented(plan: EnginePlan): SegmentedProcessingPlan {
  const p = plan as unknown as ProcessingPlan;
  if (!p.segmented) throw new Error('the plan is not segmented');
  return p as SegmentedProcessingPlan;
}
