/**
 * Test support of the video-in feature: what test/, bench/ and scripts/ (the mock server) may use
 * beyond the face (index.ts), and nothing else may import (docs/architecture.md, "Test support
 * entries").
 */
export { classifyHttpsProbeFailure, MAX_VIDEO_BYTES } from './video-in-sources';
export { TUS_PATH } from './video-in.service';
