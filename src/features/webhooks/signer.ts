/**
 * Signs webhook requests: base64 of the DER ECDSA/SHA-256 signature over
 * `<timestamp>.<raw body>` (UTF-8), what Java's `SHA256withECDSA` and `openssl dgst` verify.
 */
import { sign } from 'node:crypto';
import type { ActiveSigningKey } from './signing-keys';

export const SIGNATURE_ALGORITHM = 'SHA256withECDSA';
export const USER_AGENT = 'Vidmill-Webhooks/2.0.0';

export const HEADER = {
  signature: 'X-Vidmill-Signature',
  publicKeyId: 'X-Vidmill-Public-Key-Id',
  timestamp: 'X-Vidmill-Timestamp',
  algorithm: 'X-Vidmill-Algorithm',
} as const;

export function signedContent(timestamp: string, rawBody: string | Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), Buffer.isBuffer(rawBody) ? rawBody : Buffer.from(rawBody, 'utf8')]);
}

/** The headers of one signed request; `unixSeconds` is the signing time. */
export function signRequest(key: ActiveSigningKey, rawBody: string, unixSeconds: number): Record<string, string> {
  const timestamp = String(unixSeconds);
  const signature = sign('sha256', signedContent(timestamp, rawBody), { key: key.privateKey, dsaEncoding: 'der' }).toString('base64');
  return {
    'Content-Type': 'application/json',
    'User-Agent': USER_AGENT,
    [HEADER.signature]: signature,
    [HEADER.publicKeyId]: key.id,
    [HEADER.timestamp]: timestamp,
    [HEADER.algorithm]: SIGNATURE_ALGORITHM,
  };
}
