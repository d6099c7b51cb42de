/**
 * Headers the API reads as one value, given more than once. Node joins most repeated headers
 * with ", " (two `Idempotency-Key`s became one key, two `X-API-Key`s one wrong key) and keeps
 * only the first `Authorization`, silently: either way the request is ambiguous and is refused
 * (docs/security.md, "Malformed input"). Counted from `req.rawHeaders`, which keeps every
 * occurrence; values are not echoed (they hold credentials). Readers: idempotency.ts
 * (`Idempotency-Key`), auth.ts (`Authorization`, and `X-API-Key` with 401 since no budget can
 * be charged without a key), the tus creation (`X-API-Key`), the metrics endpoint (`Authorization`).
 */
import type { IncomingMessage } from 'node:http';
import { BadRequestError } from '../shared/errors';

/** The first of `names` (lower case) that the request carries more than once. */
export function repeatedHeader(req: IncomingMessage, names: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    if (!names.includes(name)) continue;
    if (seen.has(name)) return name;
    seen.add(name);
  }
  return undefined;
}

/** 400 VALIDATION_ERROR when one of `names` is repeated, or undefined. */
export function repeatedHeaderError(req: IncomingMessage, names: readonly string[]): BadRequestError | undefined {
  const name = repeatedHeader(req, names);
  if (name === undefined) return undefined;
  const message = 'must be given once';
  return new BadRequestError('VALIDATION_ERROR', `Request validation failed: header ${name} ${message}`, { validationErrors: [{ field: `headers.${name}`, message }] });
}
