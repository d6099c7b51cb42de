/**
 * Access log of the API: `req.log` (a child logger carrying `reqId`) for everything logged while
 * serving the request, and one flat line when the response finishes (or the connection closes
 * first): info `request completed`, or error `request failed with <status>` for a 5xx or a
 * response stream error. No
 * headers are logged, so no credential can reach the log.
 *
 * This does what pino-http did here with `quietReqLogger`/`quietResLogger` and custom success and
 * error objects, and the same lines come out; pino-http also built a second child logger per
 * request with the serialised request (headers included) that nothing used, which cost more
 * than writing the line itself.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';

declare module 'http' {
  interface IncomingMessage {
    /** The request's logger (bindings: reqId), set by accessLog for every /api request. */
    log: Logger;
  }
}

export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const start = Date.now();
    const log = logger.child({ reqId: (req as any).id });
    req.log = log;
    let done = false;
    const finished = (err?: unknown) => {
      if (done) return;
      done = true;
      res.removeListener('finish', finished);
      res.removeListener('close', finished);
      res.removeListener('error', finished);
      const line = accessLine(req, res, Date.now() - start);
      if (err instanceof Error || res.statusCode >= 500) log.error(line, `request failed with ${res.statusCode}`);
      else log.info(line, 'request completed');
    };
    res.on('finish', finished);
    res.on('close', finished);
    res.on('error', finished);
    next();
  };
}

/** The fields of an access-log line. */
function accessLine(req: Request, res: Response, responseTime: number): Record<string, unknown> {
  return {
    method: req.method,
    url: req.originalUrl,
    operationId: (req as any).openapi?.schema?.operationId,
    statusCode: res.statusCode,
    responseTime,
  };
}
