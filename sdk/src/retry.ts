/**
 * The fetch the client hands to openapi-fetch: retries what is safe to retry.
 *
 * - Retried: network errors, and answers 429, 502, 503, 504; also `409 IDEMPOTENCY_KEY_IN_USE`
 *   (the first attempt of the same POST is still running on the server).
 * - Methods: GET, HEAD, PUT, DELETE, and POST because every POST carries an `Idempotency-Key`
 *   (generated here unless the caller set one), the same on every attempt, so the server runs
 *   it once and replays its answer. PATCH is not retried.
 * - Delay: exponential back-off with jitter, at least the answer's `Retry-After` (seconds or an
 *   HTTP date). An answer that asks for more than `maxDelayMs` is returned as it is.
 * - Each attempt sends a clone of the request, so its body can be sent again.
 */
import { randomUUID } from 'node:crypto';
import { VidmillNetworkError } from './errors';
import { abortableSleep } from './sleep';

export interface RetryOptions {
  /** Retries after the first attempt (default 3); 0 disables retrying. */
  retries?: number;
  /** Back-off before the first retry, doubled for each further one, with jitter (default 500 ms). */
  baseDelayMs?: number;
  /** Longest wait before one retry (default 30 s); a longer `Retry-After` is not waited for. */
  maxDelayMs?: number;
  /** Called before each wait, e.g. to log it. */
  onRetry?: (event: RetryEvent) => void;
  /** How to wait (tests pass a clock's); `setTimeout` when absent. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Random number in [0, 1) for the jitter (default `Math.random`). */
  random?: () => number;
}

export interface RetryEvent {
  method: string;
  url: string;
  /** The attempt that just failed, from 1. */
  attempt: number;
  delayMs: number;
  /** Status of the failed answer, or undefined for a network error. */
  status?: number;
  error?: unknown;
}

export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);
const RETRYABLE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'POST', 'OPTIONS']);
export const DEFAULT_RETRIES = 3;

type Fetch = typeof globalThis.fetch;

/** A fetch that retries `fetchImpl`'s failures as above, and adds `Idempotency-Key` to POSTs. */
export function retryingFetch(fetchImpl: Fetch, options: RetryOptions = {}): Fetch {
  const retries = Math.max(0, Math.floor(options.retries ?? DEFAULT_RETRIES));
  const baseDelayMs = options.baseDelayMs ?? 500;
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  const sleep = options.sleep ?? abortableSleep;
  const random = options.random ?? Math.random;

  return async function fetchWithRetries(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const request = new Request(input, init);
    if (request.method === 'POST' && !request.headers.has('Idempotency-Key')) request.headers.set('Idempotency-Key', randomUUID());
    const retryable = RETRYABLE_METHODS.has(request.method);
    for (let attempt = 1; ; attempt++) {
      const last = !retryable || attempt > retries;
      let response: Response;
      try {
        response = await fetchImpl(last ? request : request.clone());
      } catch (error) {
        if (request.signal.aborted) throw error;
        if (last) throw new VidmillNetworkError(request.method, request.url, attempt, error);
        const delayMs = backoffMs(attempt, baseDelayMs, maxDelayMs, random);
        options.onRetry?.({ method: request.method, url: request.url, attempt, delayMs, error });
        await sleep(delayMs, request.signal);
        continue;
      }
      if (last || !(await shouldRetry(request, response))) return response;
      const asked = retryAfterMs(response.headers.get('Retry-After'));
      if (asked !== undefined && asked > maxDelayMs) return response;
      const delayMs = Math.max(asked ?? 0, backoffMs(attempt, baseDelayMs, maxDelayMs, random));
      options.onRetry?.({ method: request.method, url: request.url, attempt, delayMs, status: response.status });
      await response.body?.cancel().catch(() => undefined);
      await sleep(delayMs, request.signal);
    }
  };
}

async function shouldRetry(request: Request, response: Response): Promise<boolean> {
  if (RETRYABLE_STATUSES.has(response.status)) return true;
  if (response.status === 409 && request.method === 'POST') {
    const body = (await response
      .clone()
      .json()
      .catch(() => undefined)) as { errorCode?: unknown } | undefined;
    return body?.errorCode === 'IDEMPOTENCY_KEY_IN_USE';
  }
  return false;
}

/** Equal jitter: half of the doubled delay is fixed, the other half random; never above `maxMs`. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** Milliseconds a `Retry-After` value asks for (delay-seconds or an HTTP date); undefined if unparsable. */
export function retryAfterMs(value: string | null, now: () => number = Date.now): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now());
}
