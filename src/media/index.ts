/**
 * The media module: ffmpeg/ffprobe resolution, the child-process runner, probing and the
 * ingestion recipes. No HTTP, database or job code: the ingestion job calls these.
 */
export { resolveMediaBinaries, MediaBinariesProvider, mediaReadiness, availableFilters, parseVersionLine } from './binaries';
export type { MediaBinaries, BinarySource, ResolveMediaBinariesOptions } from './binaries';
export { MediaError, MediaBinaryError, MediaProcessError, MediaTimeoutError, MediaAbortedError, UnsupportedMediaError } from './errors';
export { runMedia } from './runner';
export type { MediaProgress, RunMediaOptions, RunMediaResult } from './runner';
export { probeMedia, detectScanning, countVideoPackets, storedProbeFacts } from './probe';
export type { ProbeResult, ProbeOptions, DetectScanningOptions, VideoMetadata, AspectRatio, FrameRate, VideoScanning, Scanning, Hdr10Metadata, MasteringDisplayMetadata } from './probe';
export { makeThumbnails, makeFullFrames, makeThumbnailsAndFrames, makeWebVideo, assessQuality, MAX_FULL_FRAMES, QUALITY_SCALE } from './recipes';
export type { StillImage, ThumbnailOptions, FullFrameOptions, StillsOptions, WebVideoOptions, QualityOptions, QualityMetric, VideoQualityAssessment } from './recipes';
export { imageFileInfo } from './images';
export { ingestionCosts } from './costs';
export type { IngestionCosts, IngestionCostFacts } from './costs';
export { cutClip, clipSampleEntry, clipWindow, clipContainer, planClipCut, concatDemuxerList, CLIP_MS } from './clip';
export type { CutClipOptions, ClipResult, ClipCutPlan, ClipSegment, VideoPacket } from './clip';
export { AUDIO_CONTENT_TOLERANCE_S, checkOutput } from './output-check';
export type { OutputCheckExpectation, OutputCheckReport } from './output-check';
