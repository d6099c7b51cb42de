/**
 * Signed, expiring links to stored objects served by Vidmill itself (ingestion assets now,
 * download URLs of video out later). The path and expiry are signed with HMAC-SHA256 under a
 * key derived from the master key, so every process of an installation accepts the links of
 * the others and no row is needed per link. The signature is the only credential: links are
 * short-lived and carry no API key.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export class SignedLinks {
  private readonly key: Buffer;

  constructor(
    masterKey: Buffer,
    /** Public base URL of this installation, e.g. https://vidmill.example.com */
    private readonly publicUrl: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'vidmill signed links v1', 32));
  }

  /** An absolute URL for `path` (starting with /) valid until `expiresAt`. */
  sign(path: string, expiresAt: Date): string {
    const expires = Math.floor(expiresAt.getTime() / 1000);
    const url = new URL(path, this.publicUrl.endsWith('/') ? this.publicUrl : `${this.publicUrl}/`);
    url.pathname = (new URL(this.publicUrl).pathname.replace(/\/$/, '') + path).replace(/\/{2,}/g, '/');
    url.search = `expires=${expires}&signature=${this.mac(path, expires)}`;
    return url.toString();
  }

  /** 'valid', 'expired' or 'invalid' for a request on `path` (the path the link was signed for). */
  verify(path: string, expires: unknown, signature: unknown, now: Date): 'valid' | 'expired' | 'invalid' {
    if (typeof expires !== 'string' || typeof signature !== 'string' || !/^\d{1,12}$/.test(expires)) return 'invalid';
    const want = Buffer.from(this.mac(path, Number(expires)));
    const got = Buffer.from(signature);
    if (want.length !== got.length || !timingSafeEqual(want, got)) return 'invalid';
    return Number(expires) * 1000 < now.getTime() ? 'expired' : 'valid';
  }

  /**
   * A token for `path` valid until `expiresAt`, for a URL that carries it as one query value
   * (`?token=`): `<expiry in epoch seconds>.<signature>`, the same MAC as `sign`.
   */
  token(path: string, expiresAt: Date): string {
    const expires = Math.floor(expiresAt.getTime() / 1000);
    return `${expires}.${this.mac(path, expires)}`;
  }

  /** `verify` for a `token`: 'valid', 'expired' (signature right, time past) or 'invalid'. */
  verifyToken(path: string, token: unknown, now: Date): 'valid' | 'expired' | 'invalid' {
    if (typeof token !== 'string') return 'invalid';
    const dot = token.indexOf('.');
    if (dot < 0) return 'invalid';
    return this.verify(path, token.slice(0, dot), token.slice(dot + 1), now);
  }

  /** The absolute URL of `path` under the public URL (with its path prefix, if any). */
  absolute(path: string): URL {
    const url = new URL(this.publicUrl.endsWith('/') ? this.publicUrl : `${this.publicUrl}/`);
    url.pathname = (new URL(this.publicUrl).pathname.replace(/\/$/, '') + path).replace(/\/{2,}/g, '/');
    return url;
  }

  private mac(path: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${path}\n${expires}`).digest('base64url');
  }
}
