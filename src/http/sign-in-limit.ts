/**
 * Budgets of HTTP Basic sign-ins (the /v1/api-keys operations) per client address and per
 * e-mail, each per fixed one-minute window, with the limiters of rate-limit.ts: in memory on
 * SQLite (one process), rate-limiter-flexible's PostgreSQL table otherwise, so every API
 * process shares them. Counted before the password is looked at, so a refused sign-in costs no
 * password verification and no claim on the e-mail's sign-in lock. See docs/security.md,
 * "Sign-in limits".
 */
import { createHash } from 'node:crypto';
import type { Db } from '../db/database';
import { recordRateLimitRejection } from '../shared/metrics';
import { createRateLimiter, rateLimitExceeded, RequestLimiter } from './rate-limit';

export interface SignInBudgets {
  perAddressPerMinute: number;
  perEmailPerMinute: number;
}

export interface SignInLimiters {
  perAddress: RequestLimiter;
  perEmail: RequestLimiter;
}

export function createSignInLimiters(db: Db, budgets: SignInBudgets): SignInLimiters {
  return {
    perAddress: createRateLimiter(db, budgets.perAddressPerMinute, 'signin-address'),
    perEmail: createRateLimiter(db, budgets.perEmailPerMinute, 'signin-email'),
  };
}

/**
 * Counts one sign-in of `email` from `address`: the address first, the e-mail only when the
 * address is within its budget (so one noisy address does not spend everyone's budget for an
 * e-mail). Throws 429 TOO_MANY_REQUESTS with Retry-After when either budget is spent.
 */
export async function limitSignIn(limiters: SignInLimiters, address: string, email: string): Promise<void> {
  const byAddress = await limiters.perAddress.consume(address);
  if (!byAddress.allowed) {
    recordRateLimitRejection('sign_in_address');
    throw rateLimitExceeded(`Too many sign-ins from this address (at most ${limiters.perAddress.points} per minute)`, byAddress);
  }
  const byEmail = await limiters.perEmail.consume(emailKey(email));
  if (!byEmail.allowed) {
    recordRateLimitRejection('sign_in_email');
    throw rateLimitExceeded(`Too many sign-ins for this e-mail (at most ${limiters.perEmail.points} per minute)`, byEmail);
  }
}

/**
 * E-mails are counted by digest: the key has a fixed length (the limiter table's key is at
 * most 255 characters) and no text a client typed, such as a password in the e-mail field, is
 * stored.
 */
function emailKey(email: string): string {
  return createHash('sha256').update(email.toLowerCase()).digest('base64url');
}
