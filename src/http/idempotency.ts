/**
 * Idempotent retries of POST requests that carry an `Idempotency-Key` header (Stripe's
 * semantics; the IETF httpapi "Idempotency-Key HTTP Header Field" draft). docs/security.md
 * "Idempotent retries" states the rules for clients.
 *
 * - The key belongs to the caller (`scope`: the API key, or the user under Basic auth).
 * - The first request reserves it (one guarded INSERT, so one winner across processes), runs,
 *   and its 2xx response (status, body, Content-Type, Location) is stored, sealed, for the
 *   retention (`ttlMs`) before the client sees it. A retry of the same request (same
 *   fingerprint: method, path with query, canonical JSON body) gets that response again with
 *   `Idempotent-Replayed: true`, without running.
 * - Same key, other request: 422 IDEMPOTENCY_KEY_REUSED. Same key while the first still runs:
 *   409 IDEMPOTENCY_KEY_IN_USE.
 * - Any other answer (4xx: validation, auth, domain rules; 5xx: the transaction rolled back)
 *   releases the key, so a corrected retry runs.
 * - A reservation is a lease (`leaseMs`): if the process dies mid-request, a retry after the
 *   lease runs again.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Db } from '../db/database';
import type { SecretBox } from '../security/secret-box';
import type { Clock } from '../shared/clock';
import { ConflictError, UnprocessableError } from '../shared/errors';
import { principalOf } from './auth';
import { idempotencyStore } from './idempotency.store';
import type { Principal } from './operations';
import { repeatedHeaderError } from './single-headers';

export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
/** How long a request holds its key; after that a retry runs again (its process may be gone). */
export const IDEMPOTENCY_LEASE_MS = 5 * 60_000;
/** Headers replayed with the stored body; the others (request id, rate limit) are the retry's own. */
const REPLAYED_HEADERS = ['content-type', 'location'];

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  /** Undefined for a response without a body. */
  body?: string;
}

export type KeyDecision = { outcome: 'run'; leaseToken: string } | { outcome: 'replay'; response: StoredResponse } | { outcome: 'in-progress' } | { outcome: 'reused' };

/** The rules of idempotency keys over their store. */
export class IdempotencyKeys {
  private readonly leaseMs: number;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly secretBox: SecretBox,
    private readonly opts: { ttlMs: number; leaseMs?: number },
  ) {
    this.leaseMs = opts.leaseMs ?? IDEMPOTENCY_LEASE_MS;
  }

  /** Reserves `key` of `scope` for a request with this fingerprint, or says why it may not run. */
  async reserve(scope: string, key: string, fingerprint: string): Promise<KeyDecision> {
    const now = this.clock.now();
    const reservation = { scope, key, fingerprint, leaseToken: randomUUID(), createdAt: now, expiresAt: new Date(now.getTime() + this.leaseMs) };
    // A row can vanish (released, purged) or be taken over between our statements; look again.
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await idempotencyStore.insert(this.db, reservation)) return { outcome: 'run', leaseToken: reservation.leaseToken };
      const held = await idempotencyStore.get(this.db, scope, key);
      if (!held) continue;
      if (held.expiresAt <= now) {
        if (await idempotencyStore.takeOver(this.db, reservation, now)) return { outcome: 'run', leaseToken: reservation.leaseToken };
        continue;
      }
      if (held.fingerprint !== fingerprint) return { outcome: 'reused' };
      if (held.response === undefined) return { outcome: 'in-progress' };
      return { outcome: 'replay', response: JSON.parse(this.secretBox.open(held.response, sealContext(scope, key))) as StoredResponse };
    }
    // Other requests with this key kept changing it under us: one of them holds it now.
    return { outcome: 'in-progress' };
  }

  /** Stores the response for replays; false when the request had lost the key (lease expired and taken over). */
  async complete(scope: string, key: string, leaseToken: string, response: StoredResponse): Promise<boolean> {
    const sealed = this.secretBox.seal(JSON.stringify(response), sealContext(scope, key));
    const expiresAt = new Date(this.clock.now().getTime() + this.opts.ttlMs);
    return idempotencyStore.complete(this.db, scope, key, leaseToken, sealed, expiresAt);
  }

  /** Frees the key for the next request (the first one was rejected or failed). */
  async release(scope: string, key: string, leaseToken: string): Promise<void> {
    await idempotencyStore.release(this.db, scope, key, leaseToken);
  }

  /** Deletes stored responses past retention and leases past expiry (the purge task). */
  async purgeExpired(): Promise<number> {
    return idempotencyStore.deleteExpired(this.db, this.clock.now());
  }
}

/** Responses may hold secrets (a created API key): sealed, bound to their row. */
const sealContext = (scope: string, key: string) => JSON.stringify(['idempotency', scope, key]);

export function idempotencyScope(principal: Principal): string {
  return principal.apiKeyId !== undefined ? `key:${principal.apiKeyId}` : `user:${principal.userId}`;
}

/** JSON with object keys sorted and no whitespace: equal for bodies that differ only in layout. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 of method, path with query string, and canonical JSON body (as received). */
export function requestFingerprint(method: string, url: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${url}\n${body === undefined ? '' : canonicalJson(body)}`)
    .digest('hex');
}

function replay(res: Response, stored: StoredResponse): void {
  for (const [name, value] of Object.entries(stored.headers)) res.setHeader(name, value);
  res.setHeader('Idempotent-Replayed', 'true');
  res.status(stored.status);
  if (stored.body === undefined) res.end();
  else res.send(stored.body);
}

/**
 * Settles the key when the response is handed over: a 2xx is stored, anything else releases
 * the key. The response leaves only once that is written, so a client that has seen it finds
 * the key settled. Every API response is ended through `res.end` (dispatch's `res.json`,
 * `sendError`'s `res.send`); bodies written before it are collected too.
 */
function settleOnEnd(req: Request, res: Response, settle: (status: number, body: Buffer | undefined) => Promise<unknown>): void {
  // Taken off the response to be restored and called with it as `this`.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const write = res.write as (this: Response, ...args: unknown[]) => boolean;
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const end = res.end as (this: Response, ...args: unknown[]) => Response;
  const chunks: Buffer[] = [];
  const collect = (chunk: unknown, encoding: unknown) => {
    if (typeof chunk === 'string') chunks.push(Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
  };
  res.write = function (this: Response, chunk: unknown, ...rest: unknown[]) {
    collect(chunk, rest[0]);
    return write.call(this, chunk, ...rest);
  } as Response['write'];
  res.end = function (this: Response, ...args: unknown[]) {
    res.write = write as Response['write'];
    res.end = end as Response['end'];
    if (typeof args[0] !== 'function') collect(args[0], args[1]);
    settle(res.statusCode, chunks.length ? Buffer.concat(chunks) : undefined)
      .catch((err) => req.log?.error({ err }, 'could not settle the idempotency key'))
      .finally(() => end.apply(res, args));
    return res;
  } as Response['end'];
}

function storedResponse(res: Response, body: Buffer | undefined): StoredResponse {
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = res.getHeader(name);
    if (value !== undefined) headers[name] = String(value);
  }
  return { status: res.statusCode, headers, ...(body ? { body: body.toString('utf8') } : {}) };
}

/**
 * The middleware: after authentication and the rate limit, before request validation (which
 * answers a malformed key with 400; such a request is not reserved here).
 */
export function idempotency(keys: IdempotencyKeys): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'POST') return next();
    // Node joins two Idempotency-Key headers into one key ("a, b"): refuse the ambiguity.
    const repeated = repeatedHeaderError(req, ['idempotency-key']);
    if (repeated) return next(repeated);
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX_LENGTH) return next();
    const scope = idempotencyScope(principalOf(req));
    keys.reserve(scope, key, requestFingerprint(req.method, req.originalUrl, req.body)).then((decision) => {
      switch (decision.outcome) {
        case 'run':
          settleOnEnd(req, res, async (status, body) => {
            if (status < 200 || status > 299) return keys.release(scope, key, decision.leaseToken);
            const stored = await keys.complete(scope, key, decision.leaseToken, storedResponse(res, body));
            if (!stored) req.log?.warn({ status }, 'response not stored for replay: the idempotency key was taken over after its lease');
          });
          return next();
        case 'replay':
          return replay(res, decision.response);
        case 'in-progress':
          return next(new ConflictError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still being processed; retry once it has finished'));
        case 'reused':
          return next(new UnprocessableError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for a different request (method, path, query or body); use a new key for a new request'));
      }
    }, next);
  };
}
