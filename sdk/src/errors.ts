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
    const b = (typeof body === 'object' && body !== null ? body : {}) as { errorCode?: unknown; message?: unknown };
    const errorCode = typeof b.errorCode === 'string' ? b.errorCode : `HTTP_${response.status}`;
    const message = typeof b.message === 'string' ? b.message : response.statusText || `HTTP ${response.status}`;
    return new VidmillApiError(response.status, errorCode, message, response.headers.get('x-request-id') ?? undefined, body);
  }
}
