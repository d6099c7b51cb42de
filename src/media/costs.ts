/**
 * Expected cost of each ingestion step, in milliseconds of this development machine (2 cores,
 * shared), from the probe's facts. Only the ratios matter: they weight the steps of the
 * ingestion's progress (src/shared/progress-eta.ts), whose measured rate takes care of the
 * machine's actual speed. Fitted on H.264 + AAC sources from 160x90 (30 s) to 1920x1080 (5 s),
 * measured through the recipes (megapixel-frames = frames x width x height / 10^6):
 *
 * - scanning: `idet` over at most 200 frames (`detectScanning`), 2.5 ms per megapixel-frame;
 * - stills: 5 positions decoded from the keyframe before each (1-s GOPs in the fit; longer GOPs
 *   cost more), at full size and thumbnail, then stored;
 * - web video: decoding every frame (1 ms per megapixel-frame), encoding at most 720 lines
 *   (x264 veryfast, 12 ms per megapixel-frame of the output), the audio (18 ms per second), then
 *   probed and stored;
 * - quality: at most 5 x 24 frames through blurdetect, blockdetect, siti and signalstats,
 *   70 ms per megapixel-frame: the most expensive step from 360 lines up (a 1080p source: about
 *   eight times its web video; 160x90: a quarter).
 */
export interface IngestionCostFacts {
  width: number;
  height: number;
  fps: number;
  durationMs: number;
}

export interface IngestionCosts {
  probe: number;
  scanning: number;
  stills: number;
  webVideo: number;
  quality: number;
}

/**
 * Starting a process and the writes around a step (the metadata, each asset's blob and row),
 * measured through the ingestion job: negligible for long videos, a fifth of a short one.
 */
const START_MS = 250;

export function ingestionCosts(f: IngestionCostFacts): IngestionCosts {
  const megapixels = Math.max(0.001, (f.width * f.height) / 1e6);
  const seconds = Math.max(0.1, f.durationMs / 1000);
  const frames = Math.max(1, seconds * (f.fps > 0 ? f.fps : 25));
  // The web video is at most 1280x720.
  const webMegapixels = Math.min(megapixels, 0.9216);
  return {
    probe: START_MS,
    scanning: START_MS + 2.5 * Math.min(200, frames) * megapixels,
    // Ten images, each stored as a blob and a row.
    stills: START_MS + 150 + 290 * megapixels,
    webVideo: 2 * START_MS + 18 * seconds + 12 * frames * webMegapixels + frames * megapixels,
    quality: 1.5 * START_MS + 70 * Math.min(120, frames) * megapixels,
  };
}
