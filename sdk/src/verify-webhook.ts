/**
 * `verifyWebhook(headers, rawBody, { client })`: checks a webhook request as the contract's
 * `receiveVideoEvent` says, and answers its parsed payload or throws
 * `WebhookVerificationError` with the reason:
 * 1. the four `X-Vidmill-*` headers are present (`missing-header`);
 * 2. the algorithm is exactly `SHA256withECDSA` (`unsupported-algorithm`);
 * 3. the timestamp is within `toleranceSeconds` (300) of now, either way (`stale-timestamp`);
 * 4. the key named by `X-Vidmill-Public-Key-Id` (webhook-key-cache.ts) exists
 *    (`unknown-key`, `key-lookup-failed`) and has not expired (`expired-key`);
 * 5. the DER ECDSA P-256 / SHA-256 signature over `<timestamp>.<raw body>` verifies
 *    (`bad-signature`); 6. the body is JSON (`invalid-payload`).
 * Pass the body exactly as received (a Buffer or string), before any JSON parsing.
 */
import { verify as cryptoVerify } from 'node:crypto';
import type { components } from './generated/api';
import type { VidmillClient } from './client';
import { WebhookKeyCache, type FetchWebhookKey, type WebhookKeyCacheOptions } from './webhook-key-cache';

export type WebhookEventPayload = components['schemas']['WebhookEventPayload'];
export const WEBHOOK_SIGNATURE_ALGORITHM = 'SHA256withECDSA';
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

export type WebhookVerificationFailure = 'missing-header' | 'unsupported-algorithm' | 'stale-timestamp' | 'unknown-key' | 'key-lookup-failed' | 'expired-key' | 'bad-signature' | 'invalid-payload';

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Node's `req.headers`, a fetch `Headers`, or a plain object of header names (any case). */
export type WebhookHeaders = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface VerifyWebhookOptions {
  /** Looks keys up through the API (the client's API key must belong to the webhook's team). */
  client?: VidmillClient;
  /** Or another source of keys. */
  fetchKey?: FetchWebhookKey;
  /**
   * The key cache to use. Without it one cache is kept per `client` (or per `fetchKey`
   * function), so repeated calls share it.
   */
  keys?: WebhookKeyCache;
  /** Accepted distance between the timestamp and now (default 300 s). */
  toleranceSeconds?: number;
  /** The clock (tests). */
  now?: () => Date;
}

const cachesBySource = new WeakMap<object, WebhookKeyCache>();

/** The cache shared by every call with the same `client` or `fetchKey`. */
export function webhookKeyCacheFor(source: VidmillClient | FetchWebhookKey, options: Omit<WebhookKeyCacheOptions, 'client' | 'fetchKey'> = {}): WebhookKeyCache {
  let cache = cachesBySource.get(source);
  if (!cache) {
    cache = new WebhookKeyCache(typeof source === 'function' ? { ...options, fetchKey: source } : { ...options, client: source });
    cachesBySource.set(source, cache);
  }
  return cache;
}

export async function verifyWebhook(headers: WebhookHeaders, rawBody: string | Buffer, options: VerifyWebhookOptions): Promise<WebhookEventPayload> {
  const signature = header(headers, 'X-Vidmill-Signature');
  const keyId = header(headers, 'X-Vidmill-Public-Key-Id');
  const timestamp = header(headers, 'X-Vidmill-Timestamp');
  const algorithm = header(headers, 'X-Vidmill-Algorithm');
  if (!signature || !keyId || !timestamp || !algorithm) {
    throw new WebhookVerificationError('missing-header', 'a signature header (X-Vidmill-Signature, -Public-Key-Id, -Timestamp, -Algorithm) is missing');
  }
  if (algorithm !== WEBHOOK_SIGNATURE_ALGORITHM) throw new WebhookVerificationError('unsupported-algorithm', `algorithm ${algorithm} is not ${WEBHOOK_SIGNATURE_ALGORITHM}`);
  const nowMs = (options.now ?? (() => new Date()))().getTime();
  const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : NaN;
  const tolerance = options.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  if (!Number.isFinite(seconds) || Math.abs(nowMs / 1000 - seconds) > tolerance) {
    throw new WebhookVerificationError('stale-timestamp', `timestamp ${timestamp} is more than ${tolerance} s from now`);
  }
  const cache = options.keys ?? cacheOf(options);
  const lookup = await cache.get(keyId);
  if ('missing' in lookup) {
    if (lookup.missing === 'lookup-failed') throw new WebhookVerificationError('key-lookup-failed', `public key ${keyId} could not be fetched`, { cause: lookup.cause });
    throw new WebhookVerificationError('unknown-key', `no public key ${keyId}${lookup.missing === 'rate-limited' ? ' (not looked up again yet)' : ''}`);
  }
  const { key, expiresAt } = lookup.found;
  if (expiresAt && expiresAt.getTime() <= nowMs) throw new WebhookVerificationError('expired-key', `public key ${keyId} expired at ${expiresAt.toISOString()}`);
  const body = Buffer.isBuffer(rawBody) ? rawBody : Buffer.from(rawBody, 'utf8');
  const signed = Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), body]);
  let valid: boolean;
  try {
    valid = cryptoVerify('sha256', signed, { key, dsaEncoding: 'der' }, Buffer.from(signature, 'base64'));
  } catch {
    valid = false;
  }
  if (!valid) throw new WebhookVerificationError('bad-signature', 'the signature does not verify');
  try {
    return JSON.parse(body.toString('utf8')) as WebhookEventPayload;
  } catch (cause) {
    throw new WebhookVerificationError('invalid-payload', 'the body is not JSON', { cause });
  }
}

function cacheOf(options: VerifyWebhookOptions): WebhookKeyCache {
  const source = options.fetchKey ?? options.client;
  if (!source) throw new TypeError('verifyWebhook needs `client`, `fetchKey` or `keys`');
  return webhookKeyCacheFor(source, { now: options.now });
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const lower = name.toLowerCase();
  const plain = headers as Record<string, string | string[] | undefined>;
  const value = plain[lower] ?? plain[name] ?? Object.entries(plain).find(([k]) => k.toLowerCase() === lower)?.[1];
  return Array.isArray(value) ? value[0] : value;
}
