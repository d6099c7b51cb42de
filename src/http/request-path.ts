/**
 * A request path whose percent-escapes do not decode (`%ZZ`, a cut escape, bytes that are not
 * UTF-8) names nothing: it is answered `400 INVALID_REQUEST_PATH` before any routing, for every
 * route of the app, so no later step (the router's parameter decoding, the validator, the error
 * mapper) meets it.
 */
import type { RequestHandler } from 'express';
import { BadRequestError } from '../shared/errors';

export function decodablePath(path: string): boolean {
  if (!path.includes('%')) return true;
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

export const rejectUndecodablePath: RequestHandler = (req, _res, next) => {
  if (decodablePath(req.path)) return next();
  next(new BadRequestError('INVALID_REQUEST_PATH', 'The request path has a malformed percent-escape (% must be followed by two hex digits encoding UTF-8)'));
};
