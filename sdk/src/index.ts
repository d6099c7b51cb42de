/** @vidmill/sdk: the typed client, its errors, and the helpers built on it. */
export { createVidmillClient, unwrap } from './client';
export type { VidmillClient, VidmillClientOptions } from './client';
export { VidmillApiError, VidmillNetworkError } from './errors';
export { retryingFetch, retryAfterMs, backoffMs, DEFAULT_RETRIES } from './retry';
export type { RetryOptions, RetryEvent } from './retry';
export { waitFor, stageProgress, VidmillStageFailedError, VidmillWaitTimeoutError, VIDEO_STAGES } from './wait-for';
export type { Video, OperationStatus, VideoStage, StageProgress, StageResult, WaitForOptions } from './wait-for';
export type { components, operations, paths } from './generated/api';
export { pages, paginate, listAll } from './pages';
export type { PageOf, ListPath, ListItem, ListOptions } from './pages';
export { verifyWebhook, webhookKeyCacheFor, WebhookVerificationError, WEBHOOK_SIGNATURE_ALGORITHM, DEFAULT_WEBHOOK_TOLERANCE_SECONDS } from './verify-webhook';
export type { VerifyWebhookOptions, WebhookHeaders, WebhookEventPayload, WebhookVerificationFailure } from './verify-webhook';
export { WebhookKeyCache } from './webhook-key-cache';
export type { WebhookKeyCacheOptions, FetchWebhookKey, WebhookPublicKey, KeyLookup } from './webhook-key-cache';
export { uploadFile, fileResumeStore, memoryResumeStore, uploadFingerprint, UploadSessionUnreachableError } from './upload-file';
export type { UploadFileOptions, ResumeStore, StoredUpload } from './upload-file';
