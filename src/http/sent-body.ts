/**
 * The request body as the client sent it. express-openapi-validator fills the contract's
 * defaults into `req.body` while it validates (its Ajv runs with `useDefaults`), so a handler
 * that must show a client what it sent (a processing job's `options`, a configuration's) reads
 * `sentBody` instead: a copy taken after parsing, before validation. It is valid wherever the
 * validated body is, since the defaults only add optional properties.
 */
import type { RequestHandler } from 'express';

export const keepSentBody: RequestHandler = (req, _res, next) => {
  if (req.body !== null && typeof req.body === 'object') req.sentBody = structuredClone(req.body as unknown);
  next();
};
