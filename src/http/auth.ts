/**
 * Authentication: HTTP Basic (e-mail and password) on /v1/api-keys, X-API-Key everywhere else.
 * The principal is attached to the request for the rate limiter and the handlers. A Basic
 * sign-in first passes its client address's budget of failed sign-ins (sign-in-limit.ts), then
 * the e-mail's sign-in lock and password (AccountsService.authenticateBasic); a wrong password
 * is then counted against the e-mail's budget, a right one given back to the address's.
 */
import type { Request, RequestHandler } from 'express';
import { UnauthorizedError } from '../shared/errors';
import type { Principal } from './operations';
import { repeatedHeader, repeatedHeaderError } from './single-headers';

export const BASIC_AUTH_PREFIX = '/v1/api-keys';

export function usesBasicAuth(req: Request): boolean {
  return req.path === BASIC_AUTH_PREFIX || req.path.startsWith(BASIC_AUTH_PREFIX + '/');
}

export function principalOf(req: Request): Principal {
  const principal = req.principal;
  if (!principal) throw new Error('request reached a handler without authentication');
  return principal;
}

const BASIC_CHALLENGE = { 'WWW-Authenticate': 'Basic realm="Vidmill API keys", charset="UTF-8"' };

function parseBasic(header: string | undefined): { email: string; password: string } {
  const match = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header?.trim() ?? '');
  if (!header) throw new UnauthorizedError('UNAUTHORIZED', 'HTTP Basic authentication with e-mail and password is required', { headers: BASIC_CHALLENGE });
  if (!match) throw new UnauthorizedError('INVALID_CREDENTIALS', 'Malformed Authorization header; expected Basic credentials', { headers: BASIC_CHALLENGE });
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) throw new UnauthorizedError('INVALID_CREDENTIALS', 'Malformed Basic credentials; expected email:password', { headers: BASIC_CHALLENGE });
  return { email: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** The budgets of failed Basic sign-ins (sign-in-limit.ts); each step throws 429 when a budget is spent. */
export interface SignInGate {
  /** Before the password: counts the sign-in against its client address until it succeeds. */
  begin(address: string): Promise<void>;
  /** The password was right: the address's count is given back. */
  succeeded(address: string): Promise<void>;
  /** The password was wrong or the e-mail unknown: counts a failure of the e-mail. */
  failed(email: string): Promise<void>;
}

/** Checks an e-mail and password (the accounts feature); throws UnauthorizedError when they do not match. */
export interface PasswordCheck {
  authenticateBasic(email: string, password: string): Promise<{ id: string }>;
}

/** Resolves an API key to its principal (the api-keys feature), from a short-lived cache when it can. */
export interface ApiKeyCheck {
  authenticate(secret: string): Promise<Principal>;
  cachedPrincipal(secret: string): Principal | undefined;
}

/** Two X-API-Key headers: 401 (there is no key to charge a rate-limit budget to), naming the header. */
export function repeatedApiKey(): UnauthorizedError {
  return new UnauthorizedError('INVALID_API_KEY', 'The X-API-Key header must be given once');
}

export function authenticate(accounts: PasswordCheck, apiKeys: ApiKeyCheck, signIns: SignInGate): RequestHandler {
  const slow = async (req: Request, next: (err?: unknown) => void) => {
    try {
      if (usesBasicAuth(req)) {
        // Node keeps the first of two Authorization headers and drops the other: refuse instead.
        const repeated = repeatedHeaderError(req, ['authorization']);
        if (repeated) throw repeated;
        const { email, password } = parseBasic(req.headers.authorization);
        // req.ip: the socket's address, or with 'trust proxy' set the client named by the proxy.
        const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
        await signIns.begin(address);
        let user: { id: string };
        try {
          user = await accounts.authenticateBasic(email, password);
        } catch (err) {
          if (!(err instanceof UnauthorizedError)) throw err;
          // A password was verified and did not match (ACCOUNT_LOCKED verified none).
          if (err.errorCode === 'INVALID_CREDENTIALS') await signIns.failed(email);
          throw new UnauthorizedError(err.errorCode, err.message, { headers: BASIC_CHALLENGE });
        }
        await signIns.succeeded(address);
        req.principal = { userId: user.id };
      } else {
        const key = req.headers['x-api-key'];
        if (typeof key !== 'string' || key === '') throw new UnauthorizedError('MISSING_API_KEY', 'The X-API-Key header is required');
        // Node joins two X-API-Key headers into one (wrong) key; say why it is refused.
        if (repeatedHeader(req, ['x-api-key'])) throw repeatedApiKey();
        req.principal = await apiKeys.authenticate(key);
      }
      next();
    } catch (err) {
      next(err);
    }
  };
  return (req, _res, next) => {
    // Fast path: an API key authenticated moments ago (no database, no promise).
    const key = req.headers['x-api-key'];
    if (typeof key === 'string' && key !== '' && !usesBasicAuth(req)) {
      const principal = apiKeys.cachedPrincipal(key);
      if (principal) {
        req.principal = principal;
        return next();
      }
    }
    void slow(req, next);
  };
}
