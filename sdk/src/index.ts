/** @vidmill/sdk: the typed client, its errors, and the helpers built on it. */
export { createVidmillClient, unwrap } from './client';
export type { VidmillClient, VidmillClientOptions } from './client';
export { VidmillApiError } from './errors';
export type { components, operations, paths } from './generated/api';
export { uploadFile, fileResumeStore, memoryResumeStore, uploadFingerprint } from './upload-file';
export type { UploadFileOptions, ResumeStore, StoredUpload } from './upload-file';
