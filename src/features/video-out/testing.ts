/**
 * Test support of the video-out feature: what test/, bench/ and scripts/ may use beyond the face
 * (index.ts), and nothing else may import (docs/architecture.md, "Test support entries").
 */
import { videoOutStore } from './video-out.store';

export { classify, lanesFor } from './video-out.jobs';
export { objectKeyFor } from './video-out.service';

/** A served download recorded directly (billed by the download-billing task), without a link or a request. */
export const downloadRows: Pick<typeof videoOutStore, 'recordDownload'> = videoOutStore;
