/**
 * Why a stage of a video failed, as the customer sees it: a fixed code and a fixed, human message
 * per code, shown in the stage's state (`error`) and in its `*.failed` webhook event. Internal
 * detail (ffmpeg's stderr, file paths, host names, exception texts) goes to the log only, never
 * here. docs/video-in.md, docs/ingestion.md, docs/processing.md and docs/video-out.md list the
 * codes; keep them in step with this table.
 */
import { MediaTimeoutError, UnsupportedMediaError } from '../../media';
import { DomainError } from '../../shared/errors';
import type { StageError } from './videos.store';

const ATTEMPTS = 'after several attempts';

export const STAGE_ERRORS = {
  /** The copy into the platform (`upload`, `video_in.failed`). */
  videoIn: {
    CHECKSUM_MISMATCH: 'The copied file does not match the crc32c given when the video was created. Restart with skipChecksumValidation=true to keep the copied file as it is.',
    VIDEO_IN_RESTART_CHECKSUM_MISMATCH: 'After a restart the copied file still does not match the crc32c given. Restart with skipChecksumValidation=true to keep the copied file as it is.',
    SOURCE_CHANGED:
      'The source file changed during the copy (its size, ETag or Last-Modified is no longer the one seen when the copy began); the copy stopped so as not to mix two versions of the file.',
    SOURCE_NOT_ACCESSIBLE: 'The source stopped granting access to the file (HTTP 401, 403, 404 or 410).',
    INVALID_HTTPS_URL: "The source URL's host resolved to a non-public address when the copy connected, or uses http where only https is allowed; nothing was read from it.",
    INVALID_BUCKET_ENDPOINT: "The bucket's endpoint resolved to a non-public address when the copy connected; nothing was read from it.",
    COPY_FAILED: `The copy failed ${ATTEMPTS}: the source or platform storage kept failing, or the worker running it was lost. Restart to resume from the parts already copied.`,
    UPLOAD_EXPIRED: 'The direct upload was not completed before its session expired; the bytes received were removed. Create a new upload to send the file again.',
    UPLOAD_ABANDONED: 'The direct upload was terminated by its client (tus DELETE); the bytes received were removed.',
  },
  /**
   * A direct upload's own failures, recorded as the copy's (`upload`, `video_in.failed`): an
   * upload cannot be restarted (its bytes are removed), so the advice is a new upload.
   */
  videoInUpload: {
    CHECKSUM_MISMATCH:
      'The uploaded file does not match the crc32c given when the upload was created; the bytes received were removed. Create a new upload to send the file again (a direct upload cannot be restarted).',
  },
  /** Ingestion of any video (`ingestion`, `*_ingestion.failed`). */
  ingestion: {
    INGESTION_UNREADABLE_MEDIA: 'The file is not a video ffmpeg can read (no readable video stream).',
    INGESTION_TIMED_OUT: "Reading the video took longer than this installation's time limit.",
    INGESTION_FAILED: `Ingestion failed ${ATTEMPTS}: ffmpeg or platform storage kept failing, or the worker running it was lost.`,
  },
  /** The cut of the free clip (the clip's `processing`, `clip_processing.failed`). */
  clip: {
    MASTER_VIDEO_NOT_AVAILABLE: 'The master video of this clip no longer has its file.',
    CLIP_TIMED_OUT: "Cutting the clip took longer than this installation's time limit.",
    CLIP_PROCESSING_FAILED: `The clip could not be cut ${ATTEMPTS}: ffmpeg or platform storage kept failing, or the worker running it was lost.`,
  },
  /** A processing job (`processing`, `video_processing.failed` / `clip_processing.failed`). */
  processing: {
    SOURCE_VIDEO_NOT_AVAILABLE: 'The source video no longer has its file.',
    PROCESSING_TIMED_OUT: "Processing took longer than this installation's time limit.",
    PROCESSING_FAILED: `Processing failed ${ATTEMPTS}: ffmpeg or platform storage kept failing, or the worker running it was lost.`,
  },
  /** The copy to a bucket (`output`, `video_out.failed`). */
  videoOut: {
    CHECKSUM_MISMATCH: "What was read from platform storage does not match the video's stored CRC-32C; nothing was completed in the bucket. A restart sends every part again.",
    SOURCE_NOT_AVAILABLE: 'The video file could not be read from platform storage.',
    OUTPUT_ACCESS_DENIED:
      'The bucket refused the copy: check the credentials and their permissions (s3:PutObject, s3:ListMultipartUploadParts, s3:AbortMultipartUpload), then restart; the parts sent so far are kept.',
    BUCKET_NOT_FOUND: 'The bucket no longer exists: create it again and restart, or abandon the copy.',
    INVALID_BUCKET_ENDPOINT: "The bucket's endpoint resolved to a non-public address when the copy connected; nothing was sent to it.",
    VIDEO_OUT_BUCKET_UNREACHABLE: `The bucket's endpoint could not be reached ${ATTEMPTS}: check the endpoint and the network, then restart; the parts sent so far are kept.`,
    COPY_FAILED: `The copy to the bucket failed ${ATTEMPTS}: the bucket or platform storage kept failing, or the worker running it was lost. Restart to resume from the parts already sent.`,
  },
} as const;

export type Stage = keyof typeof STAGE_ERRORS;
export type StageErrorCode<S extends Stage> = keyof (typeof STAGE_ERRORS)[S] & string;

/** The code with its fixed message. */
export function stageError<S extends Stage>(stage: S, code: StageErrorCode<S>): StageError {
  return fixed(stage, code);
}

function fixed(stage: Stage, code: string): StageError {
  return { code, message: (STAGE_ERRORS[stage] as Record<string, string>)[code]! };
}

const MEDIA_CODES = {
  ingestion: { timedOut: 'INGESTION_TIMED_OUT', failed: 'INGESTION_FAILED' },
  clip: { timedOut: 'CLIP_TIMED_OUT', failed: 'CLIP_PROCESSING_FAILED' },
  processing: { timedOut: 'PROCESSING_TIMED_OUT', failed: 'PROCESSING_FAILED' },
} as const;

/**
 * A failure of a media stage (ingestion, the clip's cut, processing) as its code: the input is
 * not video, the time limit was hit, or anything else (after the job's attempts). A processing
 * job's `DomainError` (options this installation cannot apply to the source) keeps its own code
 * and message, the ones a request would have been answered with.
 */
export function mediaStageError(stage: keyof typeof MEDIA_CODES, err: unknown): StageError {
  if (stage === 'processing' && err instanceof DomainError) return { code: err.errorCode, message: err.message };
  if (stage === 'ingestion' && err instanceof UnsupportedMediaError) return stageError('ingestion', 'INGESTION_UNREADABLE_MEDIA');
  return fixed(stage, err instanceof MediaTimeoutError ? MEDIA_CODES[stage].timedOut : MEDIA_CODES[stage].failed);
}
