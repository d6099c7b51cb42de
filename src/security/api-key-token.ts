/**
 * API key secrets: 256 random bits behind a recognisable prefix. Only the SHA-256 digest is
 * stored, so authentication is one indexed lookup and never a slow hash per request.
 */
import { hash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'vmk_';

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** SHA-256 (hex) of the key's UTF-8 bytes; one-shot `crypto.hash`, cheaper than a Hash object per request. */
export function digestApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** Whether a string can be a Vidmill key at all (cheap check before any lookup). */
export function looksLikeApiKey(key: string): boolean {
  return key.startsWith(API_KEY_PREFIX) && key.length === API_KEY_PREFIX.length + 43;
}

/** `****...abc`: every character masked except the last three. */
export function maskSecret(lastChars: string, length: number): string {
  return '*'.repeat(Math.max(0, length - lastChars.length)) + lastChars;
}
