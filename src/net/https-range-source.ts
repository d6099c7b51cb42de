/**
 * A byte-range source over HTTP(S) for the copy engine: `probe()` proves range support with a
 * `Range: bytes=0-0` request and pins the source's validator (strong ETag, else Last-Modified)
 * and size; `openRange()` fetches one inclusive range with `If-Range: <validator>`, so a source
 * that changed since the probe answers 200 with the whole new file, which is refused with
 * SourceChangedError instead of being mixed into the copy. Each 206 is also checked for the exact
 * Content-Range and, when the source sends one, the same ETag.
 *
 * TLS trust and address checks come from the agents: for a customer's URL, the outbound guard's
 * (`guardedAgents`, src/net/guarded-agents.ts), which check every connection they open.
 */
import http, { IncomingMessage } from 'node:http';
import https from 'node:https';
import { keptAliveWatch, STALE_CONNECTION_TRIES } from './kept-alive-connections';

export interface SourceInfo {
  size: number;
  /** Strong ETag or Last-Modified date pinned for the whole copy; absent if the source has neither. */
  validator?: string;
  etag?: string;
  lastModified?: string;
  contentType?: string;
}

export interface RangeSource {
  probe(signal?: AbortSignal): Promise<SourceInfo>;
  /** Bytes start..end (inclusive) of the pinned version, as a stream of chunks. */
  openRange(start: number, end: number, pinned: SourceInfo, signal?: AbortSignal): Promise<AsyncIterable<Buffer>>;
}

/** The source answered without range support (HTTP 200 to a range request). */
export class RangeNotSupportedError extends Error {
  override name = 'RangeNotSupportedError';
}
/** The source is not the file pinned at the start of the copy. Retrying cannot help. */
export class SourceChangedError extends Error {
  override name = 'SourceChangedError';
}
/** An HTTP answer that is neither 206 nor a redirect; `status` says which. */
export class SourceHttpError extends Error {
  override name = 'SourceHttpError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface HttpsRangeSourceOptions {
  /**
   * Agent for https URLs, with the trust settings to use. For a URL a customer named, the
   * outbound guard's (`guardedAgents(policy).httpsAgent`); without one, Node's global agent,
   * which checks nothing.
   */
  agent?: http.Agent;
  /** Agent for http URLs; for a customer's URL, `guardedAgents(policy).httpAgent`. */
  httpAgent?: http.Agent;
  /** Longest silence on a response, in milliseconds; default 30 s. */
  idleTimeoutMs?: number;
  /** Extra request headers (User-Agent). */
  headers?: Record<string, string>;
  /** Redirects followed per request; default 5. 0 refuses every redirect. */
  maxRedirects?: number;
  /**
   * Checks each redirect target before it is requested (the outbound URL guard); throw to
   * refuse it. Without it, only http(s) targets are followed.
   */
  checkRedirect?: (target: URL) => Promise<void> | void;
}

/** A redirect that was refused or went on too long; `target` is where it pointed. */
export class RedirectRefusedError extends Error {
  override name = 'RedirectRefusedError';
}

export class HttpsRangeSource implements RangeSource {
  private readonly url: URL;

  constructor(
    url: string | URL,
    private readonly opts: HttpsRangeSourceOptions = {},
  ) {
    this.url = new URL(url);
    if (this.url.protocol !== 'https:' && this.url.protocol !== 'http:') throw new Error('only http(s) sources are supported');
  }

  async probe(signal?: AbortSignal): Promise<SourceInfo> {
    const res = await this.request({ Range: 'bytes=0-0' }, signal);
    res.resume();
    if (res.statusCode === 200) throw new RangeNotSupportedError('the source ignores range requests (HTTP 200 to Range: bytes=0-0)');
    if (res.statusCode !== 206) throw new SourceHttpError(res.statusCode ?? 0, `the source answered HTTP ${res.statusCode} to a range request`);
    const cr = parseContentRange(res.headers['content-range']);
    if (!cr || cr.start !== 0 || cr.end !== 0 || cr.total === undefined) {
      throw new RangeNotSupportedError(`the source sent no usable Content-Range (${res.headers['content-range'] ?? 'none'})`);
    }
    const etag = header(res, 'etag');
    const lastModified = header(res, 'last-modified');
    const strongEtag = etag && !etag.startsWith('W/') ? etag : undefined;
    return { size: cr.total, etag, lastModified, validator: strongEtag ?? lastModified, contentType: header(res, 'content-type') };
  }

  async openRange(start: number, end: number, pinned: SourceInfo, signal?: AbortSignal): Promise<AsyncIterable<Buffer>> {
    const headers: Record<string, string> = { Range: `bytes=${start}-${end}` };
    if (pinned.validator) headers['If-Range'] = pinned.validator;
    const res = await this.request(headers, signal);
    if (res.statusCode === 200) {
      res.destroy();
      throw new SourceChangedError(pinned.validator ? `the source changed during the copy (its validator is no longer ${pinned.validator})` : 'the source stopped honouring range requests');
    }
    if (res.statusCode !== 206) {
      res.resume();
      throw new SourceHttpError(res.statusCode ?? 0, `the source answered HTTP ${res.statusCode} to bytes=${start}-${end}`);
    }
    const cr = parseContentRange(res.headers['content-range']);
    if (!cr || cr.start !== start || cr.end !== end) {
      res.destroy();
      throw new SourceHttpError(206, `the source answered ${res.headers['content-range'] ?? 'no Content-Range'} to bytes=${start}-${end}`);
    }
    const etag = header(res, 'etag');
    if (cr.total !== undefined && cr.total !== pinned.size) {
      res.destroy();
      throw new SourceChangedError(`the source's size changed from ${pinned.size} to ${cr.total} bytes during the copy`);
    }
    if (pinned.etag && etag && etag !== pinned.etag) {
      res.destroy();
      throw new SourceChangedError(`the source's ETag changed from ${pinned.etag} to ${etag} during the copy`);
    }
    return res;
  }

  /**
   * One GET, following redirects: every hop is checked by `checkRedirect` first, so a redirect
   * to a private address is refused like the address itself. Redirects are followed again on
   * every request (a source may hand out short-lived signed locations).
   */
  private async request(headers: Record<string, string>, signal?: AbortSignal): Promise<IncomingMessage> {
    const max = this.opts.maxRedirects ?? 5;
    let url = this.url;
    for (let hop = 0; ; hop++) {
      const res = await this.requestOnce(url, headers, signal);
      const status = res.statusCode ?? 0;
      const location = header(res, 'location');
      if (![301, 302, 303, 307, 308].includes(status) || !location) return res;
      res.resume();
      if (hop >= max) throw new RedirectRefusedError(`more than ${max} redirects`);
      let target: URL;
      try {
        target = new URL(location, url);
      } catch {
        throw new RedirectRefusedError(`a redirect to an invalid location (${location.slice(0, 200)})`);
      }
      if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new RedirectRefusedError(`a redirect to a ${target.protocol} URL`);
      try {
        await this.opts.checkRedirect?.(target);
      } catch (err) {
        throw new RedirectRefusedError(`a redirect to ${target.host} was refused: ${(err as Error).message}`);
      }
      url = target;
    }
  }

  /**
   * One GET of `url`. A request sent on a kept-alive connection that the origin closed meanwhile
   * (its idle timeout crossed our reuse: ECONNRESET or EPIPE before any response) is sent again
   * on a fresh connection (net/kept-alive-connections.ts): the origin never saw it, and a GET
   * may be repeated. Without this, a probe that met such a connection answered 400
   * INVALID_HTTPS_URL "not reachable (ECONNRESET)" for a healthy source (found by the crash soak).
   */
  private async requestOnce(url: URL, headers: Record<string, string>, signal?: AbortSignal): Promise<IncomingMessage> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.send(url, headers, signal);
      } catch (err) {
        const stale = (err as { staleConnection?: boolean }).staleConnection === true;
        if (!stale || signal?.aborted || tries >= STALE_CONNECTION_TRIES) throw err;
      }
    }
  }

  private send(url: URL, headers: Record<string, string>, signal?: AbortSignal): Promise<IncomingMessage> {
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = client.request(url, {
        method: 'GET',
        headers: { 'Accept-Encoding': 'identity', ...this.opts.headers, ...headers },
        agent: url.protocol === 'https:' ? this.opts.agent : this.opts.httpAgent,
        signal,
      });
      req.setTimeout(this.opts.idleTimeoutMs ?? 30_000, () => req.destroy(new Error('the source went silent')));
      const keptAlive = keptAliveWatch(req);
      req.on('response', resolve);
      req.on('error', (err) => reject(Object.assign(err, { staleConnection: keptAlive.staleFailure(err) })));
      req.end();
    });
  }
}

function header(res: IncomingMessage, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function parseContentRange(value: string | undefined): { start: number; end: number; total?: number } | undefined {
  const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(value ?? '');
  if (!m) return undefined;
  return { start: Number(m[1]), end: Number(m[2]), total: m[3] === '*' ? undefined : Number(m[3]) };
}
