/**
 * Request budgets per fixed one-minute window: per API key here (`rateLimit`), and per client
 * address and e-mail for HTTP Basic sign-ins (`sign-in-limit.ts`). A window starts with the
 * key's first request and lasts a minute; over the limit is 429 TOO_MANY_REQUESTS with
 * Retry-After. The X-RateLimit headers go on every response of an API-key operation.
 *
 * - Embedded (SQLite, one process): `FixedWindowLimiter`, in memory and synchronous, so the
 *   check costs a map lookup and no promise on every request.
 * - PostgreSQL (any number of API processes): rate-limiter-flexible's `RateLimiterPostgres`, so
 *   every process shares one budget through the `rate_limits` table.
 *
 * Both answer with the same numbers: the same window rule as rate-limiter-flexible's memory
 * limiter (used here before), so the headers are unchanged.
 */
import type { RequestHandler, Response } from 'express';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { Db, isPostgres } from '../db/database';
import { DomainError, TooManyRequestsError } from '../shared/errors';
import { recordRateLimitRejection } from '../shared/metrics';
import { principalOf } from './auth';

export const RATE_WINDOW_MS = 60_000;

/** The outcome of counting one request against a key's budget. */
export interface RateDecision {
  allowed: boolean;
  /** Requests left in the window (0 when over). */
  remaining: number;
  /** Until the window ends. */
  msBeforeNext: number;
}

export interface RequestLimiter {
  /** Requests per window. */
  readonly points: number;
  /** Counts one request of `key`; synchronous where the budget lives in this process. */
  consume(key: string): RateDecision | Promise<RateDecision>;
  /**
   * Gives back one request counted in `key`'s current window (a sign-in whose password was
   * right). Nothing when the window has ended or nothing is counted: a refund never carries
   * over into the next window.
   */
  refund(key: string): void | Promise<void>;
}

/**
 * In-memory fixed windows (one process). Expired windows are dropped by a sweep at most once per
 * window length, so memory stays bounded by the keys active in the last two windows.
 */
export class FixedWindowLimiter implements RequestLimiter {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();
  private nextSweepAt: number;

  constructor(
    readonly points: number,
    private readonly windowMs = RATE_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.nextSweepAt = this.now() + windowMs;
  }

  consume(key: string): RateDecision {
    const t = this.now();
    if (t >= this.nextSweepAt) this.sweep(t);
    let w = this.windows.get(key);
    if (w === undefined || w.endsAt <= t) {
      w = { count: 0, endsAt: t + this.windowMs };
      this.windows.set(key, w);
    }
    w.count++;
    return { allowed: w.count <= this.points, remaining: Math.max(this.points - w.count, 0), msBeforeNext: w.endsAt - t };
  }

  refund(key: string): void {
    const w = this.windows.get(key);
    if (w !== undefined && w.endsAt > this.now() && w.count > 0) w.count--;
  }

  /** Keys with a window (tests). */
  get size(): number {
    return this.windows.size;
  }

  private sweep(t: number): void {
    for (const [key, w] of this.windows) if (w.endsAt <= t) this.windows.delete(key);
    this.nextSweepAt = t + this.windowMs;
  }
}

/** rate-limiter-flexible on the PostgreSQL table shared by every API process. */
class PostgresLimiter implements RequestLimiter {
  private readonly limiter: RateLimiterPostgres;

  constructor(
    private readonly db: Db,
    readonly points: number,
    keyPrefix: string,
  ) {
    this.limiter = new RateLimiterPostgres({
      points,
      duration: RATE_WINDOW_MS / 1000,
      keyPrefix,
      storeClient: db,
      storeType: 'knex',
      tableName: 'rate_limits',
      tableCreated: true,
      clearExpiredByTimeout: false,
    });
  }

  async consume(key: string): Promise<RateDecision> {
    try {
      const r = await this.limiter.consume(key);
      return { allowed: true, remaining: Math.max(0, r.remainingPoints), msBeforeNext: r.msBeforeNext };
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      return { allowed: false, remaining: Math.max(0, rejection.remainingPoints), msBeforeNext: rejection.msBeforeNext };
    }
  }

  async refund(key: string): Promise<void> {
    // Not rate-limiter-flexible's `reward`: on an ended window it would start the next one at -1.
    await this.db('rate_limits')
      .where({ key: this.limiter.getKey(key) })
      .andWhere('expire', '>', Date.now())
      .andWhere('points', '>', 0)
      .decrement('points', 1);
  }
}

/** `keyPrefix` names the budget in the shared PostgreSQL table (one per kind of limit). */
export function createRateLimiter(db: Db, perMinute: number, keyPrefix = 'api'): RequestLimiter {
  return isPostgres(db) ? new PostgresLimiter(db, perMinute, keyPrefix) : new FixedWindowLimiter(perMinute);
}

/**
 * Deletes ended windows from the shared PostgreSQL table (rate-limiter-flexible only rewrites
 * a key's row when the key comes back, and its own timer is off). Sign-in budgets are keyed by
 * client address and e-mail, which clients choose, so without this the table only grows.
 * Nothing to do on SQLite: the in-memory limiters drop ended windows themselves.
 */
export async function sweepEndedRateWindows(db: Db, now: Date): Promise<number> {
  if (!isPostgres(db)) return 0;
  return db('rate_limits').where('expire', '<', now.getTime()).delete();
}

/** The 429 answer of every limit: TOO_MANY_REQUESTS with Retry-After (whole seconds, at least 1). */
export function rateLimitExceeded(what: string, d: RateDecision): DomainError {
  const retryAfter = Math.max(1, Math.ceil(d.msBeforeNext / 1000));
  return new TooManyRequestsError('TOO_MANY_REQUESTS', `${what}; retry in ${retryAfter} s`, retryAfter);
}

/** Sets the three headers. */
function setHeaders(res: Response, limit: string, d: RateDecision): void {
  res.setHeader('X-RateLimit-Limit', limit);
  res.setHeader('X-RateLimit-Remaining', String(d.remaining));
  res.setHeader('X-RateLimit-Reset', String(Math.max(0, Math.ceil(d.msBeforeNext / 1000))));
}

export function rateLimit(limiter: RequestLimiter): RequestHandler {
  const limit = String(limiter.points);
  const apply = (res: Response, next: (err?: unknown) => void, d: RateDecision) => {
    setHeaders(res, limit, d);
    if (d.allowed) return next();
    recordRateLimitRejection('api_key');
    next(rateLimitExceeded(`Rate limit of ${limiter.points} requests per minute exceeded`, d));
  };
  return (req, res, next) => {
    // Only API-key callers; Basic sign-ins (API key management) have their own limits (sign-in-limit.ts).
    const apiKeyId = principalOf(req).apiKeyId;
    if (apiKeyId === undefined) return next();
    const decision = limiter.consume(apiKeyId);
    if (decision instanceof Promise) decision.then((d) => apply(res, next, d), next);
    else apply(res, next, decision);
  };
}
