/**
 * Under test only: checks the status and headers of every response the app sends against what
 * the contract declares (express-openapi-validator checks success bodies; this checks the rest).
 *
 * - A request under `/api` that matches an operation (the validator's `req.openapi`, else the
 *   path and method matched here, e.g. when authentication or the rate limit answered before the
 *   validator ran): its status must be declared for that operation, and every header declared
 *   `required: true` on that response must be present.
 * - A request under `/api` outside the contract has no operation to declare anything on. The
 *   root description of the contract documents the answers, and they are checked exactly: a
 *   path the contract lacks is 404 `NOT_FOUND`, a method the path lacks 405 with `Allow`; 401
 *   for both when the credentials are missing or wrong, since authentication runs before the
 *   path is looked up (so no one learns which paths exist without a key). Every one carries
 *   X-Request-Id. A path whose percent-escapes do not decode names no operation: it is
 *   `400 INVALID_REQUEST_PATH`, answered before authentication.
 * - Responses outside `/api` (health, readiness, the served document, Swagger UI, signed media
 *   links) are not operations of the contract and are not checked here; their own tests cover
 *   them.
 *
 * `conformanceCheck` is the middleware (it wraps `res.writeHead`, where status and headers are
 * final); violations are recorded by request id and taken by the harness, which fails the
 * request that caused them, and any left over in a root `afterEach` and in `close()`.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { RequestHandler } from 'express';
import { decodablePath } from '../../src/http/request-path';

const API_ROOT = '/api';
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

type Json = Record<string, any>;

interface Route {
  template: string;
  regexp: RegExp;
  /** Per segment: true when literal; a literal beats a parameter at the first difference. */
  literals: boolean[];
  item: Json;
}

export interface Violation {
  requestId: string | undefined;
  text: string;
}

const recorded: Violation[] = [];

/** Removes and returns the violations of one response (by X-Request-Id), or all of them. */
export function takeViolations(requestId?: string): string[] {
  const taken: string[] = [];
  for (let i = recorded.length - 1; i >= 0; i--) {
    if (requestId === undefined || recorded[i]!.requestId === requestId) taken.unshift(recorded.splice(i, 1)[0]!.text);
  }
  return taken;
}

function compileRoutes(contract: Json): Route[] {
  return Object.entries<Json>(contract.paths).map(([template, item]) => {
    const segments = template.split('/').slice(1);
    const pattern = segments.map((s) => (/^\{[^}]+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
    // Express routes as the validator matches them: case-insensitive, a trailing slash allowed.
    return { template, regexp: new RegExp(`^/${pattern}/?$`, 'i'), literals: segments.map((s) => !s.startsWith('{')), item };
  });
}

/** The contract path a request path falls under; literal segments win over templated ones. */
function matchRoute(routes: Route[], path: string): Route | undefined {
  const candidates = routes.filter((r) => r.regexp.test(path));
  const beats = (a: Route, b: Route) => {
    const i = a.literals.findIndex((lit, k) => lit !== b.literals[k]);
    return i >= 0 && a.literals[i];
  };
  return candidates.reduce<Route | undefined>((best, r) => (best === undefined || beats(r, best) ? r : best), undefined);
}

function resolve(contract: Json, node: Json | undefined): Json | undefined {
  if (!node?.$ref) return node;
  return resolve(
    contract,
    node.$ref
      .split('/')
      .slice(1)
      .reduce((o: Json, k: string) => o?.[k], contract),
  );
}

/** Header names of a response about to be written: those set so far and those passed to writeHead. */
function headerNames(stored: OutgoingHttpHeaders, passed: unknown): Set<string> {
  const names = new Set(Object.keys(stored).map((k) => k.toLowerCase()));
  if (Array.isArray(passed)) {
    // [name, value, name, value...] or [[name, value], ...]
    if (Array.isArray(passed[0])) for (const [k] of passed as string[][]) names.add(String(k).toLowerCase());
    else for (let i = 0; i < passed.length; i += 2) names.add(String(passed[i]).toLowerCase());
  } else if (passed && typeof passed === 'object') {
    for (const k of Object.keys(passed)) names.add(k.toLowerCase());
  }
  return names;
}

/** What is wrong with `status` and `headers` for this request (empty when nothing is). */
function checkResponse(contract: Json, routes: Route[], req: { method: string; path: string; operationId?: string; headers: IncomingHttpHeaders }, status: number, headers: Set<string>): string[] {
  const problems: string[] = [];
  if (!decodablePath(req.path)) {
    if (!headers.has('x-request-id')) problems.push('has no X-Request-Id');
    if (status !== 400) problems.push(`answered ${status}; a path that does not decode is documented as 400 only`);
    return problems;
  }
  const route = matchRoute(routes, req.path.slice(API_ROOT.length));
  const method = req.method.toLowerCase();
  const byId =
    req.operationId &&
    Object.values<Json>(contract.paths)
      .flatMap((item) => METHODS.map((m) => item[m]))
      .find((op) => op?.operationId === req.operationId);
  const operation: Json | undefined = byId || route?.item[method];
  if (!headers.has('x-request-id')) problems.push('has no X-Request-Id');
  if (!operation) {
    const expected = route ? 405 : 404;
    if (status !== expected && status !== 401) problems.push(`answered ${status}; outside the contract only ${expected} (or 401) is documented`);
    if (status === 405 && !headers.has('allow')) problems.push('405 without Allow');
    return problems;
  }
  const declared = operation.responses ?? {};
  const response = resolve(contract, declared[String(status)] ?? declared[`${String(status)[0]}XX`] ?? declared.default);
  if (!response) return [...problems, `${operation.operationId} does not declare ${status} (declared: ${Object.keys(declared).join(', ')})`];
  for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
    if (resolve(contract, header)?.required === true && !headers.has(name.toLowerCase())) problems.push(`${operation.operationId} ${status} lacks the required header ${name}`);
  }
  return problems;
}

/** The middleware; install it before the app (the harness does). */
export function conformanceCheck(contract: Json): RequestHandler {
  const routes = compileRoutes(contract);
  return (req, res, next) => {
    const path = req.originalUrl.split('?')[0]!;
    if (path !== API_ROOT && !path.startsWith(API_ROOT + '/')) return next();
    // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be called with .call(this)
    const writeHead = res.writeHead;
    res.writeHead = function (this: typeof res, status: number, ...rest: any[]) {
      const passed = rest.find((x) => typeof x === 'object');
      const operationId = req.openapi?.schema.operationId;
      const problems = checkResponse(contract, routes, { method: req.method, path, operationId, headers: req.headers }, status, headerNames(res.getHeaders(), passed));
      const requestId = res.getHeader('X-Request-Id') as string | undefined;
      for (const p of problems) recorded.push({ requestId, text: `${req.method} ${req.originalUrl} -> ${status}: ${p}` });
      return (writeHead as any).call(this, status, ...rest);
    } as typeof res.writeHead;
    next();
  };
}
