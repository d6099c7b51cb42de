import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';

/** Every response carries X-Request-Id; error bodies repeat it as `requestId`. Always a fresh UUID. */
export const requestId: RequestHandler = (req, res, next) => {
  const id = randomUUID();
  req.id = id;
  res.setHeader('X-Request-Id', id);
  next();
};
