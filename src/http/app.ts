/**
 * The HTTP application. Request path: request id -> request metrics (http-metrics.ts: every
 * answer, by operation and status) -> undecodable path check -> access log ->
 * auth -> rate limit -> JSON parser (raw body kept; size, encoding and nesting limits) ->
 * idempotency (POST with `Idempotency-Key`) -> express-openapi-validator (operation lookup,
 * required body check, no body where none is declared, strict integer parameters, body maximums
 * with their own errorCode, request validation) -> no U+0000 in any value -> dispatch by operationId
 * -> handler. One error mapper answers every failure with the `Error` body, and never throws.
 * The parser comes after the limiter (DESIGN.md puts it before auth) so every answer to a
 * counted request, a bad body included, carries the rate-limit headers, and a caller without
 * credentials gets 401 whatever its body (docs/architecture.md).
 */
import express, { NextFunction, Request, RequestHandler, Response } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { OpenAPIV3 } from 'express-openapi-validator/dist/framework/types';
import type { Logger } from 'pino';
import swaggerUi from 'swagger-ui-express';
import { accessLog } from './access-log';
import { ApiKeyCheck, authenticate, PasswordCheck, principalOf } from './auth';
import { errorMapper, notFoundMessage, sendError, setDocumentedErrorCodes } from './error-mapper';
import { STORED_VALUE_FORMATS } from './formats';
import { idempotency, IdempotencyKeys } from './idempotency';
import { strictIntegerParameters } from './integer-parameters';
import { bodyMaximums } from './body-maximums';
import { canonicalContentType, jsonBody, refuseBody, requireBody } from './json-body';
import { rejectNulCharacters } from './nul-characters';
import { AllHandlers, assertHandlersMatchContract } from './operations';
import { rateLimit, RequestLimiter } from './rate-limit';
import { requestId } from './request-id';
import { rejectUndecodablePath } from './request-path';
import { acceptReservedQueryCharacters } from './reserved-query-characters';
import { signInBudgets, SignInLimiters } from './sign-in-limit';
import { keepSentBody } from './sent-body';
import { servedContract } from './served-contract';
import { httpMetrics, OperationMatcher } from './http-metrics';
import { METRICS_PATH } from './metrics-endpoint';

/** The bundled contract (generated/openapi.json), typed as the validator reads it. */
export type ContractDocument = OpenAPIV3.DocumentV3_1;

export interface AppDeps {
  contract: ContractDocument;
  handlers: AllHandlers;
  accounts: PasswordCheck;
  apiKeys: ApiKeyCheck;
  rateLimiter: RequestLimiter;
  idempotency: IdempotencyKeys;
  /** Budgets of failed Basic sign-ins per client address and per e-mail. */
  signInLimiters: SignInLimiters;
  /**
   * Express 'trust proxy': which proxies may name the client address (X-Forwarded-For) in
   * `req.ip`; false: none, the socket's address is the client's.
   */
  trustProxy: false | number | string[];
  logger: Logger;
  bodyLimitBytes: number;
  /** Under test: a response that breaks the contract is a 500; in production it is logged. */
  strictResponses: boolean;
  /** Share of production responses checked against the contract (0..1). */
  responseValidationSample: number;
  readiness: () => Promise<Record<string, unknown>>;
  /** Routes outside /api that authenticate by themselves (signed media links). */
  publicRoutes?: express.Router[];
  /** VIDMILL_PUBLIC_URL when set: the served document's server (else each request's origin). */
  publicUrl?: string;
  /** `GET /metrics` on this app (src/http/metrics-endpoint.ts); absent when served on a port of its own. */
  metrics?: RequestHandler;
}

function dispatch(handlers: AllHandlers): RequestHandler {
  return async (req, res, next) => {
    const operationId = req.openapi?.schema.operationId as keyof AllHandlers | undefined;
    const handler = operationId && (handlers[operationId] as (input: unknown) => Promise<{ status: number; headers?: Record<string, string>; body?: unknown }>);
    if (!handler) return next(new Error(`no handler bound for ${req.method} ${req.path}`));
    try {
      const reply = await handler({
        path: req.openapi?.pathParams ?? {},
        query: req.query ?? {},
        body: req.body as unknown, // Express types the parsed body as any
        sentBody: req.sentBody ?? (req.body as unknown),
        principal: principalOf(req),
        requestId: req.id,
        log: req.log,
      });
      if (reply.headers) for (const k in reply.headers) res.setHeader(k, reply.headers[k]!);
      if (res.statusCode !== reply.status) res.status(reply.status);
      if (reply.body === undefined) res.end();
      else res.json(reply.body);
    } catch (err) {
      next(err);
    }
  };
}

/**
 * express-openapi-validator: requests always. Responses: every one, strictly, under test; in
 * production a sample (`responseValidationSample`) is checked and mismatches are logged, since
 * checking every response costs about a fifth of a small request's CPU. One validator serves
 * both: a request outside the sample skips its response step. (Two validators, one with and one
 * without responses, would load and compile the contract twice at every start.)
 */
function contractValidation(deps: AppDeps): RequestHandler {
  // Prepared on the first API request, not at start: the validator loads and compiles the whole
  // contract (about a second of CPU), which would otherwise hold up /readyz, /healthz and
  // /docs of every starting process. The first API request waits for it, as a request that
  // arrived during start waited before.
  let prepared: RequestHandler | undefined;
  return (req, res, next) => (prepared ??= sharedContractValidation(deps))(req, res, next);
}

/**
 * The validation middleware built once per contract document (by identity) and response
 * setting, and shared by every app built in the process. Building it costs about a second of
 * CPU (the validator dereferences the document and compiles its schemas with ajv, per route on
 * first use); a process builds one app in production, but the tests build one per test. The
 * middleware keeps no state of its own between requests besides those compiled schemas.
 */
const validationStacks = new WeakMap<ContractDocument, Map<string, RequestHandler>>();

function sharedContractValidation(deps: Pick<AppDeps, 'contract' | 'strictResponses' | 'responseValidationSample'>): RequestHandler {
  const key = `${deps.strictResponses}:${deps.responseValidationSample}`;
  const built = validationStacks.get(deps.contract) ?? new Map<string, RequestHandler>();
  validationStacks.set(deps.contract, built);
  const cached = built.get(key);
  if (cached) return cached;
  const stack = prepareContractValidation(deps);
  built.set(key, stack);
  return stack;
}

function prepareContractValidation(deps: Pick<AppDeps, 'contract' | 'strictResponses' | 'responseValidationSample'>): RequestHandler {
  // Raw reserved characters in query values are accepted (see reserved-query-characters.ts).
  const apiSpec = acceptReservedQueryCharacters(deps.contract);
  const validateResponses = deps.strictResponses || deps.responseValidationSample > 0;
  const validator = OpenApiValidator.middleware({
    apiSpec,
    validateApiSpec: false,
    // allErrors: every problem of a request is reported at once in validationErrors.
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false, allErrors: true },
    validateResponses: !validateResponses
      ? false
      : deps.strictResponses
        ? { removeAdditional: false }
        : {
            removeAdditional: false,
            onError: (err, _body, req: Request) => {
              req.log?.error({ err: err.message, errors: (err as { errors?: unknown }).errors, path: req.path }, 'response does not match the contract');
            },
          },
    validateSecurity: false,
    validateFormats: true,
    formats: STORED_VALUE_FORMATS,
    ignoreUndocumented: false,
  });
  const stack = beforeRequestValidation(validator, [
    requireBody(deps.contract),
    refuseBody(deps.contract),
    canonicalContentType(deps.contract),
    strictIntegerParameters(deps.contract),
    bodyMaximums(deps.contract),
  ]);
  if (deps.strictResponses || deps.responseValidationSample >= 1 || !validateResponses) return inSequence(stack);
  const sampled = inSequence(stack);
  const requestsOnly = inSequence(withoutResponseValidation(stack));
  return (req, res, next) => (Math.random() < deps.responseValidationSample ? sampled : requestsOnly)(req, res, next);
}

/** The validator's stack without its response step (found by the name the validator gives it). */
function withoutResponseValidation(stack: RequestHandler[]): RequestHandler[] {
  const rest = stack.filter((h) => h.name !== 'responseMiddleware');
  if (rest.length !== stack.length - 1) throw new Error('express-openapi-validator has no responseMiddleware step; sample response validation again');
  return rest;
}

/**
 * Inserts `checks` into the validator's stack right before its request validation, where the
 * operation is resolved (`req.openapi`) and nothing is validated yet. Found by the name
 * express-openapi-validator gives that step; a version that renames it fails here (on the first API request).
 */
function beforeRequestValidation(stack: RequestHandler[], checks: RequestHandler[]): RequestHandler[] {
  const i = stack.findIndex((h) => h.name === 'requestMiddleware');
  if (i < 0) throw new Error('express-openapi-validator has no requestMiddleware step; place the required body and integer checks again');
  return [...stack.slice(0, i), ...checks, ...stack.slice(i)];
}

/**
 * Runs `handlers` one after the other as one middleware, as a Router without paths would (an
 * error, a throw or a rejected promise goes to `done`), without a Router's per-request matching.
 */
function inSequence(handlers: RequestHandler[]): RequestHandler {
  return (req, res, done) => new Sequence(handlers, req, res, done).next();
}

class Sequence {
  private i = 0;
  constructor(
    private readonly handlers: RequestHandler[],
    private readonly req: Request,
    private readonly res: Response,
    private readonly done: NextFunction,
  ) {
    this.next = this.next.bind(this);
  }

  next(err?: unknown): void {
    if (err) return this.done(err);
    if (this.i === this.handlers.length) return this.done();
    const handler = this.handlers[this.i++]!; // i < length: checked above
    try {
      // eslint-disable-next-line @typescript-eslint/unbound-method -- bound in the constructor
      const result: unknown = handler(this.req, this.res, this.next);
      if (result instanceof Promise) result.then(undefined, (e) => this.done(e ?? new Error('Rejected promise')));
    } catch (e) {
      this.done(e);
    }
  }
}

export function buildApp(deps: AppDeps): express.Express {
  assertHandlersMatchContract(deps.contract, deps.handlers);
  setDocumentedErrorCodes((deps.contract.components?.schemas?.ErrorCodeEnum as { enum: string[] }).enum);

  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'extended');
  app.set('trust proxy', deps.trustProxy);

  app.use(requestId);
  app.use(httpMetrics(new OperationMatcher(deps.contract)));
  app.use(rejectUndecodablePath);
  if (deps.metrics) app.get(METRICS_PATH, deps.metrics);
  // A browser pointed at the server lands on the interactive documentation.
  app.get('/', (_req, res) => res.redirect(302, '/docs'));
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    try {
      res.json({ status: 'ready', ...(await deps.readiness()) });
    } catch (err) {
      deps.logger.warn({ err }, 'not ready');
      res.status(503).json({ status: 'not ready', reason: (err as Error).message });
    }
  });

  app.get('/openapi.json', (req, res) => {
    res.json(servedContract(deps.contract, req, deps.publicUrl));
  });
  // Swagger UI reads the served document next to it (relative, so a path prefix in front works).
  app.use('/docs', swaggerUi.serve, swaggerUi.setup(undefined, { customSiteTitle: 'Vidmill API', swaggerUrl: '../openapi.json', swaggerOptions: { persistAuthorization: true } }));

  for (const routes of deps.publicRoutes ?? []) app.use(routes);

  const api = express.Router();
  // One child logger per request (reqId) and one flat access line when it finishes.
  api.use(accessLog(deps.logger));
  api.use(authenticate(deps.accounts, deps.apiKeys, signInBudgets(deps.signInLimiters)));
  api.use(rateLimit(deps.rateLimiter));
  api.use(jsonBody(deps.bodyLimitBytes));
  // After the parser (it fingerprints the body), before the validator: a replay does not run
  // again; a rejected request releases its key.
  api.use(idempotency(deps.idempotency));
  // The body as sent, before the validator fills in defaults (echoed options).
  api.use(keepSentBody);
  api.use(contractValidation(deps));
  api.use(rejectNulCharacters);
  api.use(dispatch(deps.handlers));
  app.use('/api', api);

  app.use((req, res) => sendError(req, res, 404, 'NOT_FOUND', notFoundMessage(req.method, req.path)));
  app.use(errorMapper);
  return app;
}
