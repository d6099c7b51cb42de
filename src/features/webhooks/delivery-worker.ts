/**
 * The delivery loop: claims due deliveries with a lease (several processes may run it), signs
 * and POSTs each payload over keep-alive connections with a 10-second timeout, records every
 * attempt, and schedules retries (exponential back-off with jitter, `Retry-After` on 429/503)
 * inside the webhook's retry window. A worker killed mid-send loses nothing: its lease expires
 * and another claim sends again (at least once; receivers de-duplicate by `payload.id`).
 *
 * Claims and lease guards are the jobs' leased-rows code (src/jobs/leased-rows.ts, through the
 * store), one lease token per claim; every delay comes from src/jobs/backoff.ts, and the loop is
 * the jobs' loop runtime (src/jobs/loop.ts). `stop()` waits up to `stopGraceMs` for the sends in
 * flight, then hands their leases back (the deliveries are due again at once, for any process;
 * a receiver that got the request anyway de-duplicates by `payload.id`).
 */
import http from 'node:http';
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Db } from '../../db/database';
import { TransactionalService } from '../../db/transactional';
import { backoffMs } from '../../jobs/backoff';
import { AttemptRecord, DeliveryRecord, eventsStore, WebhookRecord, webhooksStore } from './webhooks.store';
import { guardedAgents } from '../../net/guarded-agents';
import { keptAliveWatch, STALE_CONNECTION_TRIES } from '../../net/kept-alive-connections';
import { checkOutboundUrl, isNonPublicAddressRefusal, OutboundPolicy } from '../../net/outbound-url';
import type { Clock } from '../../shared/clock';
import { DomainError } from '../../shared/errors';
import { recordRateLimitRejection, recordWebhookDelivery } from '../../shared/metrics';
import { onEventsRecorded } from './events';
import { WebhookRateLimiter } from './delivery-rate-limiter';
import { signRequest } from './signer';
import type { SigningKeys } from './signing-keys';
import { Loop, type LoopState } from '../../jobs/loop';
import { sharedAbortController } from '../../shared/abort';

export interface DeliveryOptions {
  /** Deliveries in flight at once in this process (VIDMILL_WEBHOOK_CONCURRENCY). */
  concurrency: number;
  /** Deliveries of one webhook in flight at once in this process, so a slow endpoint cannot take every slot. */
  perWebhookConcurrency: number;
  /** Lease of a claimed delivery (VIDMILL_WEBHOOK_LEASE_SECONDS): a process lost mid-send is replaced after it. */
  leaseMs: number;
  /** Longest sleep when nothing wakes the loop (VIDMILL_WEBHOOK_POLL_MS): how soon deliveries recorded by other processes are seen. */
  pollMs: number;
  timeoutMs: number;
  /** How long `stop()` waits for sends in flight before handing their leases back. */
  stopGraceMs: number;
  permitWaitMs: number;
  /** First retry delay; doubles per attempt up to `maxBackoffMs`, with jitter. */
  initialBackoffMs: number;
  maxBackoffMs: number;
  random: () => number;
}

export const DEFAULT_DELIVERY_OPTIONS: DeliveryOptions = {
  concurrency: 64,
  perWebhookConcurrency: 8,
  leaseMs: 60_000,
  pollMs: 500,
  timeoutMs: 10_000,
  stopGraceMs: 15_000,
  permitWaitMs: 5_000,
  initialBackoffMs: 10_000,
  maxBackoffMs: 60 * 60_000,
  random: Math.random,
};

const MAX_BODY_CHARS = 100;
const MAX_HEADER_CHARS = 50;
const MAX_READ_BYTES = 64 * 1024;
const MAX_ERROR_MESSAGE_CHARS = 500;

interface SendResult {
  statusCode: number;
  body?: string;
  headers?: Record<string, string>;
  errorCode?: string;
  errorMessage?: string;
  /**
   * The request itself, when one went out: the signing instant (after the URL check and the wait
   * for a rate-limit permit) and how long from there to the end of the answer.
   */
  request?: { requestedAt: Date; responseTimeMillis: number };
}

export type { LoopState };

/** A delivery this worker claimed: `leaseOwner` is the claim's lease token. */
type ClaimedDelivery = DeliveryRecord & { leaseOwner: string };

/**
 * A TransactionalService for the one transaction it opens itself: an attempt and the delivery's
 * new state recorded together (`finishAttempt`).
 */
export class DeliveryWorker extends TransactionalService {
  readonly owner = `worker-${randomUUID()}`;
  private readonly options: DeliveryOptions;
  private readonly limiter: WebhookRateLimiter;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly inFlightByWebhook = new Map<string, number>();
  private readonly loop: Loop;
  /** Aborted when `stop()`'s grace has run out: sends still in flight hand their leases back. */
  private readonly stopping = sharedAbortController();
  private stopped = false;
  private stopRequested = false;

  constructor(
    private readonly deps: { db: Db; clock: Clock; signingKeys: SigningKeys; policy: OutboundPolicy; log: Logger },
    options: Partial<DeliveryOptions> = {},
  ) {
    super(deps.db);
    this.options = { ...DEFAULT_DELIVERY_OPTIONS, ...options };
    this.limiter = new WebhookRateLimiter(deps.db);
    // Every delivery connects through the outbound guard's agents, checked when it connects.
    ({ httpAgent: this.httpAgent, httpsAgent: this.httpsAgent } = guardedAgents(deps.policy, { maxSockets: 32 }));
    this.loop = new Loop({
      name: 'webhook delivery',
      log: deps.log,
      failureMessage: 'webhook delivery loop failed',
      // After errors: twice the poll period, doubling, capped at 30 s.
      backoff: { baseMs: 2 * this.options.pollMs, maxMs: 30_000 },
      turn: () => this.turn(),
    });
  }

  get status(): LoopState {
    // Stopping lasts until the work in flight is settled, after the loop itself has ended.
    return this.stopped ? 'stopped' : this.stopRequested ? 'stopping' : this.loop.status;
  }

  start(): void {
    if (this.loop.status !== 'idle') return;
    this.loop.wakeOn(onEventsRecorded);
    this.loop.start();
  }

  notify(): void {
    this.loop.notify();
  }

  /** Also wakes the loop from `subscribe`'s source (deliveries recorded by other processes, src/main.ts). */
  wakeOn(subscribe: (wake: () => void) => () => void): this {
    this.loop.wakeOn(subscribe);
    return this;
  }

  /**
   * Stops claiming; waits up to `graceMs` (default `stopGraceMs`) for the deliveries in flight,
   * then hands the leases of those still sending back (due again at once, attempt not recorded).
   */
  async stop(opts: { graceMs?: number } = {}): Promise<void> {
    if (this.loop.status !== 'idle') this.stopRequested = true;
    await this.loop.stop();
    const all = () => Promise.all(this.inFlight);
    let timer: NodeJS.Timeout | undefined;
    const graceMs = opts.graceMs ?? this.options.stopGraceMs;
    const inTime = await Promise.race([all().then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)))]);
    clearTimeout(timer);
    if (!inTime) {
      this.stopping.abort();
      await all();
    }
    this.stopped = true;
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** Claims what is due now and delivers it; resolves when those deliveries are done. Returns how many. */
  async runOnce(limit = this.options.concurrency): Promise<number> {
    const claimed = await this.claim(limit);
    const webhooks = await this.webhooksOf(claimed);
    await Promise.all(claimed.map((d) => this.deliver(d, webhooks.get(d.webhookId) ?? null)));
    return claimed.length;
  }

  /** Runs until nothing is due (tests). */
  async drain(): Promise<number> {
    let total = 0;
    for (let n = await this.runOnce(); n > 0; n = await this.runOnce()) total += n;
    return total;
  }

  /** One turn: claims up to the free slots and starts their sends; returns how long to sleep. */
  private async turn(): Promise<number> {
    let room = this.options.concurrency - this.inFlight.size;
    if (room > 0 && room < Math.ceil(this.options.concurrency / 4) && this.inFlight.size > 0) {
      // Coalesce: let a few more sends finish so one claim fills several slots (bounded, 5 ms).
      await new Promise((r) => setTimeout(r, 5));
      room = this.options.concurrency - this.inFlight.size;
    }
    if (room <= 0) return this.options.pollMs;
    const busy = [...this.inFlightByWebhook].filter(([, n]) => n >= this.options.perWebhookConcurrency).map(([id]) => id);
    const batch = await this.claim(room, busy);
    const webhooks = await this.webhooksOf(batch);
    for (const d of batch) {
      const count = this.inFlightByWebhook.get(d.webhookId) ?? 0;
      if (count >= this.options.perWebhookConcurrency) {
        // Over this webhook's share: hand it back; the next claims skip the webhook until a slot frees.
        await eventsStore.releaseLease(this.db, d.id, d.leaseOwner);
        continue;
      }
      this.inFlightByWebhook.set(d.webhookId, count + 1);
      const p: Promise<void> = this.deliver(d, webhooks.get(d.webhookId) ?? null).finally(() => {
        this.inFlight.delete(p);
        const left = (this.inFlightByWebhook.get(d.webhookId) ?? 1) - 1;
        if (left > 0) this.inFlightByWebhook.set(d.webhookId, left);
        else this.inFlightByWebhook.delete(d.webhookId);
        this.loop.notify();
      });
      this.inFlight.add(p);
    }
    return batch.length > 0 && this.inFlight.size < this.options.concurrency ? 0 : this.options.pollMs;
  }

  private async claim(limit: number, skipWebhookIds: string[] = []): Promise<ClaimedDelivery[]> {
    const now = this.deps.clock.now();
    return (await eventsStore.claimDue(this.db, this.owner, now, new Date(now.getTime() + this.options.leaseMs), limit, skipWebhookIds)) as ClaimedDelivery[];
  }

  /** The webhooks of a claimed batch, read once (deleted ones too; a missing one was swept with its deliveries). */
  private async webhooksOf(batch: DeliveryRecord[]): Promise<Map<string, WebhookRecord>> {
    if (!batch.length) return new Map();
    const list = await webhooksStore.byIds(this.db, [...new Set(batch.map((d) => d.webhookId))]);
    return new Map(list.map((w) => [w.id, w]));
  }

  private async deliver(d: ClaimedDelivery, webhook: WebhookRecord | null): Promise<void> {
    try {
      await this.attempt(d, webhook);
    } catch (err) {
      // The lease expires and another claim retries; nothing is lost.
      this.deps.log.error({ err, deliveryId: d.id }, 'webhook delivery attempt failed unexpectedly');
    }
  }

  private async attempt(d: ClaimedDelivery, webhook: WebhookRecord | null): Promise<void> {
    const { clock } = this.deps;
    if (!webhook) return; // swept: its deliveries went with it
    const attemptNumber = d.attemptCount + 1;
    let result: SendResult;
    if (webhook.deletedAt) {
      result = { statusCode: 0, errorCode: 'WEBHOOK_DELETED', errorMessage: 'The webhook was deleted; the event was not sent' };
    } else if (!webhook.active) {
      result = { statusCode: 0, errorCode: 'WEBHOOK_NOT_ACTIVE', errorMessage: 'The webhook was deactivated; the event was not sent' };
    } else {
      const sent = await this.unlessStopped(this.send(d, webhook.url, webhook.rateLimitPerSecond, attemptNumber));
      if (!sent) {
        // stop()'s grace ran out mid-send: the delivery is due again, for any process.
        await eventsStore.releaseLease(this.db, d.id, d.leaseOwner);
        return;
      }
      result = sent;
    }
    // The request only: the wait for a permit is not part of it. An attempt that sent nothing is
    // recorded at the moment it was decided, with no response time.
    const now = clock.now();
    const { requestedAt, responseTimeMillis } = result.request ?? { requestedAt: now, responseTimeMillis: 0 };
    const seriesStartedAt = d.seriesStartedAt ?? requestedAt;
    const ok = result.statusCode >= 200 && result.statusCode < 300;
    const retryAt = !ok && (result.statusCode === 429 || result.statusCode === 503) ? parseRetryAfter(result.headers?.['retry-after'], now) : undefined;
    let next: { status: 'pending' | 'succeeded' | 'failed'; nextAttemptAt?: Date; successful?: boolean };
    if (ok) next = { status: 'succeeded', successful: true };
    else if (!webhook.active) next = { status: 'failed', successful: false };
    else {
      const at = this.nextAttemptAt(attemptNumber, now, seriesStartedAt, webhook.maxTotalRetryDelayMinutes, retryAt);
      next = at ? { status: 'pending', nextAttemptAt: at } : { status: 'failed', successful: false };
    }
    const attempt: AttemptRecord = {
      id: randomUUID(),
      deliveryId: d.id,
      attemptNumber,
      requestedAt,
      responseTimeMillis,
      statusCode: result.statusCode,
      responseBody: result.body === undefined ? undefined : result.body.slice(0, MAX_BODY_CHARS),
      errorCode: result.errorCode ?? (ok ? undefined : 'WEBHOOK_ENDPOINT_ERROR'),
      errorMessage: (result.errorMessage ?? (ok ? undefined : `The endpoint answered HTTP ${result.statusCode}`))?.slice(0, MAX_ERROR_MESSAGE_CHARS),
      // When the retry the receiver asked for really is: clamped to the retry window, none past it.
      // (The raw Retry-After stays in responseHeaders.)
      responseRetryAt: retryAt && next.nextAttemptAt,
      responseHeaders: ok || !result.headers ? undefined : cutHeaders(result.headers),
    };
    const recorded = await this.transactional((trx) => eventsStore.finishAttempt(trx, d.leaseOwner, attempt, { ...next, seriesStartedAt, updatedAt: now }));
    if (!recorded) this.deps.log.warn({ deliveryId: d.id }, 'webhook delivery lease was lost; attempt not recorded');
    // The delivery row (and its event) was created in the event's transaction: createdAt is the commit's time.
    else recordWebhookDelivery(ok ? 'delivered' : next.status === 'pending' ? 'retry' : 'failed', attemptNumber, (now.getTime() - d.createdAt.getTime()) / 1000);
  }

  /** `work`'s result, or undefined once `stop()`'s grace has run out. */
  private unlessStopped<T>(work: Promise<T>): Promise<T | undefined> {
    const signal = this.stopping.signal;
    if (signal.aborted) return Promise.resolve(undefined);
    let onAbort!: () => void;
    const stopped = new Promise<undefined>((resolve) => {
      onAbort = () => resolve(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    return Promise.race([work, stopped]).finally(() => signal.removeEventListener('abort', onAbort));
  }

  /** The next attempt's time, or undefined when the retry window is used up. */
  nextAttemptAt(attemptNumber: number, now: Date, seriesStartedAt: Date, windowMinutes: number, retryAt?: Date): Date | undefined {
    const deadline = seriesStartedAt.getTime() + windowMinutes * 60_000;
    if (now.getTime() >= deadline) return undefined;
    let at: number;
    if (retryAt) {
      at = Math.max(retryAt.getTime(), now.getTime());
    } else {
      const { initialBackoffMs, maxBackoffMs, random } = this.options;
      at = now.getTime() + backoffMs(attemptNumber, { baseMs: initialBackoffMs, maxMs: maxBackoffMs, jitter: 'equal', random });
    }
    return new Date(Math.min(at, deadline));
  }

  private async send(d: DeliveryRecord, rawUrl: string, perSecond: number, attemptNumber: number): Promise<SendResult> {
    let url: URL;
    try {
      url = await checkOutboundUrl(rawUrl, this.deps.policy);
    } catch (err) {
      return { statusCode: 0, errorCode: 'INVALID_HTTPS_URL', errorMessage: err instanceof DomainError ? err.message : 'The URL was refused' };
    }
    if (!(await this.limiter.acquire(d.webhookId, perSecond, this.options.permitWaitMs))) {
      recordRateLimitRejection('webhook');
      return {
        statusCode: 0,
        errorCode: 'WEBHOOK_RATE_LIMIT_EXCEEDED',
        errorMessage: `No permit within ${this.options.permitWaitMs / 1000} s under the limit of ${perSecond} requests per second`,
      };
    }
    const body = withAttemptCount(d.payload, attemptNumber);
    // The key active at the signing instant, and that instant as the timestamp and requestedAt.
    const signedAt = this.deps.clock.now();
    const started = performance.now();
    const key = await this.deps.signingKeys.current(signedAt);
    const headers = { ...signRequest(key, body, Math.floor(signedAt.getTime() / 1000)), 'Content-Length': String(Buffer.byteLength(body)) };
    const result = await this.post(url, body, headers);
    return { ...result, request: { requestedAt: signedAt, responseTimeMillis: Math.max(0, Math.round(performance.now() - started)) } };
  }

  /**
   * One attempt's POST. A kept-alive connection the receiver closed while it was idle
   * (net/kept-alive-connections.ts) carries the request again at once on another connection, as
   * the same attempt, instead of failing it and waiting for the next retry.
   */
  private post(url: URL, body: string, headers: Record<string, string>): Promise<SendResult> {
    return new Promise((resolve) => {
      const isHttps = url.protocol === 'https:';
      let settled = false;
      let current: http.ClientRequest | undefined;
      const finish = (r: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      const timer = setTimeout(() => {
        current?.destroy();
        finish({ statusCode: 0, errorCode: 'WEBHOOK_TIMEOUT', errorMessage: `No answer within ${this.options.timeoutMs / 1000} s` });
      }, this.options.timeoutMs);
      const send = (tries: number) => {
        const req = (isHttps ? https : http).request(url, {
          method: 'POST',
          headers,
          agent: isHttps ? this.httpsAgent : this.httpAgent,
        });
        current = req;
        const keptAlive = keptAliveWatch(req);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const headersOf = () => Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v ?? '')]));
          const done = () => finish({ statusCode: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: headersOf() });
          res.on('data', (c: Buffer) => {
            if (size < MAX_READ_BYTES) chunks.push(c);
            size += c.length;
          });
          res.on('end', done);
          res.on('error', done);
          res.on('aborted', done);
        });
        req.on('error', (err: NodeJS.ErrnoException) => {
          if (settled) return;
          if (keptAlive.staleFailure(err) && tries < STALE_CONNECTION_TRIES) return send(tries + 1);
          finish({
            statusCode: 0,
            errorCode: isNonPublicAddressRefusal(err) ? 'INVALID_HTTPS_URL' : 'WEBHOOK_NETWORK_ERROR',
            errorMessage: `${err.code ?? 'ERROR'}: ${err.message}`.slice(0, 500),
          });
        });
        req.end(body);
      };
      send(1);
    });
  }
}

/** The frozen payload with the number of this attempt, keeping property order. */
export function withAttemptCount(payload: string, attemptNumber: number): string {
  return JSON.stringify({ ...JSON.parse(payload), attemptCount: attemptNumber });
}

/** `Retry-After` as delay-seconds or an HTTP date; undefined when absent or unparsable. */
export function parseRetryAfter(value: string | undefined, now: Date): Date | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return new Date(now.getTime() + Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : new Date(Math.max(at, now.getTime()));
}

function cutHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v.slice(0, MAX_HEADER_CHARS)]));
}
