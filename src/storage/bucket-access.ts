/**
 * Customer buckets: an S3 client built from a location's settings and credentials, and the
 * HeadBucket check that proves the credentials can reach the bucket. Outcomes are plain data;
 * the caller decides which domain error they become. No message built here ever contains a
 * credential: only the bucket name, the endpoint's host and fixed wording.
 */
import { HeadBucketCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';

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

/** The caller must `destroy()` the client when done with it. */
export function createBucketClient(settings: BucketSettings, opts: BucketClientOptions = {}): S3Client {
  return new S3Client({
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
    },
  });
}

export type BucketAccess =
  | { outcome: 'accessible' }
  | { outcome: 'bucket-not-found'; message: string }
  /** Credentials refused, endpoint unreachable or any other failure of the check. */
  | { outcome: 'refused'; message: string };

const CHECK_OPTIONS: BucketClientOptions = { connectionTimeoutMs: 5_000, requestTimeoutMs: 10_000, maxAttempts: 1 };

/** Sends HeadBucket with the given settings and classifies the answer. */
export async function checkBucketAccess(settings: BucketSettings, opts: BucketClientOptions = CHECK_OPTIONS): Promise<BucketAccess> {
  if (settings.endpoint !== undefined && !isHttpUrl(settings.endpoint)) {
    return { outcome: 'refused', message: 'The endpoint must be an http:// or https:// URL' };
  }
  let client: S3Client | undefined;
  try {
    client = createBucketClient(settings, opts);
    await client.send(new HeadBucketCommand({ Bucket: settings.bucket }));
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
  /** Credentials refused, endpoint unreachable or any other failure of the check. */
  | { outcome: 'refused'; message: string };

/** Sends HeadObject on `key` with the given settings (video out checks its target key). */
export async function checkObjectPresence(settings: BucketSettings, key: string, opts: BucketClientOptions = CHECK_OPTIONS): Promise<ObjectPresence> {
  let client: S3Client | undefined;
  try {
    client = createBucketClient(settings, opts);
    const out = await client.send(new HeadObjectCommand({ Bucket: settings.bucket, Key: key }));
    return { outcome: 'exists', size: Number(out.ContentLength ?? 0) };
  } catch (err) {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode;
    if (status === 404 || e.name === 'NotFound' || e.name === 'NoSuchKey') return { outcome: 'absent' };
    const bucket = `"${settings.bucket}" ${where(settings)}`;
    if (status === 401 || status === 403) {
      return { outcome: 'refused', message: `HeadObject on "${key}" in bucket ${bucket} was refused (HTTP ${status}): check the permissions of the credentials` };
    }
    return { outcome: 'refused', message: `HeadObject on "${key}" in bucket ${bucket} failed${status ? ` with HTTP ${status}` : ' before an answer was received'}` };
  } finally {
    client?.destroy();
  }
}

const REFUSED_CREDENTIAL_CODES = new Set(['Forbidden', 'AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'InvalidToken', 'ExpiredToken']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

function where(settings: BucketSettings): string {
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

function isHttpUrl(endpoint: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(endpoint).protocol);
  } catch {
    return false;
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
  const code = [e.code, e.name].find((c) => c !== undefined && NETWORK_CODES.has(c));
  if (code || e.name === 'TimeoutError' || e.name === 'RequestTimeout') {
    return { outcome: 'refused', message: `The endpoint of bucket ${bucket} could not be reached (${code ?? 'timed out'})` };
  }
  return { outcome: 'refused', message: `HeadBucket on ${bucket} failed before an answer was received` };
}
