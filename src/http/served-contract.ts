/**
 * The contract as an installation serves it (`/openapi.json`, read by Swagger UI at `/docs`):
 * its one server is this installation's API, so "Try it out" and clients generated from the
 * served document call this server, never a host written into the committed document.
 *
 * - `VIDMILL_PUBLIC_URL` set: `<public URL>/api`, the address clients reach (behind a proxy or
 *   load balancer, with its path prefix if any).
 * - Else the request's own origin: the connection's protocol (no `X-Forwarded-*` header is
 *   trusted) and the `Host` header, derived per request. `Host` is the caller's to choose, so it
 *   shapes nothing but this document; one that is not a plain `host[:port]` gives the relative
 *   `/api`, which a browser resolves against the page.
 */
import type { Request } from 'express';

const API_ROOT = '/api';
const PLAIN_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** The base URL of the API named in the served document. */
export function servedApiUrl(req: Request, publicUrl: string | undefined): string {
  if (publicUrl) return publicUrl.replace(/\/+$/, '') + API_ROOT;
  const host = req.headers.host;
  return host && PLAIN_HOST.test(host) ? `${req.protocol}://${host}${API_ROOT}` : API_ROOT;
}

/** `contract` with this installation as its only server. */
export function servedContract<T extends object>(contract: T, req: Request, publicUrl: string | undefined): T & { servers: { url: string; description: string }[] } {
  return { ...contract, servers: [{ url: servedApiUrl(req, publicUrl), description: 'This server' }] };
}
