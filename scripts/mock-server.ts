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
 * - Answers each operation with its success status and the example of that response (a mock
 *   generated from the schema only when no example exists); responses without a body (204)
 *   send no body. The mock does not authenticate and keeps no state.
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
import { echoedValue, errorBody, notFoundMessage, setDocumentedErrorCodes } from '../src/http/error-mapper';
import { STORED_VALUE_FORMATS } from '../src/http/formats';
import { hasBody } from '../src/http/json-body';
import { requestId } from '../src/http/request-id';
import type { ValidationIssue } from '../src/shared/errors';

export const CONTRACT_FILE = path.resolve(__dirname, '..', 'generated', 'openapi.json');
const API_ROOT = '/api';
const JSON_TYPES = ['application/json', 'application/*+json'];

export const USAGE = `usage: npm run mock [-- --host H] [-- --port P]
Serves the whole Vidmill contract (generated/openapi.json) from its examples at http://H:P/api:
requests are validated like the real server's, answers are the contract's examples, no state.

  --host H    address to listen on; default VIDMILL_MOCK_HOST, else 127.0.0.1
  --port P    port (0 picks a free one); default VIDMILL_MOCK_PORT, else 4010
  --help      this text`;

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

export async function createMockApp(definition: any = JSON.parse(readFileSync(CONTRACT_FILE, 'utf8'))): Promise<express.Express> {
  setDocumentedErrorCodes(definition.components.schemas.ErrorCodeEnum.enum);
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

  // The mock does not authenticate: any (or no) credentials are accepted.
  for (const scheme of Object.keys(expanded.components?.securitySchemes ?? {})) api.registerSecurityHandler(scheme, () => true);

  api.register({
    notFound: (_c: Context, req: Request, res: Response) => errorReply(req, res, 404, 'NOT_FOUND', notFoundMessage(req.method, req.path)),
    methodNotAllowed: (_c: Context, req: Request, res: Response) => errorReply(req, res, 405, 'METHOD_NOT_ALLOWED', `Method ${req.method} is not allowed on ${req.path}`),
    // Like the real server: no body is MISSING_REQUEST_BODY, a body that is not JSON is a 415.
    validationFail: (c: Context, req: Request, res: Response) => {
      if (bodyMissing(c) && hasBody(req) && !req.is(JSON_TYPES)) return errorReply(req, res, 415, 'UNSUPPORTED_CONTENT_TYPE', 'Request bodies must be sent as application/json');
      if (bodyMissing(c)) return errorReply(req, res, 400, 'MISSING_REQUEST_BODY', 'This operation requires a JSON request body');
      return errorReply(req, res, 400, 'VALIDATION_ERROR', 'Request validation failed', validationIssues(c));
    },
    // Every operation is "not implemented" in the mock: answer it from the contract.
    notImplemented: (c: Context): Reply => {
      const operation = c.operation;
      const status = successStatus(operation);
      const response = (operation.responses as any)?.[status];
      if (!response?.content) return { status };
      return { status, body: c.api.mockResponseForOperation(operation.operationId!, { code: status }).mock };
    },
  });
  await api.init();

  const app = express();
  app.disable('x-powered-by');
  app.use(requestId);
  // The parser turns an empty JSON body into `{}`; the bytes (`req.rawBody`, as in the real server) tell a missing body apart.
  app.use(express.json({ type: JSON_TYPES, verify: (req, _res, buf) => void ((req as Request).rawBody = buf) }));
  app.use(async (req, res, next) => {
    try {
      const rawQuery = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '';
      const body = (req.rawBody?.length ?? 0) > 0 ? req.body : undefined;
      const reply: Reply = await api.handleRequest({ method: req.method, path: req.path, query: rawQuery, headers: req.headers as Record<string, string | string[]>, body }, req, res);
      if (reply.body === undefined) res.status(reply.status).end();
      else res.status(reply.status).json(reply.body);
    } catch (err) {
      next(err);
    }
  });
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    let reply: Reply;
    if (err?.type === 'entity.parse.failed') reply = errorReply(req, res, 400, 'INVALID_REQUEST_BODY', 'The request body is not valid JSON');
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

export async function startMockServer(opts: { host?: string; port?: number } = {}): Promise<MockServer> {
  const host = opts.host ?? '127.0.0.1';
  const app = await createMockApp();
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
      process.stdout.write(`Vidmill mock server (examples from generated/openapi.json) at ${mock.url}\n`);
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
