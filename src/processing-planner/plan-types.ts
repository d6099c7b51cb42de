/** What the planner returns (ProcessingPlan) and what it is told about the installation (PlanEnvironment). */
import type { Scanning } from '../media';
import type { AppliedOutput } from './applied-output';
import type { EngineCapabilities } from './capabilities';
import type { ColorSpec } from './colour';
import type { HdrStaticMetadata } from './hdr-metadata';
import type { BitDepth, ChromaSubsampling, MediaContainer, OutputCodec, ProcessingOptions } from './options';
import type { Rational } from './rational';

export type X26xPreset = 'ultrafast' | 'superfast' | 'veryfast' | 'faster' | 'fast' | 'medium' | 'slow' | 'slower' | 'veryslow';

export interface PlanEnvironment {
  /** This installation's ffmpeg (`engineCapabilities(bins)`); default: everything the engine uses. */
  capabilities?: EngineCapabilities;
  /** libx264/libx265 preset (operator setting; default `medium`). The calibration knows `medium` and `veryfast`. */
  encoderPreset?: X26xPreset;
  /** Split ranges longer than this into segments processed as separate jobs (seconds; 0 or absent: never). */
  segmentSeconds?: number;
  /** ffmpeg threads for decoding, filtering and encoding (operator setting; absent: ffmpeg's own choice). */
  threads?: number;
}

export interface AppliedNote {
  /** Path of the option inside the options object (`filters.scaler`). */
  field: string;
  /** What the options asked for. */
  requested: string;
  /** The ffmpeg filters or settings actually used. */
  appliedAs: string;
  note: string;
}

/** Work the plan makes, for the estimate: pixels per second of media through each costed stage. */
export interface PlanWork {
  /** Calibration key: `decode`, an encoder (`libx264:medium`, `prores_ks`...) or a filter (`nlmeans`, `scale_lanczos`...). */
  key: string;
  /** Pixels per second of output media that pass through the stage (width x height x frames per second at that stage). */
  pixelsPerSecond: number;
  /** Runs in the analysis pass (vidstab detection). */
  analysis?: boolean;
}

export interface PlanOutput {
  width: number;
  height: number;
  /** Sample (pixel) aspect ratio. */
  sar: Rational;
  /** Stored frames per second (an interlaced output stores two fields per frame). */
  fps: Rational;
  scanning: Scanning;
  codec: OutputCodec;
  /** ffmpeg pixel format, e.g. `yuv420p10le`. */
  pixelFormat: string;
  chroma: ChromaSubsampling;
  bitDepth: BitDepth;
  /** Target bitrate in bits/s when the encoder has one (explicit, automatic or fixed by the profile). */
  bitrate?: number;
  /** A constant-quality target instead of a bitrate: libx264/libx265 CRF. */
  crf?: number;
  durationMs: number;
  /** Frames written: duration x fps, rounded. */
  frames: number;
  color: ColorSpec;
  /** HDR10 static metadata written into the stream (HEVC only). */
  hdr?: HdrStaticMetadata;
  /** The profile the encoder writes, as ffprobe names it (none for FFV1). */
  codecProfile?: string;
  /** Where the output starts in the source (ms): the first frame at or after the requested start. */
  startMs: number;
  hasAudio: boolean;
}

export interface ProcessingPlan {
  /** Input options before `-i`: seek and duration of the range. */
  inputArgs: string[];
  /** `-filter_complex` graph from `[0:v:0]` to `[vout]`. May contain the vidstab transform path token. */
  filterGraph: string;
  /** Everything after the video map: audio, codec, profile, pix_fmt, rate control, colour tags, HDR metadata, muxer. */
  outputArgs: string[];
  /** The same processing as segments, an audio pass and a join, when the range is long enough and the plan allows it (segments.ts). */
  segmented?: SegmentedPlan;
  /** ffmpeg threads (PlanEnvironment.threads). */
  threads?: number;
  /** A first pass (vidstab motion detection) whose graph ends in `[vout]` and goes to the null muxer. */
  analysis?: { filterGraph: string };
  container: MediaContainer;
  fileExtension: string;
  mimeType: string;
  output: PlanOutput;
  /** The options as applied, the notes on how, and the output they make (`processing.appliedOptions` is options and output). */
  applied: { options: ProcessingOptions; notes: AppliedNote[]; output: AppliedOutput };
  work: PlanWork[];
}

/** Segmented processing (segments.ts): one segment of the output. */
export interface PlanSegment {
  index: number;
  /** Where the segment starts in the output (seconds from the range's first frame) and its length. */
  startS: number;
  durationS: number;
  /** Input options: seek to the segment's start less its lead-in, and its length with both margins. */
  inputArgs: string[];
  /** The plan's graph, then the cut of the lead-in and tail and the time restarted at 0. */
  filterGraph: string;
}

export interface SegmentedPlan {
  /** The segment length asked for (seconds). */
  segmentSeconds: number;
  segments: PlanSegment[];
  /** Context decoded before and after each segment (seconds; none before the first or after the last). */
  leadInS: number;
  tailS: number;
  /** The boundary grid (seconds). */
  gridS: number;
  /** Everything after the video map of the first segment: no audio, the plan's encoder, the segment's muxer. */
  segmentArgs: string[];
  /** The same for every later segment: x264 codes its first frame (an IDR frame only because of the split) at a P-frame's quality. */
  seamSegmentArgs: string[];
  /** `.mp4`, `.mov` or `.ts`: what a segment file is. */
  segmentExtension: string;
  /** The audio pass over the whole range (input options, then everything after the input); absent without audio. */
  audio?: { inputArgs: string[]; args: string[]; extension: string };
  /** The join's arguments after its inputs (concat list, then the audio): maps, stream copy, tags, the cut and the muxer. */
  joinArgs: string[];
}
