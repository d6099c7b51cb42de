/**
 * What Vidmill's middleware attaches to an Express request, typed once here so no handler or
 * middleware has to cast the request. Set by: `id` request-id.ts, `log` access-log.ts,
 * `principal` auth.ts, `rawBody` json-body.ts, `sentBody` sent-body.ts, `openapi` express-openapi-validator (its own
 * `OpenApiRequest` type declares the same field, for its handlers only).
 */
import type { OpenApiRequestMetadata } from 'express-openapi-validator/dist/framework/types';
import type { Logger } from 'pino';
import type { Principal } from './operations';

declare global {
  // Express's own extension point for request fields (an interface merged into its Request).
  namespace Express {
    interface Request {
      /** The request id (a fresh UUID), also the X-Request-Id response header. */
      id?: string;
      /** The request's logger (bindings: reqId), set by accessLog for every /api request. */
      log: Logger;
      /** The authenticated caller; handlers read it through principalOf. */
      principal?: Principal;
      /** The JSON body's bytes as received (body-parser reads an empty body as {}: this tells them apart). */
      rawBody?: Buffer;
      /** The parsed JSON body as sent, before the validator filled in the contract's defaults. */
      sentBody?: unknown;
      /** The contract operation of the request, once express-openapi-validator matched it. */
      openapi?: OpenApiRequestMetadata;
    }
  }
}
