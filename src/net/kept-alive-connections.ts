/**
 * Requests on kept-alive connections. An agent keeps a connection open after a response to
 * reuse it; the peer may close it while it is idle (its keep-alive timeout: 5 s in Node, 75 s in
 * nginx) just as the next request goes out on it. That request fails with ECONNRESET or EPIPE
 * before any answer, and the peer never read it: Node's documentation advises sending it again
 * on a new connection. Every outbound HTTP client of the service that reuses connections (the
 * HTTPS range source of video-in, webhook deliveries) decides "stale connection, send again"
 * here, the one way.
 */
import type { ClientRequest } from 'node:http';

/** How many times one request is sent in all when each try meets a stale connection. */
export const STALE_CONNECTION_TRIES = 3;

const STALE_CONNECTION_ERRORS = new Set(['ECONNRESET', 'EPIPE']);

/** Connections that have carried a response: a request sent on one of them reuses it. */
const servedConnections = new WeakSet<object>();

/**
 * Watches `req`: the answer tells, once it has failed, whether the failure was a stale kept-alive
 * connection (a reused connection, an ECONNRESET or EPIPE, no response). Node's
 * `req.reusedSocket` is not used: it is not set for a request that waited in the agent's queue
 * for a kept-alive connection.
 */
export function keptAliveWatch(req: ClientRequest): { staleFailure(err: unknown): boolean } {
  let reused = false;
  let answered = false;
  req.once('socket', (socket) => void (reused = servedConnections.has(socket)));
  req.once('response', () => {
    answered = true;
    if (req.socket) servedConnections.add(req.socket);
  });
  return {
    staleFailure: (err) => reused && !answered && STALE_CONNECTION_ERRORS.has((err as NodeJS.ErrnoException | undefined)?.code ?? ''),
  };
}
