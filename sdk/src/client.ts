/**
 * The client: openapi-fetch over the generated types of the contract, with the API key sent on
 * every request and retries with back-off (retry.ts: network errors, 429, 502, 503, 504,
 * `Retry-After`, an `Idempotency-Key` on every POST). `client.api` is the typed client
 * (`client.api.GET('/v1/videos/{videoId}', ...)`); `unwrap` turns its result into the data or a
 * thrown `VidmillApiError`.
 */
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/api';
import { VidmillApiError } from './errors';
import { retryingFetch, type RetryOptions } from './retry';

export interface VidmillClientOptions {
  /** Address of the server, for example `https://vidmill.example.com` (the API is under `/api`). */
  baseUrl: string;
  /** API key, sent as `X-API-Key`. */
  apiKey?: string;
  /** The fetch implementation; the global one when absent. */
  fetch?: typeof globalThis.fetch;
  /** Retries after the first attempt (default 3); 0 disables retrying. */
  retries?: number;
  /** The rest of the retry policy: back-off, longest wait, `onRetry`, `sleep` (retry.ts). */
  retry?: Omit<RetryOptions, 'retries'>;
}

export interface VidmillClient {
  /** The typed client for every operation of the contract. */
  readonly api: Client<paths>;
  /** Address of the server, without a trailing slash. */
  readonly baseUrl: string;
  readonly apiKey?: string;
}

export function createVidmillClient(options: VidmillClientOptions): VidmillClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  // The global fetch is looked up at each call, so a fetch replaced later (tests, polyfills) is used.
  const baseFetch = options.fetch ?? ((input: string | URL | Request, init?: RequestInit) => globalThis.fetch(input, init));
  const fetch = retryingFetch(baseFetch, { ...options.retry, retries: options.retries });
  const api = createClient<paths>({ baseUrl: `${baseUrl}/api`, fetch });
  const apiKey = options.apiKey;
  if (apiKey) {
    api.use({
      onRequest({ request }) {
        request.headers.set('X-API-Key', apiKey);
        return request;
      },
    });
  }
  return { api, baseUrl, apiKey };
}

/** The data of a successful call, or the `VidmillApiError` of a failed one, thrown. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok) return result.data as T;
  throw VidmillApiError.fromResponse(result.response, result.error);
}
