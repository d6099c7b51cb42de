/**
 * The public keys that verify webhook signatures, cached by id.
 *
 * - A known id is answered from memory (keys rotate rarely; the header always names its key).
 * - An unknown id is fetched by id (`GET /v1/webhooks/public-keys/{id}`), and concurrent
 *   lookups of the same id share that one request.
 * - An id that was looked up and not found (or whose lookup failed) is not looked up again for
 *   `retryUnknownAfterMs` (default one minute), and at most `maxLookupsPerMinute` lookups of
 *   unknown ids are made in any minute (default 10) whatever the ids: a flood of requests with
 *   forged ids costs the server at most that many requests. Ids that are not UUIDs are never
 *   looked up.
 * - A cached key whose `expiresAt` has passed is looked up again under the same limits (a
 *   published next key carries one until it signs).
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { VidmillClient } from './client';
import { VidmillApiError } from './errors';

export interface WebhookPublicKey {
  id: string;
  key: KeyObject;
  /** When the key stops being valid, if the server said. */
  expiresAt?: Date;
}

/** Answers the base64 DER SPKI of key `id` (and its `expiresAt`), or undefined when there is none. */
export type FetchWebhookKey = (id: string) => Promise<{ publicKey: string; expiresAt?: string | null } | string | undefined>;

export interface WebhookKeyCacheOptions {
  /** Looks keys up through the API with this client. */
  client?: VidmillClient;
  /** Or any other source of keys. */
  fetchKey?: FetchWebhookKey;
  /** Least time between two lookups of one unknown id (default 60 s). */
  retryUnknownAfterMs?: number;
  /** Most lookups of unknown ids in any 60 s (default 10). */
  maxLookupsPerMinute?: number;
  /** The clock (tests). */
  now?: () => Date;
}

export type KeyLookup = { found: WebhookPublicKey } | { missing: 'unknown' | 'rate-limited' | 'lookup-failed'; cause?: unknown };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MINUTE_MS = 60_000;

export class WebhookKeyCache {
  private readonly keys = new Map<string, WebhookPublicKey>();
  private readonly lastLookup = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<KeyLookup>>();
  private lookupTimes: number[] = [];
  private readonly fetchKey: FetchWebhookKey;
  /** Lookups sent to the key source so far. */
  lookups = 0;

  constructor(private readonly options: WebhookKeyCacheOptions) {
    const { client, fetchKey } = options;
    if (fetchKey) this.fetchKey = fetchKey;
    else if (client) this.fetchKey = (id) => fetchFromApi(client, id);
    else throw new TypeError('WebhookKeyCache needs `client` or `fetchKey`');
  }

  private now(): number {
    return (this.options.now ?? (() => new Date()))().getTime();
  }

  /** The key named `id`: from memory, else looked up within the limits above. */
  get(id: string): Promise<KeyLookup> {
    const cached = this.keys.get(id);
    if (cached && !(cached.expiresAt && cached.expiresAt.getTime() <= this.now())) return Promise.resolve({ found: cached });
    const running = this.inFlight.get(id);
    if (running) return running;
    if (!UUID.test(id)) return Promise.resolve({ missing: 'unknown' });
    if (!this.mayLookUp(id)) return Promise.resolve(cached ? { found: cached } : { missing: 'rate-limited' });
    const lookup = this.lookUp(id).finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, lookup);
    return lookup;
  }

  private mayLookUp(id: string): boolean {
    const t = this.now();
    const last = this.lastLookup.get(id);
    if (last !== undefined && t - last < (this.options.retryUnknownAfterMs ?? MINUTE_MS)) return false;
    this.lookupTimes = this.lookupTimes.filter((at) => t - at < MINUTE_MS);
    if (this.lookupTimes.length >= (this.options.maxLookupsPerMinute ?? 10)) return false;
    this.lookupTimes.push(t);
    // forget old misses so the map stays small under a flood of forged ids
    for (const [k, at] of this.lastLookup) if (t - at >= (this.options.retryUnknownAfterMs ?? MINUTE_MS)) this.lastLookup.delete(k);
    this.lastLookup.set(id, t);
    return true;
  }

  private async lookUp(id: string): Promise<KeyLookup> {
    this.lookups++;
    let answer: Awaited<ReturnType<FetchWebhookKey>>;
    try {
      answer = await this.fetchKey(id);
    } catch (cause) {
      return { missing: 'lookup-failed', cause };
    }
    if (answer === undefined) {
      this.keys.delete(id);
      return { missing: 'unknown' };
    }
    const { publicKey, expiresAt } = typeof answer === 'string' ? { publicKey: answer, expiresAt: undefined } : answer;
    let key: KeyObject;
    try {
      key = createPublicKey({ key: Buffer.from(publicKey, 'base64'), format: 'der', type: 'spki' });
    } catch (cause) {
      return { missing: 'lookup-failed', cause };
    }
    const found: WebhookPublicKey = { id, key, ...(expiresAt ? { expiresAt: new Date(expiresAt) } : {}) };
    this.keys.set(id, found);
    this.lastLookup.delete(id);
    return { found };
  }
}

async function fetchFromApi(client: VidmillClient, id: string): Promise<{ publicKey: string; expiresAt?: string | null } | undefined> {
  const { data, error, response } = await client.api.GET('/v1/webhooks/public-keys/{id}', { params: { path: { id } } });
  if (response.status === 404) return undefined;
  if (!response.ok || !data) throw VidmillApiError.fromResponse(response, error);
  if (data.algorithm !== 'EC') return undefined;
  return { publicKey: data.publicKey, expiresAt: data.expiresAt };
}
