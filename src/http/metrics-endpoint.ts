/**
 * `GET /metrics`: the process's metrics (src/shared/metrics.ts) in Prometheus text format.
 * Served on the API port by the app (outside the contract, like /healthz: no API key, no rate
 * limit), or, with VIDMILL_METRICS_PORT, by a server of its own (`startMetricsServer`) and then
 * not on the API port; worker processes (no API port) serve it that way. With
 * VIDMILL_METRICS_TOKEN set, every scrape needs `Authorization: Bearer <token>`; anything else is
 * 401 with the `Error` body.
 *
 * Before serialising, the endpoint sets the gauges read from the database of the process
 * (jobs per kind and state, oldest queued job, pool use). The queue is read at most once per
 * `cacheMs` (default 5 s) per database, and concurrent scrapes share one read, so scrapes cannot
 * hammer the database; a failed read leaves those gauges out of that scrape and is logged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import express, { type RequestHandler } from 'express';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { readQueueDepth, type QueueDepth } from '../jobs/queue-depth';
import type { Clock } from '../shared/clock';
import { dbPoolGauge, jobsGauge, METRICS_CONTENT_TYPE, oldestQueuedGauge, registry } from '../shared/metrics';
import { answerClientErrors } from './client-errors';
import { errorMapper, notFoundMessage, sendError } from './error-mapper';
import { requestId } from './request-id';
import { repeatedHeaderError } from './single-headers';
import { rejectUndecodablePath } from './request-path';

export interface MetricsEndpointOptions {
  db: Knex;
  clock: Clock;
  log: Logger;
  /** VIDMILL_METRICS_TOKEN: required as a bearer token when set. */
  token?: string;
  /** How long one read of the queue serves scrapes; default 5 s. */
  cacheMs?: number;
}

export const METRICS_PATH = '/metrics';
const DEFAULT_CACHE_MS = 5_000;
const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="Vidmill metrics"' };

/** One cached queue read per database (the app's pool): when it was started, and its promise. */
const queueReads = new WeakMap<Knex, { at: number; depth: Promise<QueueDepth> }>();

export function metricsEndpoint(o: MetricsEndpointOptions): RequestHandler {
  const cacheMs = o.cacheMs ?? DEFAULT_CACHE_MS;
  const expected = o.token === undefined ? undefined : digest(o.token);
  return async (req, res, next) => {
    try {
      if (expected) {
        // Node keeps only the first of two Authorization headers: refuse the ambiguity.
        const repeated = repeatedHeaderError(req, ['authorization']);
        if (repeated) return next(repeated);
        const header = req.headers.authorization;
        if (!header) return sendError(req, res, 401, 'UNAUTHORIZED', 'Metrics need Authorization: Bearer <VIDMILL_METRICS_TOKEN>', { headers: CHALLENGE });
        const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
        if (!match || !timingSafeEqual(digest(match[1]!), expected)) return sendError(req, res, 401, 'INVALID_CREDENTIALS', 'Wrong metrics token', { headers: CHALLENGE });
      }
      await setDatabaseGauges(o, cacheMs);
      res.setHeader('Content-Type', METRICS_CONTENT_TYPE);
      res.setHeader('Cache-Control', 'no-store');
      res.send(await registry.metrics());
    } catch (err) {
      next(err);
    }
  };
}

async function setDatabaseGauges(o: MetricsEndpointOptions, cacheMs: number): Promise<void> {
  const pool = (o.db.client as { pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number } }).pool;
  dbPoolGauge.reset();
  if (pool) {
    dbPoolGauge.set({ state: 'used' }, pool.numUsed());
    dbPoolGauge.set({ state: 'free' }, pool.numFree());
    dbPoolGauge.set({ state: 'pending' }, pool.numPendingAcquires());
  }
  const t = performance.now();
  let read = queueReads.get(o.db);
  if (!read || t - read.at >= cacheMs) {
    read = { at: t, depth: readQueueDepth(o.db, o.clock.now()) };
    queueReads.set(o.db, read);
  }
  let depth: QueueDepth;
  try {
    depth = await read.depth;
  } catch (err) {
    jobsGauge.reset();
    oldestQueuedGauge.reset();
    // Not cached: the next scrape reads again.
    if (queueReads.get(o.db) === read) queueReads.delete(o.db);
    o.log.warn({ err }, 'metrics: could not read the job queue');
    return;
  }
  // Reset after the read, so concurrent scrapes never serialise a half-set gauge.
  jobsGauge.reset();
  oldestQueuedGauge.reset();
  for (const c of depth.counts) jobsGauge.set({ kind: c.kind, state: c.state }, c.jobs);
  // 0 for every kind with queued, running or failed jobs and none of them due (a kind with none of those has no series).
  for (const kind of new Set(depth.counts.map((c) => c.kind))) oldestQueuedGauge.set({ kind }, depth.oldestQueuedAgeSeconds.get(kind) ?? 0);
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/**
 * A server of its own for `GET /metrics` (VIDMILL_METRICS_PORT): everything else is 404
 * NOT_FOUND with the `Error` body. Resolves once listening.
 */
export function startMetricsServer(o: MetricsEndpointOptions & { host: string; port: number }): Promise<Server> {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestId);
  app.use(rejectUndecodablePath);
  app.get(METRICS_PATH, metricsEndpoint(o));
  app.use((req, res) => sendError(req, res, 404, 'NOT_FOUND', notFoundMessage(req.method, req.path)));
  app.use(errorMapper);
  return new Promise<Server>((resolve, reject) => {
    const server = answerClientErrors(app.listen(o.port, o.host, () => resolve(server)));
    server.once('error', reject);
  });
}
