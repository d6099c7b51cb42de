/** @vidmill/sdk: the typed client, its errors, and the helpers built on it. */
export { createVidmillClient, unwrap } from './client';
export type { VidmillClient, VidmillClientOptions } from './client';
export { VidmillApiError, VidmillNetworkError } from './errors';
export { retryingFetch, retryAfterMs, backoffMs, DEFAULT_RETRIES } from './retry';
export type { RetryOptions, RetryEvent } from './retry';
export { waitFor, stageProgress, VidmillStageFailedError, VidmillWaitTimeoutError, VIDEO_STAGES } from './wait-for';
export type { Video, OperationStatus, VideoStage, StageProgress, StageResult, WaitForOptions } from './wait-for';
export type { components, operations, paths } from './generated/api';
