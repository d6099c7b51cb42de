/**
 * Customer buckets: an S3 client built from a location's settings and credentials, and the
 * HeadBucket check that proves the credentials can reach the bucket. Outcomes are plain data;
 * the caller decides which domain error they become. No message built here ever contains a
 * credential: only the bucket name, the endpoint's host and fixed wording.
 *
 * Every client connects through agents under the outbound policy (src/net/guarded-agents.ts):
 * the endpoint's form and host are checked at the API (`checkBucketEndpoint`), and every socket
 * the client opens afterwards is checked again where it connects. Failures without an HTTP
 * answer all get one message (`bucketUnreachable`), whatever the network said.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { s3Sdk } from './s3-sdk';
import { guardedAgents } from '../net/guarded-agents';
import { isNonPublicAddressRefusal, OutboundPolicy } from '../net/outbound-url';

export const DEFAULT_BUCKET_REGION = 'us-east-1';

export interface BucketCredentials {
  accessKey: string;
  secretAccessKey: string;
}

export interface BucketSettings {
  bucket: string;
  /** An S3-compatible endpoint; absent means AWS S3. */
  endpoint?: string;
  region?: string;
  forcePathStyle: boolean;
  credentials: BucketCredentials;
}

export interface BucketClientOptions {
  /** Longest wait for the TCP connection, in milliseconds. */
  connectionTimeoutMs?: number;
  /** Longest silence on an open request, in milliseconds. */
  requestTimeoutMs?: number;
  maxAttempts?: number;
  /**
   * 'WHEN_REQUIRED' sends the SDK's optional request checksums (x-amz-checksum-*) only where an
   * operation requires them; uploads use it, since several S3-compatible stores refuse them.
   * Absent: the SDK's default.
   */
  checksums?: 'WHEN_REQUIRED';
}

/**
 * The caller must `destroy()` the client when done with it (that also destroys its agents).
 * The agents are instances, not options: the SDK then uses them for every request, including
 * the `Expect: 100-continue` uploads it would otherwise send through an agent of its own.
 */
export function createBucketClient(settings: BucketSettings, policy: OutboundPolicy, opts: BucketClientOptions = {}): S3Client {
  return new (s3Sdk().S3Client)({
    region: settings.region ?? DEFAULT_BUCKET_REGION,
    endpoint: settings.endpoint,
    forcePathStyle: settings.forcePathStyle,
    credentials: { accessKeyId: settings.credentials.accessKey, secretAccessKey: settings.credentials.secretAccessKey },
    // The customer's settings alone decide where their credentials go, never AWS_ENDPOINT_URL
    // or ~/.aws/config of the machine running Vidmill.
    ignoreConfiguredEndpointUrls: true,
    maxAttempts: opts.maxAttempts ?? 3,
    ...(opts.checksums ? { requestChecksumCalculation: opts.checksums, responseChecksumValidation: opts.checksums } : {}),
    requestHandler: {
      connectionTimeout: opts.connectionTimeoutMs ?? 10_000,
      requestTimeout: opts.requestTimeoutMs ?? 60_000,
      // The SDK's requestTimeout only logs a warning now; the socket idle timeout is what fails a
      // request after that long without a byte (a silent endpoint must not hang a check).
      socketTimeout: opts.requestTimeoutMs ?? 60_000,
      ...guardedAgents(policy),
    },
  });
}

/** The one message of every failure that got no answer from the bucket's endpoint. */
export function bucketUnreachable(settings: Pick<BucketSettings, 'bucket' | 'endpoint'>): string {
  return `Bucket "${settings.bucket}" ${where(settings)} could not be reached`;
}

/** The message of a connection the outbound guard refused (a host that is not public). */
export function bucketEndpointNotPublic(settings: Pick<BucketSettings, 'bucket' | 'endpoint'>): string {
  return `Bucket "${settings.bucket}" ${where(settings)} is at a non-public address`;
}

export type BucketAccess =
  | { outcome: 'accessible' }
  | { outcome: 'bucket-not-found'; message: string }
  /** The outbound guard refused to connect: the endpoint's host (as resolved) is not public. */
  | { outcome: 'endpoint-not-allowed'; message: string }
  /** Credentials refused, endpoint unreachable or any other failure of the check. */
  | { outcome: 'refused'; message: string };

const CHECK_OPTIONS: BucketClientOptions = { connectionTimeoutMs: 5_000, requestTimeoutMs: 10_000, maxAttempts: 1 };

/**
 * Sends HeadBucket with the given settings and classifies the answer. The endpoint's form and
 * host are the caller's to check first (`checkBucketEndpoint`, 400 INVALID_BUCKET_ENDPOINT).
 */
export async function checkBucketAccess(settings: BucketSettings, policy: OutboundPolicy, opts: BucketClientOptions = CHECK_OPTIONS): Promise<BucketAccess> {
  let client: S3Client | undefined;
  try {
    client = createBucketClient(settings, policy, opts);
    await client.send(new (s3Sdk().HeadBucketCommand)({ Bucket: settings.bucket }));
    return { outcome: 'accessible' };
  } catch (err) {
    return classifyFailure(settings, err);
  } finally {
    client?.destroy();
  }
}

export type ObjectPresence =
  | { outcome: 'absent' }
  | { outcome: 'exists'; size: number }
  | { outcome: 'endpoint-not-allowed'; message: string }
  /** Credentials refused, endpoint unreachable or any other failure of the check. */
  | { outcome: 'refused'; message: string };

/** Sends HeadObject on `key` with the given settings (video out checks its target key). */
export async function checkObjectPresence(settings: BucketSettings, key: string, policy: OutboundPolicy, opts: BucketClientOptions = CHECK_OPTIONS): Promise<ObjectPresence> {
  let client: S3Client | undefined;
  try {
    client = createBucketClient(settings, policy, opts);
    const out = await client.send(new (s3Sdk().HeadObjectCommand)({ Bucket: settings.bucket, Key: key }));
    return { outcome: 'exists', size: Number(out.ContentLength ?? 0) };
  } catch (err) {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode;
    if (status === 404 || e.name === 'NotFound' || e.name === 'NoSuchKey') return { outcome: 'absent' };
    if (isNonPublicAddressRefusal(err)) return { outcome: 'endpoint-not-allowed', message: bucketEndpointNotPublic(settings) };
    const bucket = `"${settings.bucket}" ${where(settings)}`;
    if (status === 401 || status === 403) {
      return { outcome: 'refused', message: `HeadObject on "${key}" in bucket ${bucket} was refused (HTTP ${status}): check the permissions of the credentials` };
    }
    return { outcome: 'refused', message: status ? `HeadObject on "${key}" in bucket ${bucket} failed with HTTP ${status}` : bucketUnreachable(settings) };
  } finally {
    client?.destroy();
  }
}

const REFUSED_CREDENTIAL_CODES = new Set(['Forbidden', 'AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'InvalidToken', 'ExpiredToken']);

function where(settings: Pick<BucketSettings, 'endpoint'>): string {
  return settings.endpoint ? `at ${safeHost(settings.endpoint)}` : 'on AWS S3';
}

/** The endpoint's host only: no user info, path or query can reach a message. */
function safeHost(endpoint: string): string {
  try {
    return new URL(endpoint).host || 'the configured endpoint';
  } catch {
    return 'the configured endpoint';
  }
}

function classifyFailure(settings: BucketSettings, err: unknown): BucketAccess {
  const e = err as { name?: string; code?: string; $metadata?: { httpStatusCode?: number }; $response?: { headers?: Record<string, string> } };
  const status = e.$metadata?.httpStatusCode;
  const bucket = `"${settings.bucket}" ${where(settings)}`;
  if (status === 404 || e.name === 'NoSuchBucket' || e.name === 'NotFound') {
    return { outcome: 'bucket-not-found', message: `Bucket ${bucket} does not exist` };
  }
  if (status === 401 || status === 403 || REFUSED_CREDENTIAL_CODES.has(e.name ?? '')) {
    return {
      outcome: 'refused',
      message: `HeadBucket on ${bucket} was refused (HTTP ${status ?? 403}): check the access key, the secret access key and the permissions granted to them`,
    };
  }
  if (status === 301 || status === 307) {
    const region = e.$response?.headers?.['x-amz-bucket-region'];
    const hint = region && /^[a-z0-9-]{1,64}$/.test(region) ? `; the bucket is in region ${region}` : '';
    return { outcome: 'refused', message: `HeadBucket on ${bucket} was redirected (HTTP ${status}): check the region${hint}` };
  }
  if (status !== undefined) {
    return { outcome: 'refused', message: `HeadBucket on ${bucket} failed with HTTP ${status}` };
  }
  if (isNonPublicAddressRefusal(err)) return { outcome: 'endpoint-not-allowed', message: bucketEndpointNotPublic(settings) };
  // Refused, reset, timed out, not resolved, or anything else without an answer: one message,
  // so that no answer tells a closed port from a filtered one.
  return { outcome: 'refused', message: bucketUnreachable(settings) };
}
