/**
 * Receiver-side verification of Vidmill webhook requests (usable by any Node receiver):
 * 1) timestamp within 5 minutes of now (either direction), 2) algorithm `SHA256withECDSA`,
 * 3) the public key named by `X-Vidmill-Public-Key-Id` (fetched from the API by id and cached),
 * 4) the DER ECDSA/SHA-256 signature over `<timestamp>.<raw body>`.
 * Depends only on node:crypto and fetch; see docs/webhooks.md.
 */
import { createPublicKey, KeyObject, verify as cryptoVerify } from 'node:crypto';

export const SIGNATURE_ALGORITHM = 'SHA256withECDSA';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: 'missing-header' | 'stale-timestamp' | 'unsupported-algorithm' | 'unknown-key' | 'bad-signature',
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

type Headers = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function header(headers: Headers, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const h = headers as Record<string, string | string[] | undefined>;
  const v = h[name] ?? h[name.toLowerCase()] ?? Object.entries(h).find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
  return Array.isArray(v) ? v[0] : v;
}

/** Verifies one signature with a base64 DER SubjectPublicKeyInfo key. */
export function verifySignature(publicKey: string | KeyObject, timestamp: string, rawBody: string | Buffer, signatureBase64: string): boolean {
  const key = typeof publicKey === 'string' ? createPublicKey({ key: Buffer.from(publicKey, 'base64'), format: 'der', type: 'spki' }) : publicKey;
  const data = Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), Buffer.isBuffer(rawBody) ? rawBody : Buffer.from(rawBody, 'utf8')]);
  try {
    return cryptoVerify('sha256', data, { key, dsaEncoding: 'der' }, Buffer.from(signatureBase64, 'base64'));
  } catch {
    return false;
  }
}

export interface VerifierOptions {
  /** API base URL including `/api`, e.g. `https://vidmill.example.com/api`. */
  baseUrl?: string;
  apiKey?: string;
  /** Custom key source (tests, other transports): base64 SPKI of the key, or undefined. */
  fetchKey?: (keyId: string) => Promise<string | undefined>;
  toleranceSeconds?: number;
  now?: () => Date;
  /** Least time between two fetches of a key id that was not found. */
  refetchIntervalMs?: number;
}

export class WebhookVerifier {
  private readonly keys = new Map<string, KeyObject>();
  private readonly misses = new Map<string, number>();

  constructor(private readonly opts: VerifierOptions) {
    if (!opts.fetchKey && !(opts.baseUrl && opts.apiKey)) throw new Error('give baseUrl and apiKey, or fetchKey');
  }

  /** Throws WebhookVerificationError unless the request is authentic and fresh. */
  async verify(headers: Headers, rawBody: string | Buffer): Promise<{ keyId: string; timestamp: number }> {
    const signature = header(headers, 'X-Vidmill-Signature');
    const keyId = header(headers, 'X-Vidmill-Public-Key-Id');
    const timestamp = header(headers, 'X-Vidmill-Timestamp');
    const algorithm = header(headers, 'X-Vidmill-Algorithm');
    if (!signature || !keyId || !timestamp || !algorithm) throw new WebhookVerificationError('missing-header', 'a signature header is missing');
    const now = (this.opts.now ?? (() => new Date()))().getTime() / 1000;
    const ts = /^\d+$/.test(timestamp) ? Number(timestamp) : NaN;
    if (!Number.isFinite(ts) || Math.abs(now - ts) > (this.opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) {
      throw new WebhookVerificationError('stale-timestamp', `timestamp ${timestamp} is outside the accepted window`);
    }
    if (algorithm !== SIGNATURE_ALGORITHM) throw new WebhookVerificationError('unsupported-algorithm', `algorithm ${algorithm} is not accepted`);
    const key = await this.key(keyId);
    if (!key) throw new WebhookVerificationError('unknown-key', `no public key ${keyId}`);
    if (!verifySignature(key, timestamp, rawBody, signature)) throw new WebhookVerificationError('bad-signature', 'the signature does not verify');
    return { keyId, timestamp: ts };
  }

  /** Lenient form: true or false, never throws. */
  async isValid(headers: Headers, rawBody: string | Buffer): Promise<boolean> {
    try {
      await this.verify(headers, rawBody);
      return true;
    } catch {
      return false;
    }
  }

  private async key(id: string): Promise<KeyObject | undefined> {
    const cached = this.keys.get(id);
    if (cached) return cached;
    const lastMiss = this.misses.get(id);
    if (lastMiss !== undefined && Date.now() - lastMiss < (this.opts.refetchIntervalMs ?? 60_000)) return undefined;
    const spki = await (this.opts.fetchKey ?? ((keyId) => this.fetchFromApi(keyId)))(id).catch(() => undefined);
    if (!spki) {
      this.misses.set(id, Date.now());
      return undefined;
    }
    const key = createPublicKey({ key: Buffer.from(spki, 'base64'), format: 'der', type: 'spki' });
    this.keys.set(id, key);
    return key;
  }

  private async fetchFromApi(id: string): Promise<string | undefined> {
    if (!/^[0-9a-fA-F-]{36}$/.test(id)) return undefined;
    const res = await fetch(`${this.opts.baseUrl!.replace(/\/$/, '')}/v1/webhooks/public-keys/${id}`, {
      headers: { 'X-API-Key': this.opts.apiKey!, Accept: 'application/json' },
    });
    if (!res.ok) return undefined;
    const body = (await res.json()) as { publicKey?: string; algorithm?: string };
    return body.algorithm === 'EC' ? body.publicKey : undefined;
  }
}
