/**
 * Counts every HTTP request the app answers (`vidmill_http_requests_total`,
 * `vidmill_http_request_duration_seconds`) by operation and status, when its response finishes
 * or its connection closes first.
 *
 * The operation is the contract's operationId: the validator's (`req.openapi`), or, for an /api
 * request answered before the validator ran (401 from authentication, 429 from the rate limit,
 * 413/415 from the body parser), the operation its method and path match in the contract.
 * Outside the contract: `healthz`, `readyz`, `docs` (/, /docs, /openapi.json), `media` (signed
 * media links), `metrics`, and `unmatched` for everything else (unknown paths and methods), so
 * the label's values stay a bounded set whatever clients send. A response whose connection
 * closed before its headers were sent has status `aborted`.
 */
import type { Request, RequestHandler, Response } from 'express';
import { performance } from 'node:perf_hooks';
import { recordHttpRequest } from '../shared/metrics';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

interface Route {
  regexp: RegExp;
  /** Literal segments before parameters: the route that matches with more literals wins. */
  literals: number;
  operations: Map<string, string>;
}

/** Matches `/api/...` paths to the contract's operations (only for requests the validator did not reach). */
export class OperationMatcher {
  private readonly routes: Route[];

  constructor(
    contract: { paths?: object },
    private readonly prefix = '/api',
  ) {
    this.routes = Object.entries((contract.paths ?? {}) as Record<string, Record<string, unknown> | undefined>)
      .map(([template, item]) => {
        const segments = template.split('/').slice(1);
        const pattern = segments.map((s) => (/^\{[^}]+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
        const operations = new Map<string, string>();
        for (const method of METHODS) {
          const operationId = (item?.[method] as { operationId?: unknown } | undefined)?.operationId;
          if (typeof operationId === 'string') operations.set(method.toUpperCase(), operationId);
        }
        return { regexp: new RegExp(`^/${pattern}/?$`), literals: segments.filter((s) => !s.startsWith('{')).length, operations };
      })
      .sort((a, b) => b.literals - a.literals);
  }

  /** The operationId of `method path` (path with the /api prefix), or undefined. */
  match(method: string, path: string): string | undefined {
    if (!path.startsWith(this.prefix + '/')) return undefined;
    const rest = path.slice(this.prefix.length);
    for (const r of this.routes) if (r.regexp.test(rest)) return r.operations.get(method === 'HEAD' && !r.operations.has('HEAD') ? 'GET' : method);
    return undefined;
  }
}

const START = Symbol('vidmill.httpMetricsStart');
type TimedResponse = Response & { [START]?: number; req: Request & { [MATCHER]?: OperationMatcher } };
const MATCHER = Symbol('vidmill.operationMatcher');

export function httpMetrics(matcher: OperationMatcher): RequestHandler {
  return (req, res, next) => {
    (res as TimedResponse)[START] = performance.now();
    (req as TimedResponse['req'])[MATCHER] = matcher;
    res.on('close', onClose);
    next();
  };
}

/** Listener of 'close' (`this` is the response): records once. */
function onClose(this: TimedResponse): void {
  const start = this[START];
  if (start === undefined) return;
  this[START] = undefined;
  const status = this.headersSent ? String(this.statusCode) : 'aborted';
  recordHttpRequest(operationOf(this.req), status, (performance.now() - start) / 1000);
}

function operationOf(req: TimedResponse['req']): string {
  const operationId = req.openapi?.schema.operationId;
  if (typeof operationId === 'string') return operationId;
  const url = req.originalUrl;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path.startsWith('/api/')) return req[MATCHER]?.match(req.method, path) ?? 'unmatched';
  if (path === '/healthz') return 'healthz';
  if (path === '/readyz') return 'readyz';
  if (path === '/metrics') return 'metrics';
  if (path === '/' || path === '/openapi.json' || path === '/docs' || path.startsWith('/docs/')) return 'docs';
  if (path.startsWith('/media/')) return 'media';
  return 'unmatched';
}
