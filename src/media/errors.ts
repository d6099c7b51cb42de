/**
 * Errors of the media module. None of them is a client error by itself: the ingestion job
 * decides what a failure means for the video (an `UnsupportedMediaError` fails the ingestion
 * for good, a `MediaTimeoutError` or `MediaProcessError` may be retried).
 */
export class MediaError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** ffmpeg or ffprobe could not be found, or a configured path does not run. */
export class MediaBinaryError extends MediaError {}

/** A child process exited with a non-zero code (or was killed by a signal we did not send). */
export class MediaProcessError extends MediaError {
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly exitSignal: NodeJS.Signals | null,
    /** The last bytes (about 8 KiB) of the process's stderr. */
    readonly stderrTail: string,
  ) {
    super(message);
  }
}

/** The process ran longer than its time limit and was killed. */
export class MediaTimeoutError extends MediaError {
  constructor(
    message: string,
    readonly timeoutMs: number,
  ) {
    super(message);
  }
}

/** The caller's AbortSignal fired; the process was killed. `cause` is the signal's reason. */
export class MediaAbortedError extends MediaError {}

/** The input is not a video ffprobe can read (unreadable, no video stream, a still image...). */
export class UnsupportedMediaError extends MediaError {}
