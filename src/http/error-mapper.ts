/**
 * One error mapper for the whole API: request-validation errors, body-parser errors, domain
 * errors and unexpected errors all become the contract's `Error` body. Unexpected errors are
 * logged with their stack and answered without internals.
 */
import type { ErrorRequestHandler, Request, Response } from 'express';
import { DomainError, ValidationIssue } from '../shared/errors';

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
  return {
    timestamp: new Date().toISOString(),
    requestId: String(res.getHeader('X-Request-Id') ?? ''),
    requestPath: req.originalUrl.split('?')[0],
    errorCode,
    ...(documentedCodes.has(errorCode) ? { errorCodeEnum: errorCode } : {}),
    message,
    statusCode: status,
    ...(extra.validationErrors ? { validationErrors: extra.validationErrors } : {}),
    ...(extra.errorDetails ? { errorDetails: extra.errorDetails } : {}),
  };
}

export function sendError(req: Request, res: Response, status: number, errorCode: string, message: string, extra: ErrorExtra = {}): void {
  for (const [k, v] of Object.entries(extra.headers ?? {})) res.setHeader(k, v);
  // Sent as a string: error bodies bypass response validation (their shape is checked by tests).
  res.status(status).type('application/json').send(JSON.stringify(errorBody(req, res, status, errorCode, message, extra)));
}

/** Rejected values are echoed back shortened, and never for fields that hold secrets. */
export const MAX_ECHOED_VALUE = 256;
const SECRET_FIELD = /secret|password|accesskey|apikey|token|authorization/i;

/**
 * The rejected value at `parts` (e.g. ['body', 'name']) of `root` as text for
 * `ValidationError.value`: undefined when absent or when the field holds a secret.
 */
export function echoedValue(root: Record<string, unknown>, parts: string[]): string | undefined {
  if (parts.some((p) => SECRET_FIELD.test(p))) return undefined;
  let cur: any = root;
  for (const part of parts) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = cur[part];
  }
  if (cur === undefined) return undefined;
  const text = typeof cur === 'string' ? cur : (JSON.stringify(cur) ?? '');
  return text.length > MAX_ECHOED_VALUE ? text.slice(0, MAX_ECHOED_VALUE) + '…' : text;
}

function validationIssues(req: Request, err: any): ValidationIssue[] {
  const root = { body: req.body, query: req.query, path: (req as any).openapi?.pathParams ?? req.params, headers: req.headers };
  return (err.errors ?? []).map((e: any) => {
    // The validator names path parameters `params`; the contract calls them `path`.
    const parts = String(e.path ?? '')
      .replace(/^\/?params\b/, '/path')
      .split('/')
      .filter(Boolean)
      .map(decodeURIComponent);
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

/** Whether the request carries a body at all (a missing body is not a content-type problem). */
export function hasBody(req: Request): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
}

const VALIDATOR_STATUS_CODES: Record<number, [string, string]> = {
  400: ['VALIDATION_ERROR', 'Request validation failed'],
  404: ['NOT_FOUND', 'No such operation'],
  405: ['METHOD_NOT_ALLOWED', 'Method not allowed on this path'],
  413: ['PAYLOAD_TOO_LARGE', 'Request body too large'],
  415: ['UNSUPPORTED_CONTENT_TYPE', 'Request bodies must be sent as application/json'],
};

export const errorMapper: ErrorRequestHandler = (err, req, res, _next) => {
  if (res.headersSent) {
    req.log?.error({ err }, 'error after the response started');
    res.end();
    return;
  }
  if (err instanceof DomainError) {
    return sendError(req, res, err.status, err.errorCode, err.message, err.details);
  }
  // body-parser
  if (err?.type === 'entity.parse.failed') {
    return sendError(req, res, 400, 'INVALID_REQUEST_BODY', 'The request body is not valid JSON');
  }
  if (err?.type === 'entity.too.large') {
    return sendError(req, res, 413, 'PAYLOAD_TOO_LARGE', `The request body exceeds ${err.limit} bytes`);
  }
  if (err?.type === 'charset.unsupported' || err?.type === 'encoding.unsupported') {
    return sendError(req, res, 415, 'UNSUPPORTED_CONTENT_TYPE', err.message);
  }
  // express-openapi-validator request errors (response errors carry status 500 and fall through)
  const known = typeof err?.status === 'number' && err.status < 500 ? VALIDATOR_STATUS_CODES[err.status] : undefined;
  if (known && Array.isArray(err.errors)) {
    const [code, message] = known;
    if (err.status === 415 && !hasBody(req)) {
      return sendError(req, res, 400, 'MISSING_REQUEST_BODY', 'This operation requires a JSON request body');
    }
    if (err.status === 400) {
      return sendError(req, res, 400, code, message, { validationErrors: validationIssues(req, err) });
    }
    if (err.status === 405 && err.headers?.Allow) res.setHeader('Allow', err.headers.Allow);
    return sendError(req, res, err.status, code, err.errors[0]?.message ?? message);
  }
  req.log?.error({ err }, 'unexpected error');
  return sendError(req, res, 500, 'INTERNAL_SERVER_ERROR', 'An unexpected error occurred');
};
