/**
 * Where video in reads from: an HTTPS URL or an object in a customer bucket, both as a
 * RangeSource for the copy engine. `probeSource` runs before the 202 answer and turns every way a
 * source can be unusable into its documented 4xx; the copy job opens the same source again and
 * copies the version pinned by that probe.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { GuardedAgents, guardedAgents } from '../../net/guarded-agents';
import { HttpsRangeSource, RangeNotSupportedError, RangeSource, RedirectRefusedError, SourceHttpError, SourceInfo } from '../../net/https-range-source';
import { checkBucketEndpoint, checkOutboundUrl, isNonPublicAddressRefusal, OutboundPolicy } from '../../net/outbound-url';
import { BucketSettings, bucketEndpointNotPublic, bucketUnreachable, checkBucketAccess, createBucketClient } from '../../storage/bucket-access';
import { BucketRangeSource } from '../../storage/bucket-range-source';
import { BadRequestError, NotFoundError } from '../../shared/errors';

/** Largest video accepted by video in: 500 GB. */
export const MAX_VIDEO_BYTES = 500 * 1000 ** 3;

export type SourceSpec = { kind: 'HTTPS'; url: string } | { kind: 'BUCKET'; bucket: BucketSettings; key: string };

export interface OpenedSource {
  source: RangeSource;
  /** Releases the connections of the source. */
  close: () => void;
}

export interface VideoInSourceOptions {
  /** The outbound policy, read at every connection (the current VIDMILL_ALLOW_PRIVATE_URLS). */
  policy: OutboundPolicy;
  /** Extra certificate authorities trusted for HTTPS sources (PEM), e.g. a private CA. */
  extraCa?: string[];
  /** Longest wait for the probe of a source before the create answers; default 20 s. */
  probeTimeoutMs?: number;
}

const USER_AGENT = 'Vidmill-VideoIn/2.0';

export class VideoInSources {
  /** Every connection to a source goes through these (src/net/guarded-agents.ts), checked when it is made. */
  private readonly agents: GuardedAgents;
  private readonly policy: OutboundPolicy;

  constructor(private readonly opts: VideoInSourceOptions) {
    this.policy = opts.policy;
    this.agents = guardedAgents(opts.policy, { maxSockets: 64, extraCa: opts.extraCa });
  }

  open(spec: SourceSpec): OpenedSource {
    if (spec.kind === 'HTTPS') {
      const source = new HttpsRangeSource(spec.url, {
        agent: this.agents.httpsAgent,
        httpAgent: this.agents.httpAgent,
        headers: { 'User-Agent': USER_AGENT },
        checkRedirect: async (target) => void (await checkOutboundUrl(target.href, this.policy)),
      });
      return { source, close: () => undefined };
    }
    const client = createBucketClient(spec.bucket, this.policy, { maxAttempts: 2, requestTimeoutMs: 60_000 });
    return { source: new BucketRangeSource(client, spec.bucket.bucket, spec.key), close: () => client.destroy() };
  }

  /**
   * Checks a stored source again under the current policy before a copy of it is restarted:
   * 400 INVALID_HTTPS_URL or INVALID_BUCKET_ENDPOINT. No connection to the source is made.
   */
  async checkStored(spec: SourceSpec): Promise<void> {
    if (spec.kind === 'HTTPS') await checkOutboundUrl(spec.url, this.policy);
    else await checkBucketEndpoint(spec.bucket.endpoint, this.policy);
  }

  /**
   * Checks the source completely and pins its size and validator. Throws the documented 4xx:
   * INVALID_HTTPS_URL, CONTENT_NOT_PARTIAL_ERROR, NO_CONTENT, VIDEO_TOO_LARGE,
   * UNSUPPORTED_CONTENT_TYPE (an HTML page), INVALID_BUCKET_ENDPOINT, BUCKET_NOT_FOUND,
   * KEY_NOT_FOUND, HEAD_BUCKET_ERROR, HEAD_OBJECT_ERROR.
   */
  async probe(spec: SourceSpec): Promise<SourceInfo> {
    const info = spec.kind === 'HTTPS' ? await this.probeHttps(spec.url) : await this.probeBucket(spec.bucket, spec.key);
    if (info.size === 0) throw new BadRequestError('NO_CONTENT', 'The source file is empty (0 bytes)');
    if (info.size > MAX_VIDEO_BYTES) {
      throw new BadRequestError('VIDEO_TOO_LARGE', `The source file has ${info.size} bytes; video in accepts at most 500 GB (${MAX_VIDEO_BYTES} bytes)`);
    }
    if (/^text\/html\b/i.test(info.contentType ?? '')) {
      throw new BadRequestError('UNSUPPORTED_CONTENT_TYPE', 'The source answers with an HTML page (Content-Type text/html), not a video file');
    }
    return info;
  }

  async close(): Promise<void> {
    this.agents.httpsAgent.destroy();
    this.agents.httpAgent.destroy();
  }

  private async probeHttps(url: string): Promise<SourceInfo> {
    await checkOutboundUrl(url, this.policy);
    const { source } = this.open({ kind: 'HTTPS', url });
    const signal = AbortSignal.timeout(this.opts.probeTimeoutMs ?? 20_000);
    try {
      return await source.probe(signal);
    } catch (err) {
      throw classifyHttpsProbeFailure(err, signal);
    }
  }

  private async probeBucket(bucket: BucketSettings, key: string): Promise<SourceInfo> {
    // A stored input location is checked again: it may predate the rule or the policy.
    await checkBucketEndpoint(bucket.endpoint, this.policy);
    const access = await checkBucketAccess(bucket, this.policy);
    if (access.outcome === 'bucket-not-found') throw new NotFoundError(access.message, 'BUCKET_NOT_FOUND');
    if (access.outcome === 'endpoint-not-allowed') throw new BadRequestError('INVALID_BUCKET_ENDPOINT', access.message);
    if (access.outcome === 'refused') throw new BadRequestError('HEAD_BUCKET_ERROR', access.message);
    const client: S3Client = createBucketClient(bucket, this.policy, { maxAttempts: 1, connectionTimeoutMs: 5_000, requestTimeoutMs: 15_000 });
    try {
      return await new BucketRangeSource(client, bucket.bucket, key).probe();
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      const status = e.$metadata?.httpStatusCode;
      if (status === 404 || e.name === 'NotFound' || e.name === 'NoSuchKey') {
        throw new NotFoundError(`Object "${key}" does not exist in bucket "${bucket.bucket}"`, 'KEY_NOT_FOUND');
      }
      if (status === 401 || status === 403) {
        throw new BadRequestError('HEAD_OBJECT_ERROR', `HeadObject on "${key}" in bucket "${bucket.bucket}" was refused (HTTP ${status}): check the permissions of the credentials`);
      }
      if (isNonPublicAddressRefusal(err)) throw new BadRequestError('INVALID_BUCKET_ENDPOINT', bucketEndpointNotPublic(bucket));
      if (!status) throw new BadRequestError('HEAD_OBJECT_ERROR', bucketUnreachable(bucket));
      throw new BadRequestError('HEAD_OBJECT_ERROR', `HeadObject on "${key}" in bucket "${bucket.bucket}" failed with HTTP ${status}`);
    } finally {
      client.destroy();
    }
  }
}

export function classifyHttpsProbeFailure(err: unknown, signal: AbortSignal): Error {
  if (err instanceof BadRequestError) return err;
  if (err instanceof RangeNotSupportedError) {
    return new BadRequestError('CONTENT_NOT_PARTIAL_ERROR', `The source does not support range requests: ${err.message}`);
  }
  if (err instanceof RedirectRefusedError) return new BadRequestError('INVALID_HTTPS_URL', `The source redirected to an address that is not allowed: ${err.message}`);
  if (err instanceof SourceHttpError) {
    // 416 to bytes=0-0 is how an origin answers for a file with no bytes.
    if (err.status === 416) return new BadRequestError('NO_CONTENT', 'The source file is empty (HTTP 416 to bytes=0-0)');
    return new BadRequestError('INVALID_HTTPS_URL', `The source is not accessible: it answered HTTP ${err.status}`);
  }
  const e = err as NodeJS.ErrnoException;
  if (isNonPublicAddressRefusal(e)) return new BadRequestError('INVALID_HTTPS_URL', `The URL's host resolves to a non-public address`);
  if (signal.aborted) return new BadRequestError('INVALID_HTTPS_URL', 'The source did not answer in time');
  const tls = typeof e?.code === 'string' && /CERT|SSL|TLS|SELF_SIGNED/.test(e.code);
  return new BadRequestError('INVALID_HTTPS_URL', tls ? `The source's TLS certificate is not trusted (${e.code})` : `The source is not reachable (${e?.code ?? e?.message ?? 'unknown error'})`);
}
