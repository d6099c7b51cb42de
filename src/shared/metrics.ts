/**
 * The process's Prometheus metrics (prom-client): ONE registry per process, owned here, with
 * every metric object Vidmill records. Features and layers record through the small functions
 * below (they never touch prom-client themselves); `GET /metrics` (src/http/metrics-endpoint.ts)
 * serialises the registry. Names and labels are docs/operations.md's "Metrics" list.
 *
 * One registry per process, not one per app: every process serves its own metrics (an API
 * process, each worker process), and a metric recorded by a layer (the copy engine, the ffmpeg
 * runner, the worker loop) has no app to belong to. In the test process many apps and harnesses
 * share the registry, so tests assert the change of a series across their action (deltas), not
 * absolute values. Metrics that are read from the database at scrape time (queue depth, oldest
 * queued job, pool use) are gauges set by the endpoint from the database of the app that serves
 * the scrape.
 *
 * Job kind, operationId and the like are bounded sets (the contract's operations, the job
 * definitions), so label cardinality stays bounded.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Content type of `registry.metrics()` (Prometheus text format 0.0.4). */
export const METRICS_CONTENT_TYPE = registry.contentType;

/** Seconds, from a few milliseconds (a cached page) to a minute. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds, from a purge of a few files to a long transcode (hours). */
const JOB_BUCKETS = [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400];
/** Attempt numbers. */
const ATTEMPT_BUCKETS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30];
/** Event committed -> delivered: under a second when healthy, hours while an endpoint is down. */
const DELIVERY_LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400];

const httpRequests = new Counter({
  name: 'vidmill_http_requests_total',
  help: 'HTTP requests answered, by operationId (or healthz, readyz, docs, media, metrics, unmatched) and status',
  labelNames: ['operation', 'status'],
  registers: [registry],
});
const httpDuration = new Histogram({
  name: 'vidmill_http_request_duration_seconds',
  help: 'Time from the request to the end of the response',
  labelNames: ['operation', 'status'],
  buckets: HTTP_BUCKETS,
  registers: [registry],
});
const rateLimitRejections = new Counter({
  name: 'vidmill_rate_limit_rejections_total',
  help: 'Requests or deliveries refused by a rate limit, by limit',
  labelNames: ['limit'],
  registers: [registry],
});

/** Set at scrape time from the database (src/http/metrics-endpoint.ts). */
export const jobsGauge = new Gauge({
  name: 'vidmill_jobs',
  help: 'Jobs in the queue by kind and state (queued, running, failed), read from the database at scrape',
  labelNames: ['kind', 'state'],
  registers: [registry],
});
/** Set at scrape time from the database. */
export const oldestQueuedGauge = new Gauge({
  name: 'vidmill_jobs_oldest_queued_age_seconds',
  help: 'How long the oldest due queued job of each kind has waited (0 when none), read from the database at scrape',
  labelNames: ['kind'],
  registers: [registry],
});
const jobDuration = new Histogram({
  name: 'vidmill_job_duration_seconds',
  help: 'Time a job attempt ran in this process, by kind and outcome (completed, retried, failed, released, lease_lost)',
  labelNames: ['kind', 'outcome'],
  buckets: JOB_BUCKETS,
  registers: [registry],
});
const jobAttempts = new Histogram({
  name: 'vidmill_job_attempts',
  help: 'The attempt a job finished on (completed or failed for good), by kind',
  labelNames: ['kind'],
  buckets: ATTEMPT_BUCKETS,
  registers: [registry],
});
const leaseTakeovers = new Counter({
  name: 'vidmill_job_lease_takeovers_total',
  help: 'Jobs whose lease expired (their worker was lost) requeued or failed by this process, by kind',
  labelNames: ['kind'],
  registers: [registry],
});
const webhookDeliveries = new Counter({
  name: 'vidmill_webhook_deliveries_total',
  help: 'Webhook delivery attempts by outcome (delivered, retry, failed)',
  labelNames: ['outcome'],
  registers: [registry],
});
const webhookAttempts = new Histogram({ name: 'vidmill_webhook_delivery_attempts', help: 'The attempt a delivery succeeded or finally failed on', buckets: ATTEMPT_BUCKETS, registers: [registry] });
const webhookLatency = new Histogram({
  name: 'vidmill_webhook_delivery_latency_seconds',
  help: 'Time from the event being committed to its delivery being answered 2xx',
  buckets: DELIVERY_LATENCY_BUCKETS,
  registers: [registry],
});
const webhookListenerDeliveries = new Counter({
  name: 'vidmill_webhook_listener_deliveries_total',
  help: 'Deliveries handed out to webhook listeners by polls: first (first hand-out) or again (not acknowledged before)',
  labelNames: ['handout'],
  registers: [registry],
});
const bytesCopied = new Counter({
  name: 'vidmill_bytes_copied_total',
  help: 'Bytes copied by the ranged copy engine: in (video in) and out (video out)',
  labelNames: ['direction'],
  registers: [registry],
});
const uploadBytes = new Counter({
  name: 'vidmill_upload_bytes_received_total',
  help: 'Bytes received by direct resumable uploads (tus PATCH bodies stored)',
  registers: [registry],
});
const ffmpegSeconds = new Counter({
  name: 'vidmill_ffmpeg_seconds_total',
  help: 'Wall-clock seconds of ffmpeg and ffprobe child processes, by stage (the job kind they ran for, or none)',
  labelNames: ['stage'],
  registers: [registry],
});
const billingCharges = new Counter({ name: 'vidmill_billing_charges_total', help: 'Processing jobs charged (committed, duplicates not counted)', registers: [registry] });
const billingChargedUsd = new Counter({ name: 'vidmill_billing_charged_usd_total', help: 'List price in USD of the processing jobs charged', registers: [registry] });
const billingRefunds = new Counter({ name: 'vidmill_billing_refunds_total', help: 'Processing charges refunded (committed, repeats not counted)', registers: [registry] });
const billingRefundedUsd = new Counter({ name: 'vidmill_billing_refunded_usd_total', help: 'List price in USD of the processing charges refunded', registers: [registry] });
/** Set at scrape time from the pool of the database. */
export const dbPoolGauge = new Gauge({ name: 'vidmill_db_pool_connections', help: 'Database pool connections: used, free, and pending acquires', labelNames: ['state'], registers: [registry] });

/** One answered HTTP request. */
export function recordHttpRequest(operation: string, status: string, seconds: number): void {
  httpRequests.inc({ operation, status });
  httpDuration.observe({ operation, status }, seconds);
}

/** The rate limits: the API key budget, the Basic sign-in budgets, a webhook's send budget. */
export type RateLimitName = 'api_key' | 'sign_in_address' | 'sign_in_email' | 'webhook';

export function recordRateLimitRejection(limit: RateLimitName): void {
  rateLimitRejections.inc({ limit });
}

/** How a job attempt ended in the worker that ran it. */
export type JobOutcome = 'completed' | 'retried' | 'failed' | 'released' | 'lease_lost';

/** One job attempt ended after `seconds`; `attempt` is its attempt number. */
export function recordJobAttempt(kind: string, outcome: JobOutcome, seconds: number, attempt: number): void {
  jobDuration.observe({ kind, outcome }, seconds);
  if (outcome === 'completed' || outcome === 'failed') jobAttempts.observe({ kind }, attempt);
}

/** Jobs whose lease had expired, requeued or failed by this process's sweep (one kind per job). */
export function recordLeaseTakeovers(kinds: readonly string[]): void {
  for (const kind of kinds) leaseTakeovers.inc({ kind });
}

export type DeliveryOutcome = 'delivered' | 'retry' | 'failed';

/** One recorded webhook delivery attempt; `committedAt` is when its event was committed. */
export function recordWebhookDelivery(outcome: DeliveryOutcome, attempt: number, latencySeconds?: number): void {
  webhookDeliveries.inc({ outcome });
  if (outcome !== 'retry') webhookAttempts.observe(attempt);
  if (outcome === 'delivered' && latencySeconds !== undefined) webhookLatency.observe(Math.max(0, latencySeconds));
}

/** One poll's hand-out to a webhook listener: `total` deliveries, `again` of them handed out before. */
export function recordListenerHandOut(total: number, again: number): void {
  if (total > again) webhookListenerDeliveries.inc({ handout: 'first' }, total - again);
  if (again > 0) webhookListenerDeliveries.inc({ handout: 'again' }, again);
}

export function recordUploadBytes(bytes: number): void {
  if (bytes > 0) uploadBytes.inc(bytes);
}

export function recordBytesCopied(direction: 'in' | 'out', bytes: number): void {
  if (bytes > 0) bytesCopied.inc({ direction }, bytes);
}

/** A processing charge (committed); `usd` is its list price. */
export function recordBillingCharge(usd: number): void {
  billingCharges.inc();
  billingChargedUsd.inc(Math.max(0, usd));
}

/** A refund of a processing charge (committed); `usd` is what it gives back. */
export function recordBillingRefund(usd: number): void {
  billingRefunds.inc();
  billingRefundedUsd.inc(Math.max(0, usd));
}

/**
 * The stage media work runs for: the worker runs each job handler inside `withStage(job.kind)`,
 * so an ffmpeg or ffprobe process started anywhere below it is counted under that kind.
 */
const stage = new AsyncLocalStorage<string>();

export function withStage<T>(name: string, fn: () => T): T {
  return stage.run(name, fn);
}

/** Seconds an ffmpeg or ffprobe child process ran, under the current stage (`none` outside any). */
export function recordMediaSeconds(seconds: number): void {
  ffmpegSeconds.inc({ stage: stage.getStore() ?? 'none' }, Math.max(0, seconds));
}
