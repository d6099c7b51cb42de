/**
 * Mock server: serves the WHOLE contract (generated/openapi.json) from its examples, so SDK
 * consumers can build against Vidmill without running a real server (`npm run mock`).
 *
 * - Routes with openapi-backend under `/api` (the servers' base path); literal paths win over
 *   templated ones (`/v1/projects/default` is not read as `/v1/projects/{id}`).
 * - Validates requests (parameters and bodies) against the contract, with the real server's
 *   statuses and codes: bad input is a 400 with the contract's `Error` body (errorCode
 *   VALIDATION_ERROR, validationErrors[] of field/value/message; a JSON object such as `{}` that
 *   lacks required fields is one), a required body that is missing (no bytes at all, whatever the
 *   Content-Type says) 400 MISSING_REQUEST_BODY, a body that is not JSON 415
 *   UNSUPPORTED_CONTENT_TYPE, malformed JSON 400 INVALID_REQUEST_BODY, unknown paths 404
 *   NOT_FOUND (outside `/api` the message says that API paths start with `/api`), a method the
 *   path lacks 405 METHOD_NOT_ALLOWED.
 * - Authenticates like the server, with the server's own middleware (src/http/auth.ts) and
 *   codes, before anything else under `/api`: X-API-Key everywhere (401 MISSING_API_KEY,
 *   INVALID_API_KEY), HTTP Basic on `/v1/api-keys` (401 UNAUTHORIZED, INVALID_CREDENTIALS, with
 *   the Basic challenge). It accepts one key and one e-mail/password pair (`mockCredentials`:
 *   environment variables, else the contract's examples; printed at start). The caller's teams
 *   are the teams of the contract's examples: another `teamId`/`selectTeamId` is 403 FORBIDDEN.
 * - Counts API-key requests per minute like the server's limiter (600, `X-RateLimit-*` on every
 *   answer after authentication, 429 TOO_MANY_REQUESTS with Retry-After beyond), so every
 *   response carries the headers the contract marks required.
 * - Answers each operation with its success status and the example of that response (a mock
 *   generated from the schema only when no example exists); responses without a body (204)
 *   send no body. What the server decides from the request alone is answered the same way:
 *   a body property over a maximum with `x-vidmill-maximum-error-code` (an upload `size` over
 *   500 GB) is 400 with that code (VIDEO_TOO_LARGE; src/http/body-maximums.ts), any body on an
 *   operation that declares none 415 UNEXPECTED_REQUEST_BODY.
 * - Direct uploads work end to end: `createMasterVideoFromUpload` answers a new video id and an
 *   `uploadUrl` on the mock itself (`/tus/uploads/<id>?token=...`, of the request's `size`),
 *   where a minimal tus 1.0 endpoint (OPTIONS, HEAD, PATCH, DELETE) counts the bytes and throws
 *   them away. That offset per upload is the only state the mock keeps.
 *
 * openapi-backend does NOT route the real server (src/http/app.ts): measured, its routing plus
 * request validation costs about 3x express-openapi-validator's, so the real server validates with
 * express-openapi-validator and dispatches on the operationId that validator resolved
 * (docs/architecture.md). For a mock, speed does not matter and one library doing routing,
 * validation and example responses is the simplest.
 *
 * Settings: see USAGE (`npm run mock -- --help`).
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import express, { ErrorRequestHandler, Request, Response } from 'express';
import { OpenAPIBackend, type Context } from 'openapi-backend';
import { dereference } from 'openapi-backend/refparser';
import { randomBytes, randomUUID } from 'node:crypto';
import { authenticate, usesBasicAuth } from '../src/http/auth';
import { echoedValue, errorBody, notFoundMessage, setDocumentedErrorCodes } from '../src/http/error-mapper';
import { STORED_VALUE_FORMATS } from '../src/http/formats';
import { bodyMaximumError, bodyMaximumsOf } from '../src/http/body-maximums';
import { bodyIsMissing, hasBody, operationsWithoutBody, unexpectedBodyError } from '../src/http/json-body';
import { FixedWindowLimiter, rateLimitExceeded } from '../src/http/rate-limit';
import { requestId } from '../src/http/request-id';
import { MAX_VIDEO_BYTES, TUS_PATH } from '../src/features/video-in/testing';
import { DomainError, ForbiddenError, UnauthorizedError, type ValidationIssue } from '../src/shared/errors';

export const CONTRACT_FILE = path.resolve(__dirname, '..', 'generated', 'openapi.json');
const API_ROOT = '/api';
const JSON_TYPES = ['application/json', 'application/*+json'];

export const USAGE = `usage: npm run mock [-- --host H] [-- --port P]
Serves the whole Vidmill contract (generated/openapi.json) from its examples at http://H:P/api:
requests are validated like the real server's, answers are the contract's examples, no state.

  --host H    address to listen on; default VIDMILL_MOCK_HOST, else 127.0.0.1
  --port P    port (0 picks a free one); default VIDMILL_MOCK_PORT, else 4010
  --help      this text

Credentials (printed at start): X-API-Key VIDMILL_MOCK_API_KEY, else the apiKey of the
createApiKey example; HTTP Basic (on /v1/api-keys) VIDMILL_MOCK_EMAIL and VIDMILL_MOCK_PASSWORD,
else the e-mail of the getAccount example and "mock-password". Anything else is a 401.`;

/** What the mock accepts: one API key, one e-mail and password. */
export interface MockCredentials {
  apiKey: string;
  email: string;
  password: string;
}

export const DEFAULT_MOCK_PASSWORD = 'mock-password';
/** The server's default `VIDMILL_RATE_LIMIT_PER_MINUTE`. */
const MOCK_RATE_LIMIT_PER_MINUTE = 600;

function exampleOf(definition: any, pathName: string, method: string, status: number): any {
  return definition.paths[pathName]?.[method]?.responses?.[String(status)]?.content?.['application/json']?.example;
}

/** The credentials from the environment, else the contract's examples (the key `createApiKey` answers, the e-mail of `getAccount`). */
export function mockCredentials(env: NodeJS.ProcessEnv, definition: any = readContract()): MockCredentials {
  return {
    apiKey: env.VIDMILL_MOCK_API_KEY || String(exampleOf(definition, '/v1/api-keys', 'post', 201)?.apiKey),
    email: env.VIDMILL_MOCK_EMAIL || String(exampleOf(definition, '/v1/account', 'get', 200)?.user?.email),
    password: env.VIDMILL_MOCK_PASSWORD || DEFAULT_MOCK_PASSWORD,
  };
}

/** The caller's teams on the mock: the teams of the contract's examples (the account's default team and the team list). */
export function mockTeamIds(definition: any): Set<string> {
  const ids = new Set<string>();
  const defaultTeam = exampleOf(definition, '/v1/account', 'get', 200)?.defaultTeam?.id;
  if (typeof defaultTeam === 'string') ids.add(defaultTeam);
  for (const team of exampleOf(definition, '/v1/teams', 'get', 200)?.items ?? []) if (typeof team?.id === 'string') ids.add(team.id);
  return ids;
}

function readContract(): any {
  return JSON.parse(readFileSync(CONTRACT_FILE, 'utf8'));
}

export interface MockServer {
  /** Base URL of the API, e.g. http://127.0.0.1:4010/api */
  url: string;
  close(): Promise<void>;
}

interface Reply {
  status: number;
  body?: unknown;
}

function errorReply(req: Request, res: Response, status: number, errorCode: string, message: string, validationErrors?: ValidationIssue[]): Reply {
  return { status, body: errorBody(req, res, status, errorCode, message, { validationErrors }) };
}

/** The string formats the contract uses beyond openapi-backend's own (int32, int64, byte, ...): the real server's for stored values, plus email and uri. */
const FORMATS: Record<string, (value: string) => boolean> = {
  ...Object.fromEntries(Object.entries(STORED_VALUE_FORMATS).map(([name, f]) => [name, f.validate])),
  email: (v) => /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)*$/.test(v),
  uri: (v) => /^[a-z][a-z0-9+.-]*:/i.test(v) && URL.canParse(v),
};

/** openapi-backend validates `{ path, query, header, cookie, requestBody }`; fields are named like the real server's (`body.name`). */
const LOCATIONS: Record<string, string> = { requestBody: 'body', path: 'path', query: 'query', header: 'headers', cookie: 'cookies' };

function validationIssues(c: Context): ValidationIssue[] {
  return (c.validation.errors ?? []).map((e: any) => {
    const parts = String(e.instancePath ?? '')
      .split('/')
      .filter(Boolean)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (e.keyword === 'required' && e.params?.missingProperty) parts.push(e.params.missingProperty);
    if (e.keyword === 'additionalProperties' && e.params?.additionalProperty) parts.push(e.params.additionalProperty);
    if (parts[0] !== undefined) parts[0] = LOCATIONS[parts[0]] ?? parts[0];
    const root = { body: c.request.requestBody, query: c.request.query, path: c.request.params, headers: c.request.headers };
    const value = echoedValue(root, parts);
    return { field: parts.join('.'), ...(value !== undefined ? { value } : {}), message: String(e.message ?? 'is invalid') };
  });
}

/** A required body that is absent: openapi-backend reports the root's property `requestBody` as missing. */
function bodyMissing(c: Context): boolean {
  return (c.validation.errors ?? []).some((e: any) => !e.instancePath && e.keyword === 'required' && e.params?.missingProperty === 'requestBody');
}

/** The operation's success response: the lowest 2xx status the contract declares. */
function successStatus(operation: { responses?: Record<string, unknown> }): number {
  const codes = Object.keys(operation.responses ?? {})
    .filter((c) => /^2\d\d$/.test(c))
    .map(Number)
    .sort((a, b) => a - b);
  return codes[0] ?? 200;
}

export interface MockAppOptions {
  definition?: any;
  credentials?: MockCredentials;
}

/** A tus upload the mock accepted: its length, the bytes counted so far and its token. */
interface MockUpload {
  size: number;
  offset: number;
  token: string;
}
/** Uploads kept at most (the oldest goes first), so a long-running mock stays small. */
const MAX_MOCK_UPLOADS = 1000;
const TUS_HEADERS = { 'Tus-Resumable': '1.0.0', 'Cache-Control': 'no-store' };

export async function createMockApp(opts: MockAppOptions = {}): Promise<express.Express> {
  const definition = opts.definition ?? readContract();
  const credentials = opts.credentials ?? mockCredentials(process.env, definition);
  const teamIds = mockTeamIds(definition);
  const uploads = new Map<string, MockUpload>();
  setDocumentedErrorCodes(definition.components.schemas.ErrorCodeEnum.enum);
  const maximums = bodyMaximumsOf(definition);
  const bodiless = operationsWithoutBody(definition);
  // Expanded into a tree without shared nodes: openapi-backend's "decycle" step before compiling
  // validators replaces any object seen twice (not only cycles) with a `$ref`, which breaks schemas
  // such as MasteringDisplay whose red/green/blue points share one `properties` object after
  // dereferencing. The contract has no reference cycles, so a JSON round trip is a deep copy.
  const expanded = JSON.parse(JSON.stringify(await dereference(structuredClone(definition))));
  const api = new OpenAPIBackend({
    definition: expanded,
    apiRoot: API_ROOT,
    validate: true,
    coerceTypes: true,
    ajvOpts: { allErrors: true }, // every problem of a request at once, as the real server reports them
    strict: false,
    // quick: validators are compiled per operation on its first request (compiling all of them
    // up front takes seconds), and openapi-backend's document check, which knows OpenAPI 3.0
    // only and rejects this 3.1 contract, is skipped (the contract is linted in the test suite).
    quick: true,
    customizeAjv: (ajv) => {
      for (const [name, validate] of Object.entries(FORMATS)) ajv.addFormat(name, { type: 'string', validate });
      return ajv;
    },
  });

  // Authentication has run before openapi-backend sees a request (the server's middleware, below).
  for (const scheme of Object.keys(expanded.components?.securitySchemes ?? {})) api.registerSecurityHandler(scheme, () => true);

  api.register({
    notFound: (_c: Context, req: Request, res: Response) => errorReply(req, res, 404, 'NOT_FOUND', notFoundMessage(req.method, req.path)),
    methodNotAllowed: (_c: Context, req: Request, res: Response) => errorReply(req, res, 405, 'METHOD_NOT_ALLOWED', `Method ${req.method} is not allowed on ${req.path}`),
    // Like the real server: no body is MISSING_REQUEST_BODY, a body that is not JSON is a 415.
    validationFail: (c: Context, req: Request, res: Response) => {
      // A body maximum with its own errorCode (the upload size: VIDEO_TOO_LARGE) before the schema's VALIDATION_ERROR, as on the server.
      const overMaximum = bodyMaximumError(maximums.get(String(c.operation.operationId)), c.request.requestBody);
      if (overMaximum) throw overMaximum;
      if (bodyMissing(c) && hasBody(req) && !req.is(JSON_TYPES)) return errorReply(req, res, 415, 'UNSUPPORTED_CONTENT_TYPE', 'Request bodies must be sent as application/json');
      if (bodyMissing(c)) return errorReply(req, res, 400, 'MISSING_REQUEST_BODY', 'This operation requires a JSON request body');
      return errorReply(req, res, 400, 'VALIDATION_ERROR', 'Request validation failed', validationIssues(c));
    },
    // Every operation is "not implemented" in the mock: answer it from the contract, after the
    // checks the server makes from the request alone.
    notImplemented: (c: Context, req: Request): Reply => {
      const operation = c.operation;
      for (const name of ['teamId', 'selectTeamId']) {
        const team = c.request.query[name];
        if (typeof team === 'string' && !teamIds.has(team)) throw new ForbiddenError('FORBIDDEN', `You are not a member of team ${team}`);
      }
      const status = successStatus(operation);
      const response = (operation.responses as any)?.[status];
      if (!response?.content) return { status };
      const body = c.api.mockResponseForOperation(operation.operationId!, { code: status }).mock;
      if (operation.operationId === 'createMasterVideoFromUpload') return { status, body: openUpload(req, body, Number((c.request.requestBody as { size: number }).size)) };
      return { status, body };
    },
  });
  await api.init();

  /** A new upload on the mock's own tus endpoint, in the answer's shape: a new video id, `uploadUrl` on this host. */
  const openUpload = (req: Request, example: Record<string, unknown>, size: number) => {
    const videoId = randomUUID();
    const uploadId = videoId.replace(/-/g, '');
    const token = randomBytes(24).toString('base64url');
    if (uploads.size >= MAX_MOCK_UPLOADS) uploads.delete(uploads.keys().next().value!);
    uploads.set(uploadId, { size, offset: 0, token });
    return { ...example, videoId, size, uploadUrl: `${req.protocol}://${req.get('host')}${TUS_PATH}/${uploadId}?token=${token}` };
  };

  const app = express();
  app.disable('x-powered-by');
  app.use(requestId);
  app.use(TUS_PATH, tusRouter(uploads));
  // As on the server: under /api, authentication and the rate limit come first (an unknown path
  // without credentials is a 401), then the body is read.
  const limiter = new FixedWindowLimiter(MOCK_RATE_LIMIT_PER_MINUTE);
  const principal = { userId: String(exampleOf(definition, '/v1/account', 'get', 200)?.user?.id), apiKeyId: randomUUID() };
  app.use(
    API_ROOT,
    authenticate(
      {
        authenticateBasic: (email, password) => {
          if (email !== credentials.email || password !== credentials.password) return Promise.reject(new UnauthorizedError('INVALID_CREDENTIALS', 'Invalid e-mail or password'));
          return Promise.resolve({ id: principal.userId });
        },
      },
      {
        cachedPrincipal: (secret) => (secret === credentials.apiKey ? principal : undefined),
        authenticate: () => Promise.reject(new UnauthorizedError('INVALID_API_KEY', 'The API key is invalid or inactive')),
      },
      { begin: () => Promise.resolve(), succeeded: () => Promise.resolve(), failed: () => Promise.resolve() },
    ),
  );
  app.use(API_ROOT, (req, res, next) => {
    if (usesBasicAuth(req)) return next(); // limited per sign-in on the server, without X-RateLimit-*
    const d = limiter.consume(credentials.apiKey);
    res.setHeader('X-RateLimit-Limit', String(limiter.points));
    res.setHeader('X-RateLimit-Remaining', String(d.remaining));
    res.setHeader('X-RateLimit-Reset', String(Math.max(0, Math.ceil(d.msBeforeNext / 1000))));
    next(d.allowed ? undefined : rateLimitExceeded('Rate limit exceeded', d));
  });
  // The parser turns an empty JSON body into `{}`; the bytes (`req.rawBody`, as in the real server) tell a missing body apart.
  app.use(express.json({ type: JSON_TYPES, verify: (req, _res, buf) => void ((req as Request).rawBody = buf) }));
  app.use(async (req, res, next) => {
    try {
      const rawQuery = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '';
      const body = (req.rawBody?.length ?? 0) > 0 ? req.body : undefined;
      // As the server's refuseBody: any body on an operation that declares none is 415 UNEXPECTED_REQUEST_BODY.
      const operation = api.matchOperation({ method: req.method, path: req.path, headers: req.headers as Record<string, string | string[]> });
      if (operation && bodiless.has(String(operation.operationId)) && !bodyIsMissing(req)) return next(unexpectedBodyError());
      const reply: Reply = await api.handleRequest({ method: req.method, path: req.path, query: rawQuery, headers: req.headers as Record<string, string | string[]>, body }, req, res);
      if (reply.body === undefined) res.status(reply.status).end();
      else res.status(reply.status).json(reply.body);
    } catch (err) {
      next(err);
    }
  });
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    let reply: Reply;
    if (err instanceof DomainError) {
      for (const [name, value] of Object.entries(err.details?.headers ?? {})) res.setHeader(name, value);
      reply = errorReply(req, res, err.status, err.errorCode, err.message, err.details?.validationErrors);
    } else if (err?.type === 'entity.parse.failed') reply = errorReply(req, res, 400, 'INVALID_REQUEST_BODY', 'The request body is not valid JSON');
    else if (err?.type === 'entity.too.large') reply = errorReply(req, res, 413, 'PAYLOAD_TOO_LARGE', 'The request body is too large');
    else {
      process.stderr.write(`mock server error on ${req.method} ${req.originalUrl}: ${err?.stack ?? err}\n`);
      reply = errorReply(req, res, 500, 'INTERNAL_SERVER_ERROR', 'An unexpected error occurred');
    }
    res.status(reply.status).json(reply.body);
  };
  app.use(onError);
  return app;
}

/**
 * The mock's tus 1.0 endpoint (core protocol and termination): HEAD answers the offset, PATCH
 * counts the bytes at the right offset (and throws them away), DELETE forgets the upload. Errors
 * as the server's endpoint answers them: 403 ACCESS_DENIED for a wrong token, 404 NOT_FOUND for an
 * unknown upload, 409 for a wrong Upload-Offset, 413 for bytes past the size, 412 without
 * `Tus-Resumable: 1.0.0`, 415 for another Content-Type.
 */
function tusRouter(uploads: Map<string, MockUpload>): express.Router {
  const router = express.Router();
  const fail = (req: Request, res: Response, status: number, errorCode: string, message: string) =>
    void res
      .set(TUS_HEADERS)
      .status(status)
      .json(errorBody(req, res, status, errorCode, message));
  router.options(['/', '/:uploadId'], (_req, res) => {
    res
      .set({ ...TUS_HEADERS, 'Tus-Version': '1.0.0', 'Tus-Extension': 'termination', 'Tus-Max-Size': String(MAX_VIDEO_BYTES) })
      .status(204)
      .end();
  });
  router.all('/:uploadId', (req, res) => {
    const upload = uploads.get(req.params.uploadId);
    if (!upload) return fail(req, res, 404, 'NOT_FOUND', 'No such upload');
    if (req.query.token !== upload.token) return fail(req, res, 403, 'ACCESS_DENIED', 'The upload token is missing or wrong');
    if (req.headers['tus-resumable'] !== '1.0.0') return fail(req, res, 412, 'BAD_REQUEST', 'Tus-Resumable: 1.0.0 is required');
    if (req.method === 'HEAD')
      return void res
        .set({ ...TUS_HEADERS, 'Upload-Offset': String(upload.offset), 'Upload-Length': String(upload.size) })
        .status(200)
        .end();
    if (req.method === 'DELETE') {
      uploads.delete(req.params.uploadId);
      return void res.set(TUS_HEADERS).status(204).end();
    }
    if (req.method !== 'PATCH') return fail(req, res, 405, 'METHOD_NOT_ALLOWED', `Method ${req.method} is not allowed on ${req.path}`);
    if (!req.is('application/offset+octet-stream')) return fail(req, res, 415, 'UNSUPPORTED_CONTENT_TYPE', 'PATCH bodies must be sent as application/offset+octet-stream');
    if (Number(req.headers['upload-offset']) !== upload.offset) return fail(req, res, 409, 'CONFLICT', `Upload-Offset must be ${upload.offset}`);
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      if (upload.offset + chunk.length > upload.size) tooLarge = true;
      else upload.offset += chunk.length;
    });
    req.on('end', () => {
      if (tooLarge) return fail(req, res, 413, 'PAYLOAD_TOO_LARGE', `The upload has ${upload.size} bytes`);
      res
        .set({ ...TUS_HEADERS, 'Upload-Offset': String(upload.offset) })
        .status(204)
        .end();
    });
  });
  return router;
}

export async function startMockServer(opts: { host?: string; port?: number; credentials?: MockCredentials } = {}): Promise<MockServer> {
  const host = opts.host ?? '127.0.0.1';
  const app = await createMockApp({ credentials: opts.credentials });
  const server = await new Promise<import('node:http').Server>((resolve, reject) => {
    const s = app.listen(opts.port ?? 4010, host, () => resolve(s));
    s.on('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}${API_ROOT}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** The command line: flags, else VIDMILL_MOCK_HOST / VIDMILL_MOCK_PORT, else the defaults. */
export function mockSettings(argv: string[], env: NodeJS.ProcessEnv): { help: true } | { help: false; host: string; port: number } {
  const { values } = parseArgs({ args: argv, options: { host: { type: 'string' }, port: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) return { help: true };
  const host = values.host || env.VIDMILL_MOCK_HOST || '127.0.0.1';
  const rawPort = values.port || env.VIDMILL_MOCK_PORT || '4010';
  const port = Number(rawPort);
  if (!/^\d+$/.test(rawPort) || port > 65535) throw new Error(`the port must be a number from 0 to 65535, got "${rawPort}"`);
  return { help: false, host, port };
}

if (require.main === module) {
  let settings: ReturnType<typeof mockSettings>;
  try {
    settings = mockSettings(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (settings.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  startMockServer({ host: settings.host, port: settings.port }).then(
    (mock) => {
      const c = mockCredentials(process.env);
      process.stdout.write(`Vidmill mock server (examples from generated/openapi.json) at ${mock.url}\n`);
      process.stdout.write(`  X-API-Key: ${c.apiKey}\n  HTTP Basic (on /v1/api-keys): ${c.email}:${c.password}\n`);
      const stop = () => void mock.close().then(() => process.exit(0));
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    },
    (err) => {
      process.stderr.write(`mock server failed to start: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
}
