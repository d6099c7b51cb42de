/**
 * No field of the API means the character U+0000, and PostgreSQL text cannot hold it (SQLite
 * can): a string (or an object key) with it anywhere in the path parameters, the query or the
 * body is `400 VALIDATION_ERROR` naming the field, on both databases alike. Runs after request
 * validation (whose findings come first) and before dispatch, so no handler or store sees one.
 */
import type { RequestHandler } from 'express';
import { BadRequestError } from '../shared/errors';

const NUL = '\u0000';

/** The field (`body.name`, `path.agreementId`, ...) of the first string or key holding U+0000. */
export function fieldWithNul(root: Record<string, unknown>): string | undefined {
  const stack: [unknown, string][] = Object.entries(root).map(([k, v]) => [v, k]);
  while (stack.length) {
    const [v, at] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes(NUL)) return at;
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        const field = `${at}.${k.replaceAll(NUL, '\\u0000')}`;
        if (k.includes(NUL)) return field;
        stack.push([child, field]);
      }
    }
  }
  return undefined;
}

export const rejectNulCharacters: RequestHandler = (req, _res, next) => {
  const field = fieldWithNul({ path: req.openapi?.pathParams ?? {}, query: req.query, body: req.body });
  if (field === undefined) return next();
  next(new BadRequestError('VALIDATION_ERROR', 'Request validation failed', { validationErrors: [{ field, message: 'must not contain the character U+0000' }] }));
};
