/**
 * Test support of the processing feature: what test/, bench/ and scripts/ may use beyond the face
 * (index.ts), and nothing else may import (docs/architecture.md, "Test support entries").
 */
export { processingProducts } from './billing-products';
