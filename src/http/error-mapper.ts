/**
 * One error mapper for the whole app: request-validation errors, domain errors (the body parser's
 * and the path check's included) and unexpected errors all become the contract's `Error` body.
 * Unexpected errors are logged with their stack and answered without internals. The mapper never
 * throws: should mapping fail, a minimal JSON 500 is sent, so nothing reaches Express's final
 * handler (which would answer an HTML page with the stack when NODE_ENV is not production).
 */
import type { ErrorRequestHandler, Request, Response } from 'express';
import { DomainError, ValidationIssue } from '../shared/errors';
import { echoText, isSecretField } from '../shared/echoed-value';

export interface ErrorBody {
  timestamp: string;
  requestId: string;
  requestPath: string;
  errorCode: string;
  errorCodeEnum?: string;
  message: string;
  statusCode: number;
  validationErrors?: ValidationIssue[];
  errorDetails?: Record<string, unknown> | null;
}

let documentedCodes = new Set<string>();

/** The documented codes (ErrorCodeEnum) decide when `errorCodeEnum` is present. */
export function setDocumentedErrorCodes(codes: string[]): void {
  documentedCodes = new Set(codes);
}

export type ErrorExtra = { validationErrors?: ValidationIssue[]; errorDetails?: Record<string, unknown>; headers?: Record<string, string> };

/** The contract's `Error` body for this request (also used by the mock server). */
export function errorBody(req: Request, res: Response, status: number, errorCode: string, message: string, extra: ErrorExtra = {}): ErrorBody {
  const requestId = String(res.getHeader('X-Request-Id') ?? '');
  return errorBodyOf({ requestId, requestPath: req.originalUrl.split('?')[0]!, status, errorCode, message, extra });
}

/** The `Error` body from its parts, where there is no Express request (the HTTP parser's errors). */
export function errorBodyOf(p: { requestId: string; requestPath: string; status: number; errorCode: string; message: string; extra?: ErrorExtra }): ErrorBody {
  return {
    timestamp: new Date().toISOString(),
    requestId: p.requestId,
    requestPath: p.requestPath,
    errorCode: p.errorCode,
    ...(documentedCodes.has(p.errorCode) ? { errorCodeEnum: p.errorCode } : {}),
    message: p.message,
    statusCode: p.status,
    ...(p.extra?.validationErrors ? { validationErrors: p.extra.validationErrors } : {}),
    ...(p.extra?.errorDetails ? { errorDetails: p.extra.errorDetails } : {}),
  };
}

export function sendError(req: Request, res: Response, status: number, errorCode: string, message: string, extra: ErrorExtra = {}): void {
  for (const [k, v] of Object.entries(extra.headers ?? {})) res.setHeader(k, v);
  // Sent as a string: error bodies bypass response validation (their shape is checked by tests).
  res
    .status(status)
    .type('application/json')
    .send(JSON.stringify(errorBody(req, res, status, errorCode, message, extra)));
}

export { MAX_ECHOED_VALUE } from '../shared/echoed-value';

/**
 * The rejected value at `parts` (e.g. ['body', 'name']) of `root` as text for
 * `ValidationError.value`: undefined when absent or when the field holds a secret; secret-named
 * fields inside it are redacted at any depth (`echoText`).
 */
export function echoedValue(root: Record<string, unknown>, parts: string[]): string | undefined {
  if (parts.some(isSecretField)) return undefined;
  let cur: unknown = root;
  for (const part of parts) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === undefined) return undefined;
  return echoText(cur); // undefined when not representable (too deep to serialise): not echoed
}

/** The segments of a JSON Pointer (`/body/a~1b` -> ['body', 'a/b']), as the validator reports fields. */
function pointerSegments(pointer: string): string[] {
  return pointer
    .split('/')
    .filter(Boolean)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * What the mapper reads of an express-openapi-validator error (its HttpError subclasses), known by
 * shape: a numeric status and an `errors` list.
 */
interface ValidatorError {
  status: number;
  errors: { path?: string; message?: string }[];
  headers?: { Allow?: string };
}

function isValidatorError(err: unknown): err is ValidatorError {
  return typeof (err as Partial<ValidatorError> | null | undefined)?.status === 'number' && Array.isArray((err as Partial<ValidatorError>).errors);
}

function validationIssues(req: Request, err: ValidatorError): ValidationIssue[] {
  const root: Record<string, unknown> = { body: req.body, query: req.query, path: req.openapi?.pathParams ?? req.params, headers: req.headers };
  return err.errors.map((e) => {
    // The validator names path parameters `params`; the contract calls them `path`.
    const parts = pointerSegments(String(e.path ?? '').replace(/^\/?params\b/, '/path'));
    const value = echoedValue(root, parts);
    return { field: parts.join('.'), ...(value !== undefined ? { value } : {}), message: String(e.message ?? 'is invalid') };
  });
}

/**
 * The message of a 404 for a path nothing serves (the server's and the mock's): outside `/api` it
 * says where API paths are, e.g. `/v1/projects` suggests `/api/v1/projects`.
 */
export function notFoundMessage(method: string, path: string): string {
  if (path === '/api' || path.startsWith('/api/')) return `No such path: ${method} ${path}`;
  if (/^\/v\d+(\/|$)/.test(path)) return `API paths start with /api: did you mean /api${path}?`;
  return `No such path: ${method} ${path}. API paths start with /api (for example /api/v1/account)`;
}

const VALIDATOR_STATUS_CODES: Record<number, [string, string]> = {
  400: ['VALIDATION_ERROR', 'Request validation failed'],
  404: ['NOT_FOUND', 'No such operation'],
  405: ['METHOD_NOT_ALLOWED', 'Method not allowed on this path'],
  413: ['PAYLOAD_TOO_LARGE', 'Request body too large'],
  415: ['UNSUPPORTED_CONTENT_TYPE', 'Request bodies must be sent as application/json'],
};

function mapError(err: unknown, req: Request, res: Response): void {
  if (res.headersSent) {
    req.log?.error({ err }, 'error after the response started');
    res.end();
    return;
  }
  if (err instanceof DomainError) {
    return sendError(req, res, err.status, err.errorCode, err.message, err.details);
  }
  // express-openapi-validator request errors (response errors carry status 500 and fall through)
  const known = isValidatorError(err) && err.status < 500 ? VALIDATOR_STATUS_CODES[err.status] : undefined;
  if (known && isValidatorError(err)) {
    const [code, message] = known;
    if (err.status === 400) {
      return sendError(req, res, 400, code, message, { validationErrors: validationIssues(req, err) });
    }
    if (err.status === 405 && err.headers?.Allow) res.setHeader('Allow', err.headers.Allow);
    return sendError(req, res, err.status, code, err.errors[0]?.message ?? message);
  }
  req.log?.error({ err }, 'unexpected error');
  return sendError(req, res, 500, 'INTERNAL_SERVER_ERROR', 'An unexpected error occurred');
}

export const errorMapper: ErrorRequestHandler = (err, req, res, _next) => {
  try {
    mapError(err, req, res);
  } catch (failure) {
    lastResort(req, res, err, failure);
  }
};

/** When mapping itself failed: log both errors and answer a fixed JSON 500 (or drop the connection). */
function lastResort(req: Request, res: Response, err: unknown, failure: unknown): void {
  try {
    req.log?.error({ err, failure }, 'the error mapper failed');
  } catch {
    // logging must not stop the answer
  }
  try {
    if (res.headersSent) return void res.destroy();
    const body = JSON.stringify(
      errorBodyOf({
        requestId: String(res.getHeader('X-Request-Id') ?? ''),
        requestPath: String(req.originalUrl ?? '').split('?')[0]!,
        status: 500,
        errorCode: 'INTERNAL_SERVER_ERROR',
        message: 'An unexpected error occurred',
      }),
    );
    res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) }).end(body);
  } catch {
    res.destroy();
  }
}
