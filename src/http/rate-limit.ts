/**
 * Per-API-key request budget per fixed one-minute window (rate-limiter-flexible): in memory on
 * the embedded default, in PostgreSQL when the database is PostgreSQL so every API process
 * shares one budget. Headers go on every rate-limited response; over the limit is 429.
 */
import type { RequestHandler } from 'express';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, RateLimiterAbstract } from 'rate-limiter-flexible';
import { Db, isPostgres } from '../db/database';
import { DomainError } from '../shared/errors';
import { principalOf, usesBasicAuth } from './auth';

export function createRateLimiter(db: Db, perMinute: number): RateLimiterAbstract {
  const opts = { points: perMinute, duration: 60, keyPrefix: 'api' };
  if (isPostgres(db)) {
    return new RateLimiterPostgres({ ...opts, storeClient: db, storeType: 'knex', tableName: 'rate_limits', tableCreated: true, clearExpiredByTimeout: false });
  }
  return new RateLimiterMemory(opts);
}

function setHeaders(res: Parameters<RequestHandler>[1], limit: number, r: RateLimiterRes): number {
  const resetSeconds = Math.max(0, Math.ceil(r.msBeforeNext / 1000));
  res.setHeader('X-RateLimit-Limit', String(limit));
  res.setHeader('X-RateLimit-Remaining', String(Math.max(0, r.remainingPoints)));
  res.setHeader('X-RateLimit-Reset', String(resetSeconds));
  return resetSeconds;
}

export function rateLimit(limiter: RateLimiterAbstract): RequestHandler {
  return async (req, res, next) => {
    if (usesBasicAuth(req)) return next();
    const key = principalOf(req).apiKeyId!;
    try {
      setHeaders(res, limiter.points, await limiter.consume(key));
      next();
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) return next(rejection);
      const retryAfter = String(Math.max(1, setHeaders(res, limiter.points, rejection)));
      next(
        new DomainError(429, 'TOO_MANY_REQUESTS', `Rate limit of ${limiter.points} requests per minute exceeded; retry in ${retryAfter} s`, {
          headers: { 'Retry-After': retryAfter },
        }),
      );
    }
  };
}
