/**
 * Helpers shared by scenario tests: polling for a condition, and API requests as a user.
 * No database and no harness of its own (test/jobs uses `waitFor` without the harness).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type supertest from 'supertest';
import { scaled } from './timeouts';

type Check<T> = () => Promise<T | undefined | false> | T | undefined | false;

/**
 * Resolves with the first truthy value of `check` (polled every `intervalMs`, default 20 ms),
 * else fails with "timed out waiting for `what`" after `timeoutMs` (default 20 s), a hang detector
 * written for a quiet machine and scaled to the runner's load (test/helpers/timeouts.ts); `exact`
 * keeps it as written, for a deadline the test asserts (a promise of the product's). Sleeps through
 * node:timers/promises, so it keeps working while a test mocks the global timers.
 */
export async function waitFor<T>(what: string, check: Check<T>, opts: { timeoutMs?: number; intervalMs?: number; exact?: boolean } = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const deadline = Date.now() + (opts.exact ? timeoutMs : scaled(timeoutMs));
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(opts.intervalMs ?? 20);
  }
}

/** Who a request is sent as: a user (its API key) or an API key. */
export type Caller = { apiKey: string } | string;

export interface ApiRequests {
  /** GET `/api${path}`. */
  get(this: void, path: string, as?: Caller): supertest.Test;
  /** POST `/api${path}`, with `body` as JSON when given (none at all otherwise). */
  post(this: void, path: string, body?: object, as?: Caller): supertest.Test;
  /** DELETE `/api${path}`. */
  del(this: void, path: string, as?: Caller): supertest.Test;
}

/**
 * Requests to `/api${path}` with an API key in `X-API-Key`: the caller's when given, else the
 * default caller's. Both are read at each request, so they may be reassigned in `beforeEach`:
 * `const { get, post, del } = apiRequests(() => h, () => u);`
 */
export function apiRequests(harness: () => { request: supertest.Agent }, defaultCaller: () => Caller): ApiRequests {
  const key = (as?: Caller) => {
    const caller = as ?? defaultCaller();
    return typeof caller === 'string' ? caller : caller.apiKey;
  };
  return {
    get: (path, as) => harness().request.get(`/api${path}`).set('X-API-Key', key(as)),
    post(path, body, as) {
      const req = harness().request.post(`/api${path}`).set('X-API-Key', key(as));
      return body === undefined ? req : req.send(body);
    },
    del: (path, as) => harness().request.delete(`/api${path}`).set('X-API-Key', key(as)),
  };
}
