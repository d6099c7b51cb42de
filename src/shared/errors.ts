/**
 * The domain error family: every error a client can cause carries its HTTP status and a
 * stable errorCode. The HTTP layer's error mapper turns them into the `Error` body.
 */
export interface ValidationIssue {
  field: string;
  value?: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: string,
    message: string,
    readonly details?: { validationErrors?: ValidationIssue[]; errorDetails?: Record<string, unknown>; headers?: Record<string, string> },
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class BadRequestError extends DomainError {
  constructor(errorCode: string, message: string, details?: DomainError['details']) {
    super(400, errorCode, message, details);
  }
}
export class UnauthorizedError extends DomainError {
  constructor(errorCode: string, message: string, details?: DomainError['details']) {
    super(401, errorCode, message, details);
  }
}
export class ForbiddenError extends DomainError {
  constructor(errorCode: string, message: string) {
    super(403, errorCode, message);
  }
}
export class NotFoundError extends DomainError {
  constructor(message: string, errorCode = 'RESOURCE_NOT_FOUND') {
    super(404, errorCode, message);
  }
}
export class ConflictError extends DomainError {
  constructor(errorCode: string, message: string) {
    super(409, errorCode, message);
  }
}
export class PayloadTooLargeError extends DomainError {
  constructor(errorCode: string, message: string) {
    super(413, errorCode, message);
  }
}
export class UnsupportedMediaTypeError extends DomainError {
  constructor(errorCode: string, message: string) {
    super(415, errorCode, message);
  }
}
export class UnprocessableError extends DomainError {
  constructor(errorCode: string, message: string) {
    super(422, errorCode, message);
  }
}
export class TooManyRequestsError extends DomainError {
  /** `retryAfterSeconds` goes out as the `Retry-After` header. */
  constructor(errorCode: string, message: string, retryAfterSeconds: number) {
    super(429, errorCode, message, { headers: { 'Retry-After': String(retryAfterSeconds) } });
  }
}
export class NotImplementedError extends DomainError {
  constructor(errorCode: string, message: string) {
    super(501, errorCode, message);
  }
}
