/**
 * Authentication: HTTP Basic (e-mail and password) on /v1/api-keys, X-API-Key everywhere else.
 * The principal is attached to the request for the rate limiter and the handlers. A Basic
 * sign-in first passes `limitSignIn` (per client address and e-mail, sign-in-limit.ts), then
 * the e-mail's sign-in lock and password (AccountsService.authenticateBasic).
 */
import type { Request, RequestHandler } from 'express';
import { UnauthorizedError } from '../shared/errors';
import type { Principal } from './operations';

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

/** Counts one Basic sign-in from a client address; throws 429 when a budget is spent. */
export type SignInGate = (address: string, email: string) => Promise<void>;

/** Checks an e-mail and password (the accounts feature); throws UnauthorizedError when they do not match. */
export interface PasswordCheck {
  authenticateBasic(email: string, password: string): Promise<{ id: string }>;
}

/** Resolves an API key to its principal (the api-keys feature), from a short-lived cache when it can. */
export interface ApiKeyCheck {
  authenticate(secret: string): Promise<Principal>;
  cachedPrincipal(secret: string): Principal | undefined;
}

export function authenticate(accounts: PasswordCheck, apiKeys: ApiKeyCheck, limitSignIn: SignInGate): RequestHandler {
  const slow = async (req: Request, next: (err?: unknown) => void) => {
    try {
      if (usesBasicAuth(req)) {
        const { email, password } = parseBasic(req.headers.authorization);
        // req.ip: the socket's address, or with 'trust proxy' set the client named by the proxy.
        await limitSignIn(req.ip ?? req.socket.remoteAddress ?? 'unknown', email);
        try {
          const user = await accounts.authenticateBasic(email, password);
          req.principal = { userId: user.id };
        } catch (err) {
          if (err instanceof UnauthorizedError) throw new UnauthorizedError(err.errorCode, err.message, { headers: BASIC_CHALLENGE });
          throw err;
        }
      } else {
        const key = req.headers['x-api-key'];
        if (typeof key !== 'string' || key === '') throw new UnauthorizedError('MISSING_API_KEY', 'The X-API-Key header is required');
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
