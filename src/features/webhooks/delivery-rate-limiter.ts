/**
 * Per-webhook send budget (`rateLimitPerSecond`) shared by every worker process: one-second
 * fixed windows in rate-limiter-flexible, stored in PostgreSQL when the database is PostgreSQL
 * (the same `rate_limits` table as the API budget, another key prefix) and in memory on the
 * embedded SQLite shape, which runs one process.
 */
import { RateLimiterAbstract, RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { Db, isPostgres } from '../../db/database';

/** In-memory budgets are shared by every worker of the (single, embedded) process. */
const memoryLimiters = new Map<number, RateLimiterAbstract>();

export class WebhookRateLimiter {
  private readonly limiters: Map<number, RateLimiterAbstract>;

  constructor(private readonly db: Db) {
    this.limiters = isPostgres(db) ? new Map<number, RateLimiterAbstract>() : memoryLimiters;
  }

  /** Waits for a permit for at most `maxWaitMs`; false when none came in time. */
  async acquire(webhookId: string, perSecond: number, maxWaitMs: number): Promise<boolean> {
    const limiter = this.limiter(perSecond);
    // Wall time on purpose, not the injected clock: this is real waiting for permits of one-second
    // windows that rate-limiter-flexible keeps in wall time (a test's stopped clock would wait forever).
    const deadline = Date.now() + maxWaitMs;
    for (;;) {
      try {
        await limiter.consume(webhookId);
        return true;
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        const wait = Math.max(5, rejection.msBeforeNext) + Math.floor(Math.random() * 20);
        if (Date.now() + wait > deadline) return false;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  private limiter(points: number): RateLimiterAbstract {
    let limiter = this.limiters.get(points);
    if (!limiter) {
      const opts = { points, duration: 1, keyPrefix: 'webhook' };
      limiter = isPostgres(this.db)
        ? new RateLimiterPostgres({ ...opts, storeClient: this.db, storeType: 'knex', tableName: 'rate_limits', tableCreated: true, clearExpiredByTimeout: false })
        : new RateLimiterMemory(opts);
      this.limiters.set(points, limiter);
    }
    return limiter;
  }
}
