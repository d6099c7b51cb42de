/** Compare with: the signed comparison link and the page it points at. What the composition root uses. */
export { comparisonHandlers } from './comparison.handlers';
export { ComparisonService } from './comparison.service';
