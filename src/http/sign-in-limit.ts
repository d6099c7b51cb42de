/**
 * Budgets of failed HTTP Basic sign-ins (the /v1/api-keys operations) per client address and
 * per e-mail, each per fixed one-minute window, with the limiters of rate-limit.ts: in memory on
 * SQLite (one process), rate-limiter-flexible's PostgreSQL table otherwise, so every API
 * process shares them. The address is checked before the password is looked at, so a refused
 * sign-in costs no password verification and no claim on the e-mail's sign-in lock. See
 * docs/security.md, "Sign-in limits".
 */
import { createHash } from 'node:crypto';
import type { Db } from '../db/database';
import type { SignInGate } from './auth';
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
 * The budgets of one Basic sign-in, in the order auth.ts calls them. Budgets count failed
 * sign-ins, so a script with the right password (rotating keys, say) is never slowed down by
 * them, unless its own client address is over its budget of failures:
 *
 * - `begin`, before the password: counts the sign-in against its client address, as a failure
 *   until it proves otherwise, so an address cannot have more checks running than its budget.
 *   Throws 429 when the address is over it: nothing is verified then.
 * - `succeeded`: the password was right; the address gets its count back.
 * - `failed`: the password was wrong (or the e-mail unknown); the address keeps its count and
 *   the e-mail is counted (whatever address tried it). Throws 429 instead of the 401 when the
 *   e-mail is over its budget. A refused sign-in (429, ACCOUNT_LOCKED) verified no password and
 *   counts only against its address.
 */
export function signInBudgets(limiters: SignInLimiters): SignInGate {
  return {
    async begin(address: string): Promise<void> {
      const byAddress = await limiters.perAddress.consume(address);
      if (!byAddress.allowed) {
        recordRateLimitRejection('sign_in_address');
        throw rateLimitExceeded(`Too many failed sign-ins from this address (at most ${limiters.perAddress.points} per minute)`, byAddress);
      }
    },
    async succeeded(address: string): Promise<void> {
      await limiters.perAddress.refund(address);
    },
    async failed(email: string): Promise<void> {
      const byEmail = await limiters.perEmail.consume(emailKey(email));
      if (!byEmail.allowed) {
        recordRateLimitRejection('sign_in_email');
        throw rateLimitExceeded(`Too many failed sign-ins for this e-mail (at most ${limiters.perEmail.points} per minute)`, byEmail);
      }
    },
  };
}

/**
 * E-mails are counted by digest: the key has a fixed length (the limiter table's key is at
 * most 255 characters) and no text a client typed, such as a password in the e-mail field, is
 * stored.
 */
function emailKey(email: string): string {
  return createHash('sha256').update(email.toLowerCase()).digest('base64url');
}
