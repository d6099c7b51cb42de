/**
 * Request bodies of the API: reading and parsing JSON, and the rules about the body as a whole,
 * each answered with the `Error` body and a precise errorCode:
 *
 * - no bytes at all (no Content-Length and no Transfer-Encoding, `Content-Length: 0`, or an empty
 *   chunked body) is no body: nothing is parsed, `req.body` stays undefined, and an operation
 *   whose contract says `requestBody.required` answers `400 MISSING_REQUEST_BODY`
 *   (`requireBody`, one check for every operation, before request validation);
 * - a body on an operation whose contract declares none (any Content-Type, JSON included):
 *   `415 UNEXPECTED_REQUEST_BODY` (`refuseBody`, the same place), so nothing a client sends is
 *   silently dropped;
 * - larger than the limit: `413 PAYLOAD_TOO_LARGE` (counted after decompression);
 * - not JSON, or a body that does not decode with its Content-Encoding: `400 INVALID_REQUEST_BODY`;
 * - nested deeper than `MAX_BODY_DEPTH`: `400 REQUEST_BODY_TOO_DEEP`;
 * - a Content-Encoding other than identity, gzip, deflate or br: `415 UNSUPPORTED_CONTENT_ENCODING`;
 *   a charset that is not UTF-8/16/32: `415 UNSUPPORTED_CONTENT_TYPE`.
 *
 * The raw bytes are kept as `req.rawBody`.
 */
import express, { Request, RequestHandler } from 'express';
import { BadRequestError, DomainError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../shared/errors';
import { contractOperationObjects } from './operations';

/**
 * Deepest nesting of arrays and objects accepted in a body (`{}` is 1). The contract's bodies
 * need far less (a test checks); the limit keeps recursive code from running out of stack.
 */
export const MAX_BODY_DEPTH = 32;

/** Whether the request announces body bytes (a Content-Length above 0, or Transfer-Encoding). */
export function hasBody(req: Request): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
}

/** Whether the request came without a body: nothing announced, or nothing in it. */
export function bodyIsMissing(req: Request): boolean {
  const raw = req.rawBody;
  return raw === undefined ? !hasBody(req) : raw.length === 0;
}

/** Whether `value` nests arrays and objects deeper than `max` (iterative: no recursion). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** The parser's failures as the API's errors; anything else stays an unexpected error. */
/** What body-parser's errors carry (http-errors with its fields). */
interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
  charset?: string;
  encoding?: string;
}

function bodyError(error: unknown, req: Request): unknown {
  const err = error as BodyParserError | null | undefined;
  switch (err?.type) {
    case 'entity.parse.failed':
      return new BadRequestError('INVALID_REQUEST_BODY', 'The request body is not valid JSON');
    case 'entity.too.large':
      return new PayloadTooLargeError('PAYLOAD_TOO_LARGE', `The request body exceeds ${err.limit} bytes`);
    case 'request.size.invalid':
      return new BadRequestError('INVALID_REQUEST_BODY', 'The request body does not have the length its Content-Length announces');
    case 'request.aborted':
      return new BadRequestError('INVALID_REQUEST_BODY', 'The request body was cut short');
    case 'charset.unsupported':
      return new UnsupportedMediaTypeError('UNSUPPORTED_CONTENT_TYPE', `Unsupported charset "${err.charset}"; send JSON as UTF-8`);
    case 'encoding.unsupported':
      return new UnsupportedMediaTypeError('UNSUPPORTED_CONTENT_ENCODING', `Unsupported Content-Encoding "${err.encoding}"; use identity, gzip, deflate or br`);
  }
  // The decompression stream's own error (zlib's "incorrect header check", brotli's
  // "Decompression failed", a cut stream...) is passed on with status 400 and no type.
  const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (err?.status === 400 && err.type === undefined && encoding !== 'identity') {
    return new BadRequestError('INVALID_REQUEST_BODY', `The request body is not valid ${encoding} data`);
  }
  return error;
}

/** The JSON parser of the API (body-parser), for requests that announce a body. */
export function jsonBody(limitBytes: number): RequestHandler {
  const parse = express.json({
    limit: limitBytes,
    type: ['application/json', 'application/*+json'],
    verify: (req, _res, buf) => {
      (req as Request).rawBody = buf; // body-parser types its `verify` request as Node's IncomingMessage
    },
  });
  return (req, res, next) => {
    if (!hasBody(req)) return next();
    parse(req, res, (err?: unknown) => {
      if (err) return next(bodyError(err, req));
      if (bodyIsMissing(req))
        req.body = undefined; // body-parser reads an empty body as {}
      else if (nestedDeeperThan(req.body, MAX_BODY_DEPTH)) {
        return next(new BadRequestError('REQUEST_BODY_TOO_DEEP', `The request body nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels`));
      }
      next();
    });
  };
}

/**
 * `400 MISSING_REQUEST_BODY` for an operation whose contract requires a body when the request has
 * none. Runs after the validator has resolved the operation (`req.openapi`) and before it
 * validates the request, so it is one check for every operation.
 */
export function requireBody(contract: unknown): RequestHandler {
  const required = new Set<string>();
  for (const op of contractOperationObjects(contract)) {
    // Request bodies are written inline in openapi/; a $ref here would hide `required`.
    if (op.requestBody?.$ref) throw new Error(`requireBody: ${op.operationId} has a $ref request body; write it inline`);
    if (op.requestBody?.required === true) required.add(op.operationId);
  }
  return (req, _res, next) => {
    const operationId = req.openapi?.schema.operationId;
    if (operationId !== undefined && required.has(operationId) && bodyIsMissing(req)) {
      return next(new BadRequestError('MISSING_REQUEST_BODY', 'This operation requires a JSON request body'));
    }
    next();
  };
}

/** The operationIds of `contract` that declare no request body. */
export function operationsWithoutBody(contract: unknown): Set<string> {
  return new Set(
    contractOperationObjects(contract)
      .filter((op) => !op.requestBody)
      .map((op) => op.operationId),
  );
}

/** The error for a request that carries a body (`bodyIsMissing` false) to an operation that takes none. */
export function unexpectedBodyError(): DomainError {
  return new UnsupportedMediaTypeError('UNEXPECTED_REQUEST_BODY', 'This operation takes no request body; send the request without one');
}

/**
 * `415 UNEXPECTED_REQUEST_BODY` for a request with a body (any bytes, whatever its Content-Type)
 * to an operation whose contract declares no request body. Runs where `requireBody` does.
 */
export function refuseBody(contract: unknown): RequestHandler {
  const bodiless = operationsWithoutBody(contract);
  return (req, _res, next) => {
    const operationId = req.openapi?.schema.operationId;
    next(operationId !== undefined && bodiless.has(operationId) && !bodyIsMissing(req) ? unexpectedBodyError() : undefined);
  };
}

/**
 * The request's Content-Type as the validator sees it, reduced to the media type the operation
 * declares (`application/json`, without parameters; the body is already parsed and decoded).
 * express-openapi-validator builds and keeps a validator per method, route and Content-Type with
 * every parameter but `boundary` (`application/json; x=1`, `; x=2`...): each new value cost a
 * compile (about a second of CPU under load) and memory kept for the life of the process. Here
 * the values it sees are the declared ones: a media type the operation does not declare, with a
 * body, is the validator's own `415 UNSUPPORTED_CONTENT_TYPE` (same code and message); without a
 * body the header means nothing and is dropped. Runs where `requireBody` does.
 */
export function canonicalContentType(contract: unknown): RequestHandler {
  const declared = new Map<string, string[]>();
  for (const op of contractOperationObjects(contract)) declared.set(op.operationId, Object.keys(op.requestBody?.content ?? {}));
  return (req, _res, next) => {
    const header = req.headers['content-type'];
    const operationId = req.openapi?.schema.operationId;
    if (header === undefined || operationId === undefined) return next();
    const mediaType = header.split(';', 1)[0]!.trim().toLowerCase();
    const match = declared.get(operationId)?.find((t) => t.toLowerCase() === mediaType);
    if (match !== undefined) req.headers['content-type'] = match;
    else if (bodyIsMissing(req)) delete req.headers['content-type'];
    else return next(new UnsupportedMediaTypeError('UNSUPPORTED_CONTENT_TYPE', 'Request bodies must be sent as application/json'));
    next();
  };
}
