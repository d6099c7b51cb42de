/**
 * Failures of a request that got no HTTP answer: refused, reset, unreachable, not resolved,
 * timed out. Callers answer all of them with one message, so that an answer never tells a closed
 * port from a refused connection from a silent host (no port scanning through Vidmill).
 */

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'EPIPE',
  'ERR_SOCKET_CONNECTION_TIMEOUT',
]);
const TIMEOUT_NAMES = new Set(['TimeoutError', 'RequestTimeout']);

/**
 * True when the error, or anything it wraps (`cause`, an AggregateError's `errors` as Node's
 * happy-eyeballs connect throws), is a network failure: no HTTP status was received.
 */
export function isNetworkFailure(err: unknown, depth = 0): boolean {
  const e = err as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; errors?: unknown; $metadata?: { httpStatusCode?: number } } | undefined;
  if (!e || typeof e !== 'object' || depth > 5) return false;
  if (e.$metadata?.httpStatusCode !== undefined) return false;
  if (NETWORK_CODES.has(String(e.code)) || NETWORK_CODES.has(String(e.name)) || TIMEOUT_NAMES.has(String(e.name))) return true;
  if (typeof e.message === 'string' && /socket hang up/i.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isNetworkFailure(x, depth + 1))) return true;
  return e.cause !== undefined && e.cause !== err && isNetworkFailure(e.cause, depth + 1);
}
