/**
 * A local S3-compatible server for tests: the npm package s3rver, on 127.0.0.1 at a random port
 * with a temporary directory, behind a front that verifies AWS Signature Version 4.
 *
 * Why the front: s3rver checks signatures only for Signature Version 2. For Version 4 (what
 * @aws-sdk/client-s3 sends) it only looks the access key id up and accepts any signature, so a
 * wrong secret access key would pass even with `allowMismatchedSignatures: false`. The front
 * recomputes every V4 signature (Authorization header or presigned query) with the configured
 * secret and answers like S3 does: 403 InvalidAccessKeyId, SignatureDoesNotMatch or AccessDenied.
 * Payload bodies are not hashed (s3rver does not either); the signed headers, path and query are.
 *
 * The front also answers the multipart operations s3rver lacks, from s3rver's own staging
 * directory: ListParts (GET ?uploadId=, what a resumed upload asks), AbortMultipartUpload
 * (DELETE ?uploadId=) and ListMultipartUploads (GET /bucket?uploads).
 *
 * `refuse` lets a test make the store refuse chosen requests (403 AccessDenied), as a bucket
 * whose credentials were revoked or whose policy changed would.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import http, { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

export interface S3KeyPair {
  accessKey: string;
  secretAccessKey: string;
}

export interface SignedRequestLog {
  method: string;
  url: string;
  /** Undefined when the signature verified; else the S3 error code answered. */
  refusedWith?: string;
}

export interface LocalS3 {
  /** `http://127.0.0.1:<port>`; use path-style addressing. */
  endpoint: string;
  region: string;
  /** The first accepted key pair. */
  credentials: S3KeyPair;
  /** Every request the front received, in order. */
  requests: SignedRequestLog[];
  /** When set and true for a (correctly signed) request, the front answers 403 AccessDenied. */
  refuse?: (r: { method: string; url: string; accessKey: string }) => boolean;
  createBucket(name: string): Promise<void>;
  /** A client signed with the first key pair. */
  client(): S3Client;
  close(): Promise<void>;
}

export function randomKeyPair(): S3KeyPair {
  return {
    accessKey: 'AKTEST' + randomBytes(7).toString('hex').toUpperCase(),
    secretAccessKey: randomBytes(30).toString('base64'),
  };
}

// s3rver ships no types; only these members are used.
interface S3rverInstance {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  configureBuckets(): Promise<void>;
  logger: { close(): void };
}
interface S3rverAccounts {
  DUMMY_ACCOUNT: { createKeyPair(accessKey: string, secret: string): void; revokeAccessKey(accessKey: string): void };
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- s3rver ships no type declarations; typed by the interface above
const S3rver: new (options: Record<string, unknown>) => S3rverInstance = require('s3rver');
// s3rver's own account registry must know the key ids it receives after the front let them in.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- untyped internal module of s3rver
const s3rverAccounts: S3rverAccounts = require('s3rver/lib/models/account');

export async function startLocalS3(opts: { buckets?: string[]; keyPairs?: S3KeyPair[] } = {}): Promise<LocalS3> {
  const keyPairs = opts.keyPairs?.length ? opts.keyPairs : [randomKeyPair()];
  const secrets = new Map(keyPairs.map((k) => [k.accessKey, k.secretAccessKey]));
  const directory = mkdtempSync(path.join(os.tmpdir(), 'vidmill-s3-'));
  const s3rver = new S3rver({
    directory,
    silent: true,
    vhostBuckets: false,
    configureBuckets: (opts.buckets ?? []).map((name) => ({ name, configs: [] })),
  });
  await s3rver.configureBuckets();
  for (const k of keyPairs) s3rverAccounts.DUMMY_ACCOUNT.createKeyPair(k.accessKey, k.secretAccessKey);

  const requests: SignedRequestLog[] = [];
  const objectLocks = new ObjectDirectoryLocks();
  const forward = s3rver.callback();
  const server = http.createServer((req, res) => {
    const accessKey = /Credential=([^/,\s]+)/.exec(req.headers.authorization ?? '')?.[1] ?? new URL(req.url ?? '/', 'http://s3.local').searchParams.get('X-Amz-Credential')?.split('/')[0] ?? '';
    const refusal =
      verifySignatureV4(req, secrets) ?? (local.refuse?.({ method: req.method ?? '', url: req.url ?? '', accessKey }) ? ({ code: 'AccessDenied', message: 'Access Denied' } as const) : undefined);
    requests.push({ method: req.method ?? '', url: req.url ?? '', refusedWith: refusal?.code });
    if (refusal) return refuse(req, res, refusal);
    void objectLocks.around(req, res, () => {
      if (answerMultipart(req, res, directory)) return;
      answerUploadPartWhenWritten(req, res, directory);
      forward(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const region = 'us-east-1';

  const client = () =>
    new S3Client({
      endpoint,
      region,
      forcePathStyle: true,
      credentials: { accessKeyId: keyPairs[0]!.accessKey, secretAccessKey: keyPairs[0]!.secretAccessKey },
    });

  const local: LocalS3 = {
    endpoint,
    region,
    credentials: keyPairs[0]!,
    requests,
    client,
    async createBucket(name) {
      const c = client();
      try {
        await c.send(new CreateBucketCommand({ Bucket: name }));
      } finally {
        c.destroy();
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (const k of keyPairs) s3rverAccounts.DUMMY_ACCOUNT.revokeAccessKey(k.accessKey);
      s3rver.logger.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
  return local;
}

/**
 * s3rver answers UploadPart once the part's bytes went through its hash, not once its file is
 * written (its `putPart` resolves on the hashing stream's `finish` and only then writes the .md5
 * file). Under load a ListParts right after the answer then saw the part with a short size, and a
 * client that checks sizes before completing (S3Upload.complete) failed the upload: "missing 1 of
 * 1 parts" (met by the crash soak). Real S3 lists a part as soon as UploadPart has answered; so
 * the front holds the answer to UploadPart until the part's file has all its bytes (at most 10 s).
 */
function answerUploadPartWhenWritten(req: IncomingMessage, res: ServerResponse, directory: string): void {
  const url = new URL(req.url ?? '/', 'http://s3.local');
  const uploadId = url.searchParams.get('uploadId');
  const partNumber = url.searchParams.get('partNumber');
  const [, bucket] = url.pathname.split('/').map(decodeURIComponent);
  const length = Number(req.headers['x-amz-decoded-content-length'] ?? req.headers['content-length']);
  if (req.method !== 'PUT' || !uploadId || !/^[0-9a-f]+$/.test(uploadId) || !partNumber || !/^\d+$/.test(partNumber) || !bucket || !Number.isInteger(length)) return;
  const file = path.join(directory, bucket, '._S3rver_uploads', uploadId, partNumber);
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  const deadline = Date.now() + 10_000;
  const written = () => existsSync(`${file}.md5`) && statSync(file).size >= length;
  res.end = ((...args: unknown[]) => {
    const finish = () => {
      if (res.statusCode !== 200 || written() || Date.now() > deadline) return void end(...args);
      setTimeout(finish, 5);
    };
    finish();
    return res;
  }) as typeof res.end;
}

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * ListParts, AbortMultipartUpload and ListMultipartUploads over s3rver's staging directory;
 * false for anything else.
 */
function answerMultipart(req: IncomingMessage, res: ServerResponse, directory: string): boolean {
  const url = new URL(req.url ?? '/', 'http://s3.local');
  const uploadId = url.searchParams.get('uploadId');
  const [, bucket, ...keyParts] = url.pathname.split('/').map(decodeURIComponent);
  const xml = (status: number, body: string) => {
    const text = `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
    res.writeHead(status, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
  if (req.method === 'GET' && bucket && keyParts.filter(Boolean).length === 0 && url.searchParams.has('uploads')) {
    req.resume();
    const staging = path.join(directory, bucket, '._S3rver_uploads');
    if (!existsSync(path.join(directory, bucket))) {
      xml(404, `<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>`);
      return true;
    }
    const uploads = (existsSync(staging) ? readdirSync(staging) : [])
      .filter((id) => existsSync(path.join(staging, id, 'key')))
      .map((id) => ({ id, key: readFileSync(path.join(staging, id, 'key'), 'utf8'), at: statSync(path.join(staging, id)).mtime }))
      .filter((u) => u.key.startsWith(url.searchParams.get('prefix') ?? ''))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.id < b.id ? -1 : 1));
    xml(
      200,
      `<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${bucket}</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>` +
        `<MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>` +
        uploads.map((u) => `<Upload><Key>${xmlEscape(u.key)}</Key><UploadId>${u.id}</UploadId><Initiated>${u.at.toISOString()}</Initiated><StorageClass>STANDARD</StorageClass></Upload>`).join('') +
        `</ListMultipartUploadsResult>`,
    );
    return true;
  }
  if (!uploadId || !bucket || keyParts.length === 0 || (req.method !== 'GET' && req.method !== 'DELETE')) return false;
  req.resume();
  const dir = path.join(directory, bucket, '._S3rver_uploads', uploadId);
  if (!/^[0-9a-f]+$/.test(uploadId) || !existsSync(dir)) {
    xml(404, `<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`);
    return true;
  }
  if (req.method === 'DELETE') {
    rmSync(dir, { recursive: true, force: true });
    res.writeHead(204).end();
    return true;
  }
  const marker = Number(url.searchParams.get('part-number-marker') ?? 0);
  const maxParts = Math.min(1000, Number(url.searchParams.get('max-parts') ?? 1000));
  // A part counts once its .md5 file exists: s3rver writes it after the part's data.
  const numbers = readdirSync(dir)
    .filter((f) => /^\d+\.md5$/.test(f))
    .map((f) => Number(f.slice(0, -4)))
    .filter((n) => n > marker)
    .sort((a, b) => a - b);
  const page = numbers.slice(0, maxParts);
  const truncated = numbers.length > page.length;
  const parts = page
    .map((n) => {
      const st = statSync(path.join(dir, String(n)));
      const md5 = readFileSync(path.join(dir, `${n}.md5`), 'utf8').trim();
      return `<Part><PartNumber>${n}</PartNumber><LastModified>${st.mtime.toISOString()}</LastModified><ETag>&quot;${md5}&quot;</ETag><Size>${st.size}</Size></Part>`;
    })
    .join('');
  xml(
    200,
    `<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${bucket}</Bucket><Key>${keyParts.join('/')}</Key><UploadId>${uploadId}</UploadId>` +
      `<PartNumberMarker>${marker}</PartNumberMarker><NextPartNumberMarker>${page.at(-1) ?? marker}</NextPartNumberMarker><MaxParts>${maxParts}</MaxParts>` +
      `<IsTruncated>${truncated}</IsTruncated>${parts}</ListPartsResult>`,
  );
  return true;
}

interface Refusal {
  code: 'AccessDenied' | 'InvalidAccessKeyId' | 'SignatureDoesNotMatch' | 'RequestTimeTooSkewed' | 'AuthorizationHeaderMalformed';
  message: string;
}

function refuse(req: IncomingMessage, res: ServerResponse, refusal: Refusal): void {
  req.resume();
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${refusal.code}</Code><Message>${refusal.message}</Message></Error>`;
  res.writeHead(403, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
  res.end(req.method === 'HEAD' ? undefined : body);
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
const MAX_SKEW_MS = 15 * 60 * 1000;

/** What a Version 4 signature claims, from the Authorization header or a presigned query. */
interface SignatureClaim {
  accessKey: string;
  scope: string[]; // date, region, service, 'aws4_request'
  signedHeaders: string[];
  signature: string;
  amzDate: string;
  payloadHash: string;
  presigned: boolean;
}

function claimOf(req: IncomingMessage, query: URLSearchParams): SignatureClaim | Refusal {
  const header = req.headers.authorization;
  if (header) {
    if (!header.startsWith(ALGORITHM + ' ')) return { code: 'AccessDenied', message: 'Only AWS Signature Version 4 is accepted' };
    const parts = Object.fromEntries(
      header
        .slice(ALGORITHM.length + 1)
        .split(',')
        .map((p) => p.trim().split('=') as [string, string]),
    );
    if (!parts.Credential || !parts.SignedHeaders || !parts.Signature) {
      return { code: 'AuthorizationHeaderMalformed', message: 'Credential, SignedHeaders and Signature are required' };
    }
    const [accessKey, ...scope] = parts.Credential.split('/');
    return {
      accessKey: accessKey!, // split() returns at least one element
      scope,
      signedHeaders: parts.SignedHeaders.split(';'),
      signature: parts.Signature,
      amzDate: String(req.headers['x-amz-date'] ?? ''),
      payloadHash: String(req.headers['x-amz-content-sha256'] ?? ''),
      presigned: false,
    };
  }
  if (query.get('X-Amz-Algorithm') === ALGORITHM) {
    const [accessKey, ...scope] = (query.get('X-Amz-Credential') ?? '').split('/');
    return {
      accessKey: accessKey!, // split() returns at least one element
      scope,
      signedHeaders: (query.get('X-Amz-SignedHeaders') ?? '').split(';'),
      signature: query.get('X-Amz-Signature') ?? '',
      amzDate: query.get('X-Amz-Date') ?? '',
      payloadHash: 'UNSIGNED-PAYLOAD',
      presigned: true,
    };
  }
  return { code: 'AccessDenied', message: 'Anonymous access is not allowed' };
}

function verifySignatureV4(req: IncomingMessage, secrets: Map<string, string>): Refusal | undefined {
  const rawUrl = req.url ?? '/';
  const queryStart = rawUrl.indexOf('?');
  const rawPath = queryStart < 0 ? rawUrl : rawUrl.slice(0, queryStart);
  const rawQuery = queryStart < 0 ? '' : rawUrl.slice(queryStart + 1);
  const claim = claimOf(req, new URLSearchParams(rawQuery));
  if ('code' in claim) return claim;

  const secret = secrets.get(claim.accessKey);
  if (secret === undefined) return { code: 'InvalidAccessKeyId', message: 'The AWS Access Key Id you provided does not exist in our records.' };
  if (claim.scope.length !== 4 || claim.scope[3] !== 'aws4_request' || !claim.amzDate.startsWith(claim.scope[0]!)) {
    return { code: 'AuthorizationHeaderMalformed', message: 'The credential scope is malformed' };
  }
  const signedAt = parseAmzDate(claim.amzDate);
  if (!claim.presigned && (Number.isNaN(signedAt) || Math.abs(Date.now() - signedAt) > MAX_SKEW_MS)) {
    return { code: 'RequestTimeTooSkewed', message: 'The difference between the request time and the current time is too large.' };
  }

  const canonicalRequest = [
    req.method ?? 'GET',
    rawPath,
    canonicalQuery(rawQuery, claim.presigned),
    claim.signedHeaders.map((name) => `${name}:${headerValue(req, name)}\n`).join(''),
    claim.signedHeaders.join(';'),
    claim.payloadHash,
  ].join('\n');
  const stringToSign = [ALGORITHM, claim.amzDate, claim.scope.join('/'), sha256Hex(canonicalRequest)].join('\n');
  const signingKey = claim.scope.reduce<Buffer | string>((key, part) => hmac(key, part), 'AWS4' + secret);
  const expected = hmac(signingKey, stringToSign).toString('hex');
  const provided = claim.signature;
  const matches = provided.length === expected.length && timingSafeEqual(Buffer.from(provided), Buffer.from(expected));
  return matches ? undefined : { code: 'SignatureDoesNotMatch', message: 'The request signature we calculated does not match the signature you provided. Check your key and signing method.' };
}

function parseAmzDate(amzDate: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : NaN;
}

function headerValue(req: IncomingMessage, name: string): string {
  const value = req.headers[name];
  const joined = Array.isArray(value) ? value.join(',') : (value ?? '');
  return joined.trim().replace(/\s+/g, ' ');
}

/** RFC 3986 encoding as SigV4 wants it: everything but unreserved characters. */
function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

function canonicalQuery(rawQuery: string, presigned: boolean): string {
  if (!rawQuery) return '';
  return rawQuery
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const eq = pair.indexOf('=');
      const key = decodeURIComponent(eq < 0 ? pair : pair.slice(0, eq));
      const value = eq < 0 ? '' : decodeURIComponent(pair.slice(eq + 1));
      return [uriEncode(key), uriEncode(value)] as const;
    })
    .filter(([key]) => !(presigned && key === 'X-Amz-Signature'))
    .sort(([ka, va], [kb, vb]) => (ka < kb ? -1 : ka > kb ? 1 : va < vb ? -1 : va > vb ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

function sha256Hex(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

/**
 * s3rver keeps objects as files in folders named after the key's segments, and a DeleteObject
 * removes the folders it leaves empty, up the key: a PutObject (or a multipart completion) in
 * the same folders at that moment fails to open its file (ENOENT), which s3rver does not catch,
 * so the test process dies ("Uncaught Error: ENOENT ... file._S3rver_object"). Real S3 has no
 * folders. The front therefore lets writes of objects under one top-level key segment run
 * together and a delete under it run alone (parts are staged elsewhere and take no lock).
 */
class ObjectDirectoryLocks {
  private readonly states = new Map<string, { writers: number; deleting: boolean; waiting: Array<() => void> }>();

  /** Runs `handle` under the lock the request needs (none for other requests); released when the response ends. */
  async around(req: http.IncomingMessage, res: http.ServerResponse, handle: () => void): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://s3.local');
    const [bucket, first, ...rest] = url.pathname.slice(1).split('/');
    const part = url.searchParams.has('partNumber') || (req.method === 'DELETE' && url.searchParams.has('uploadId'));
    const kind =
      !first || rest.length === 0 || part ? undefined : req.method === 'DELETE' ? 'delete' : req.method === 'PUT' || (req.method === 'POST' && url.searchParams.has('uploadId')) ? 'write' : undefined;
    if (!kind) return handle();
    const name = `${bucket}/${first}`;
    const state = this.states.get(name) ?? { writers: 0, deleting: false, waiting: [] };
    this.states.set(name, state);
    const free = () => !state.deleting && (kind === 'write' || state.writers === 0);
    while (!free()) await new Promise<void>((resolve) => state.waiting.push(resolve));
    if (kind === 'write') state.writers++;
    else state.deleting = true;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      if (kind === 'write') state.writers--;
      else state.deleting = false;
      state.waiting.splice(0).forEach((wake) => wake());
    };
    res.once('close', release);
    res.once('finish', release);
    handle();
  }
}
