import type { components } from '../../../generated/api';
import type { HandlerMap } from '../../http/operations';
import { toVideoDto, toVideoProcessing } from '../videos';
import type { Video } from '../videos';
import type { ProcessingService } from './processing.service';

type Schemas = components['schemas'];

function toStatus(v: Video): Schemas['VideoProcessingStatus'] {
  const processing = toVideoProcessing(v);
  return { videoId: v.id, ...(processing?.processingState ? { processingState: processing.processingState } : {}) };
}

const names = (q: { videoName?: string; videoDescription?: string }) => ({ videoName: q.videoName, videoDescription: q.videoDescription });
const range = (q: { startPosMs?: number; endPosMs?: number }) => ({ startPosMs: q.startPosMs, endPosMs: q.endPosMs });

export function processingHandlers(processing: ProcessingService) {
  const appraisalBody = (a: Awaited<ReturnType<ProcessingService['appraise']>>): Schemas['VideoProcessingAppraisal'] => ({
    appraisalId: a.id,
    expiresAt: a.expiresAt.toISOString(),
    video: toVideoDto(a.video, a.source.kind === 'MASTER' ? a.source : undefined),
  });
  return {
    // The options are kept as sent (`sentBody`: without the contract's defaults the validator
    // fills in): `processing.options` shows them unchanged; the applied values are in appliedOptions.
    async createVideoProcessingAppraisal({ principal, path, query, sentBody }) {
      const a = await processing.appraise(principal.userId, path.videoId, { options: sentBody, ...range(query) });
      return { status: 201, body: appraisalBody(a) };
    },
    async createVideoProcessingAppraisalByConfId({ principal, path, query }) {
      const a = await processing.appraise(principal.userId, path.videoId, { confId: path.confId, ...range(query) });
      return { status: 201, body: appraisalBody(a) };
    },
    async acceptVideoProcessingAppraisal({ principal, path, query }) {
      return { status: 202, body: toStatus(await processing.accept(principal.userId, path.videoId, path.appraisalId, names(query))) };
    },
    async startProcessingByVideoId({ principal, path, query, sentBody }) {
      const v = await processing.start(principal.userId, path.videoId, { options: sentBody, ...range(query) }, names(query));
      return { status: 202, body: toStatus(v) };
    },
    async startProcessingByVideoIdAndConfId({ principal, path, query }) {
      const v = await processing.start(principal.userId, path.videoId, { confId: path.confId, ...range(query) }, names(query));
      return { status: 202, body: toStatus(v) };
    },
    async getVideoProcessingStatus({ principal, path }) {
      return { status: 200, body: toStatus(await processing.status(principal.userId, path.videoId)) };
    },
  } satisfies HandlerMap<
    | 'createVideoProcessingAppraisal'
    | 'createVideoProcessingAppraisalByConfId'
    | 'acceptVideoProcessingAppraisal'
    | 'startProcessingByVideoId'
    | 'startProcessingByVideoIdAndConfId'
    | 'getVideoProcessingStatus'
  >;
}
