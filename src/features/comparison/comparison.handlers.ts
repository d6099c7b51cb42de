import type { HandlerMap } from '../../http/operations';
import type { ComparisonService } from './comparison.service';

export function comparisonHandlers(comparison: ComparisonService) {
  return {
    async getVideoComparisonLink({ principal, path }) {
      const { link, leftVideoId, rightVideoId } = await comparison.link(principal.userId, path.videoId, path.targetVideoId);
      return { status: 200, body: { link, leftVideoId, rightVideoId } };
    },
  } satisfies HandlerMap<'getVideoComparisonLink'>;
}
