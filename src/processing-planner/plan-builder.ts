/**
 * The state a plan is built in: the options, the source and the installation's capabilities, the
 * filter chain growing stage by stage, the analysis chain, the work for the estimate, the options
 * as applied, the notes and the issues found. `Geometry` is the picture between two stages.
 */
import type { EngineCapabilities } from './capabilities';
import { IssueList } from './errors';
import { cloneOptions, type ProcessingOptions } from './options';
import type { AppliedNote, PlanWork } from './plan-types';
import { value, type Rational } from './rational';
import type { SourceFacts } from './source-facts';

/** A size rounded to an even number of pixels (at least 2). */
export const even = (x: number) => Math.max(2, 2 * Math.round(x / 2));
/** A size or offset rounded down to an even number of pixels (at least 0). */
export const evenDown = (x: number) => Math.max(0, 2 * Math.floor(x / 2));

export interface Geometry {
  width: number;
  height: number;
  sar: Rational;
  fps: Rational;
}

export class PlanBuilder {
  readonly issues = new IssueList();
  readonly notes: AppliedNote[] = [];
  readonly chain: string[] = [];
  /** The filters that change geometry or timing (deinterlace, crop, prescale), for the analysis pass. */
  readonly geometryChain: string[] = [];
  readonly work: PlanWork[] = [];
  /** The analysis pass: the geometry filters before the stabilizer, then vidstabdetect. */
  analysisChain: string[] | undefined;
  readonly applied: ProcessingOptions;

  constructor(
    readonly options: ProcessingOptions,
    readonly src: SourceFacts,
    readonly caps: EngineCapabilities,
  ) {
    this.applied = cloneOptions(options) ?? {};
  }

  note(field: string, requested: string, appliedAs: string, note: string): void {
    this.notes.push({ field, requested, appliedAs, note });
  }

  add(filter: string, work?: { key: string; g: Geometry }, geometric = false): void {
    this.chain.push(filter);
    if (geometric) this.geometryChain.push(filter);
    if (work) this.work.push({ key: work.key, pixelsPerSecond: work.g.width * work.g.height * value(work.g.fps) });
  }

  has(filter: string): boolean {
    return this.caps.filters.has(filter);
  }
}
