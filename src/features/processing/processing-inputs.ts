/** What a processing job reads off its videos: the source's probe facts, the processed range, the events it records. */
import type { ProbeResult } from '../../media';
import { VideoEvents, type Video } from '../videos';

/** The events of a processing job: a clip's processing (of a clip or a video made from one) or a video's. */
export function processingEvents(source: Video | undefined) {
  return source?.kind === 'CLIP' || source?.clipId ? VideoEvents.clipProcessing : VideoEvents.videoProcessing;
}

/** The processed range of a processed video (the whole source by default). */
export function rangeOf(video: Video, probe: ProbeResult): { startMs: number; endMs: number } {
  return { startMs: video.processing?.startMs ?? 0, endMs: video.processing?.endMs ?? probe.durationMs };
}

/** The probe facts ingestion kept, as the engine wants them. */
export function probeOf(v: Video): ProbeResult {
  const p = (v.ingestion?.probe ?? {}) as Partial<ProbeResult>;
  return {
    metadata: v.ingestion?.metadata ?? {},
    durationMs: Number(p.durationMs ?? 0),
    width: Number(p.width ?? 0),
    height: Number(p.height ?? 0),
    hasVideo: true,
    hasAudio: Boolean(p.hasAudio),
    fps: Number(p.fps ?? 0),
    formatNames: (p.formatNames as string[]) ?? [],
    ...(Number(p.videoStartMs) > 0 ? { videoStartMs: Number(p.videoStartMs) } : {}),
    ...(p.audioStartMs !== undefined ? { audioStartMs: Number(p.audioStartMs) } : {}),
    ...(p.frameRateMode === 'CONSTANT' || p.frameRateMode === 'VARIABLE' ? { frameRateMode: p.frameRateMode } : {}),
    ...(p.fileStartMs !== undefined ? { fileStartMs: Number(p.fileStartMs) } : {}),
    ...(p.hdr10 ? { hdr10: p.hdr10 } : {}),
  };
}
