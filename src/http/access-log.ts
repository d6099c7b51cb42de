/**
 * Access log of the API: `req.log` (a child logger carrying `reqId`) for everything logged while
 * serving the request, and one flat line when the response finishes (or the connection closes
 * first): info `request completed`, or error `request failed with <status>` for a 5xx or a
 * response stream error. No headers are logged, so no credential can reach the log.
 *
 * This does what pino-http did here with `quietReqLogger`/`quietResLogger` and custom success and
 * error objects, and the same lines come out; pino-http also built a second child logger per
 * request with the serialised request (headers included) that nothing used, which cost more
 * than writing the line itself. The listeners are shared functions reading their state from the
 * response, so a request allocates no closures here.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';

const ACCESS = Symbol('vidmill.access');
interface AccessState {
  req: Request;
  log: Logger;
  start: number;
}
/** A response carrying its access-log state under the ACCESS symbol. */
type LoggedResponse = Response & { [ACCESS]?: AccessState };

export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const log = logger.child({ reqId: req.id });
    req.log = log;
    (res as LoggedResponse)[ACCESS] = { req, log, start: Date.now() };
    // A response emits 'close' when it has finished or when its connection closed first.
    res.on('close', onFinished);
    res.on('error', onFinished);
    next();
  };
}

/** Listener of 'close' and 'error' (`this` is the response): logs once. */
function onFinished(this: Response, err?: unknown): void {
  const state = (this as LoggedResponse)[ACCESS];
  if (!state) return;
  (this as LoggedResponse)[ACCESS] = undefined;
  const line = accessLine(state.req, this, Date.now() - state.start);
  if (err instanceof Error || this.statusCode >= 500) state.log.error(line, `request failed with ${this.statusCode}`);
  else state.log.info(line, 'request completed');
}

/** The fields of an access-log line. */
function accessLine(req: Request, res: Response, responseTime: number): Record<string, unknown> {
  return {
    method: req.method,
    url: req.originalUrl,
    operationId: req.openapi?.schema.operationId,
    statusCode: res.statusCode,
    responseTime,
  };
}
