/**
 * Test support of the api-keys feature: what test/, bench/ and scripts/ may use beyond the face
 * (index.ts), and nothing else may import (docs/architecture.md, "Test support entries").
 */
export { AUTH_CACHE_MS } from './api-keys.service';
