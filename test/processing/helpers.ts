/** ProbeResults for the pure tests: what probeMedia returns for typical sources, without ffmpeg. */
import type { ProbeResult, VideoMetadata } from '../../src/media';
import { ProcessingOptionsError } from '../../src/processing-planner';

export interface FakeSource {
  width?: number;
  height?: number;
  /** `25:1`, `30000:1001`. */
  rate?: string;
  durationMs?: number;
  /** Display aspect ratio tag (`16:9`, `4:3`). */
  dar?: string;
  scanning?: VideoMetadata['scanning'];
  pixelFormatName?: string;
  bitDepth?: number;
  codecName?: string;
  containerName?: string;
  hasAudio?: boolean;
  /** The video starts this long after the file (another stream first). */
  videoStartMs?: number;
  /** The audio starts this long after the file (default 0, with audio). */
  audioStartMs?: number;
  /** Default CONSTANT. */
  frameRateMode?: 'CONSTANT' | 'VARIABLE';
  /** The probe's HDR10 static metadata. */
  hdr10?: ProbeResult['hdr10'];
  color?: Pick<VideoMetadata, 'colorSpaceName' | 'colorPrimariesName' | 'colorTransferName' | 'colorRangeName'>;
}

export function probeOf(s: FakeSource = {}): ProbeResult {
  const width = s.width ?? 1920;
  const height = s.height ?? 1080;
  const rate = s.rate ?? '25:1';
  const [n, d] = rate.split(':').map(Number);
  const durationMs = s.durationMs ?? 10_000;
  const metadata: VideoMetadata = {
    containerName: s.containerName ?? 'mp4',
    codecName: s.codecName ?? 'h264',
    pixelFormatName: s.pixelFormatName ?? 'yuv420p',
    primaryBitDepth: s.bitDepth ?? 8,
    frameWidth: width,
    frameHeight: height,
    averageFrameRate: { frameRate: Math.round((n! / d!) * 1000) / 1000, rational: rate },
    durationInMillis: durationMs,
    ...(s.dar ? { displayAspectRatio: { tag: s.dar } } : {}),
    ...(s.scanning ? { scanning: s.scanning } : {}),
    ...(s.color ?? {}),
  };
  return {
    metadata,
    durationMs,
    width,
    height,
    hasVideo: true,
    hasAudio: s.hasAudio ?? true,
    fps: n! / d!,
    formatNames: [metadata.containerName!],
    ...(s.videoStartMs ? { videoStartMs: s.videoStartMs } : {}),
    ...((s.hasAudio ?? true) ? { audioStartMs: s.audioStartMs ?? 0 } : {}),
    frameRateMode: s.frameRateMode ?? 'CONSTANT',
    ...(s.hdr10 ? { hdr10: s.hdr10 } : {}),
  };
}

/** Interlaced PAL SD: 720x576, 25 frames/s (50 fields), 16:9 anamorphic, top field first, MPEG-2 in TS. */
export const PAL_SD_INTERLACED: FakeSource = {
  width: 720,
  height: 576,
  rate: '25:1',
  dar: '16:9',
  scanning: { metadata: 'INTERLACED_TOP_FIRST' },
  codecName: 'mpeg2',
  containerName: 'mpegts',
};

/** Runs fn and returns the ProcessingOptionsError it throws (fails when it throws nothing else). */
export function processingError(fn: () => unknown): ProcessingOptionsError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ProcessingOptionsError) return err;
    throw err;
  }
  throw new Error('expected a ProcessingOptionsError, nothing was thrown');
}
