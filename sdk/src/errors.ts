/** What the API answered when a call failed: the standard `Error` body with its status. */
export class VidmillApiError extends Error {
  override readonly name = 'VidmillApiError';
  constructor(
    /** HTTP status of the answer. */
    readonly status: number,
    /** The `errorCode` of the `Error` body, for example `RESOURCE_NOT_FOUND`. */
    readonly errorCode: string,
    message: string,
    /** `X-Request-Id` of the answer: quote it when asking for support. */
    readonly requestId: string | undefined,
    /** The whole parsed body, when it was JSON. */
    readonly body?: unknown,
  ) {
    super(message);
  }

  /** Builds the error from a failed answer (its body already read as `body`). */
  static fromResponse(response: Response, body: unknown): VidmillApiError {
    const b = (typeof body === 'object' && body !== null ? body : {}) as { errorCode?: unknown; message?: unknown; requestId?: unknown };
    const errorCode = typeof b.errorCode === 'string' ? b.errorCode : `HTTP_${response.status}`;
    const message = typeof b.message === 'string' ? b.message : response.statusText || `HTTP ${response.status}`;
    const requestId = response.headers.get('x-request-id') ?? (typeof b.requestId === 'string' ? b.requestId : undefined);
    return new VidmillApiError(response.status, errorCode, message, requestId, body);
  }
}

/**
 * The server could not be reached (connection refused or reset, DNS failure, timeout) on any
 * attempt. `cause` is the last error of `fetch`; `attempts` how many were made.
 */
export class VidmillNetworkError extends Error {
  override readonly name = 'VidmillNetworkError';
  constructor(
    readonly method: string,
    readonly url: string,
    readonly attempts: number,
    cause: unknown,
  ) {
    super(`${method} ${url} failed after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${describe(cause)}`, { cause });
  }
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const inner = err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return `${err.message}${inner}`;
}
