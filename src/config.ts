/**
 * One typed configuration schema, read from VIDMILL_* environment variables and validated at
 * start. An invalid setting stops the process with a message naming the variable.
 * docs/configuration.md lists every setting; keep the two in step.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import type { DatabaseConfig } from './db/database';
import type { StorageConfig } from './storage/create-blob-store';
import { DEFAULT_PRICE_LIST, loadPriceListFile, type PriceList } from './features/billing';

const bool = z.enum(['true', 'false', '1', '0'], { message: 'must be true or false' }).transform((v) => v === 'true' || v === '1');
const httpUrl = z.string().refine((v) => {
  try {
    return ['http:', 'https:'].includes(new URL(v).protocol);
  } catch {
    return false;
  }
}, 'must be an http:// or https:// URL');
const int = (min: number, max: number) => z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(min).max(max);

/** One trusted proxy: an address, a subnet (address/prefix) or a name Express knows. */
function isProxyAddress(entry: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
  const [address = '', prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (!family || rest.length) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}
/**
 * Express 'trust proxy': `false`, a number of proxy hops, or a comma-separated list of proxy
 * addresses/subnets. `true` (trust any sender of X-Forwarded-For) is refused: every client
 * could then choose its own address and escape the per-address sign-in limit.
 */
const trustProxy = z.string().transform((v, ctx): false | number | string[] => {
  if (v === 'false') return false;
  if (/^\d+$/.test(v) && Number(v) <= 32) return Number(v);
  const entries = v.split(',').map((e) => e.trim());
  if (entries.every(isProxyAddress)) return entries;
  ctx.addIssue({
    code: 'custom',
    message: 'must be false, a number of proxy hops (0..32), or a comma-separated list of proxy addresses, subnets (10.0.0.0/8) or loopback/linklocal/uniquelocal',
  });
  return z.NEVER;
});

const schema = z
  .object({
    VIDMILL_HOST: z.string().min(1).default('127.0.0.1'),
    VIDMILL_PORT: int(0, 65535).default(8080),
    VIDMILL_DATA_DIR: z.string().min(1).default('./data'),
    VIDMILL_DATABASE_URL: z
      .string()
      .regex(/^(postgres(ql)?:\/\/|sqlite:)/, 'must be a postgres:// URL or sqlite:<file>')
      .optional(),
    VIDMILL_BOOTSTRAP_EMAIL: z.email('must be an e-mail address').optional(),
    VIDMILL_BOOTSTRAP_PASSWORD: z.string().min(12, 'must be at least 12 characters').optional(),
    VIDMILL_MASTER_KEY: z
      .string()
      .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded')
      .optional(),
    VIDMILL_RATE_LIMIT_PER_MINUTE: int(1, 1_000_000).default(600),
    VIDMILL_ROLE: z.enum(['all', 'api', 'worker']).default('all'),
    VIDMILL_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    VIDMILL_METRICS_TOKEN: z
      .string()
      .regex(/^[\x21-\x7e]{16,512}$/, 'must be 16..512 printable characters without spaces')
      .optional(),
    VIDMILL_METRICS_PORT: int(0, 65535).optional(),
    VIDMILL_METRICS_HOST: z.string().min(1).optional(),
    VIDMILL_BODY_LIMIT_BYTES: int(1024, 10 * 1024 * 1024).default(1024 * 1024),
    VIDMILL_ALLOW_PRIVATE_URLS: bool.default(false),
    VIDMILL_LOGIN_MAX_FAILURES: int(1, 1000).default(5),
    VIDMILL_LOGIN_LOCK_MINUTES: int(1, 24 * 60).default(15),
    VIDMILL_LOGIN_RATE_LIMIT_PER_ADDRESS: int(1, 1_000_000).default(30),
    VIDMILL_LOGIN_RATE_LIMIT_PER_EMAIL: int(1, 1_000_000).default(10),
    VIDMILL_TRUST_PROXY: trustProxy.default(false),
    VIDMILL_RESPONSE_VALIDATION_SAMPLE: z.coerce.number({ message: 'must be a number' }).min(0).max(1).default(0.01),
    VIDMILL_STORAGE: z.enum(['disk', 's3']).default('disk'),
    VIDMILL_S3_ENDPOINT: httpUrl.optional(),
    VIDMILL_S3_BUCKET: z
      .string()
      .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a bucket name (3..63 lower-case letters, digits, dots, hyphens)')
      .optional(),
    VIDMILL_S3_REGION: z
      .string()
      .regex(/^[a-z0-9-]{1,64}$/, 'must be a region name such as us-east-1')
      .default('us-east-1'),
    VIDMILL_S3_ACCESS_KEY: z.string().min(1).max(256).optional(),
    VIDMILL_S3_SECRET_KEY: z.string().min(1).max(512).optional(),
    VIDMILL_S3_FORCE_PATH_STYLE: bool.default(false),
    VIDMILL_PRICE_LIST_FILE: z.string().min(1).optional(),
    VIDMILL_WEBHOOK_KEY_ROTATION_DAYS: int(1, 3650).default(90),
    VIDMILL_WEBHOOK_KEY_GRACE_HOURS: int(1, 24 * 30).default(24),
    VIDMILL_WEBHOOK_KEY_PUBLISH_AHEAD_MINUTES: int(0, 7 * 24 * 60).default(10),
    VIDMILL_EXTRA_CA_FILE: z.string().min(1).optional(),
    VIDMILL_PUBLIC_URL: httpUrl.optional(),
    VIDMILL_FFMPEG_PATH: z.string().min(1).optional(),
    VIDMILL_FFPROBE_PATH: z.string().min(1).optional(),
    VIDMILL_MEDIA_TIMEOUT_MINUTES: int(1, 7 * 24 * 60).default(240),
    VIDMILL_SEGMENT_SECONDS: int(0, 24 * 3600).default(60),
    VIDMILL_FFMPEG_THREADS: int(0, 256).default(0),
    VIDMILL_ENCODER_PRESET: z.enum(['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium', 'slow', 'slower', 'veryslow']).default('medium'),
    VIDMILL_IDEMPOTENCY_TTL_HOURS: int(1, 30 * 24).default(24),
    VIDMILL_UPLOAD_EXPIRY_HOURS: int(1, 30 * 24).default(24),
    VIDMILL_JOB_LEASE_SECONDS: int(3, 3600).default(30),
    VIDMILL_WORKER_CONCURRENCY: int(1, 64).default(2),
    VIDMILL_WORKER_POLL_MS: int(50, 60_000).default(2000),
    VIDMILL_WEBHOOK_CONCURRENCY: int(1, 1024).default(64),
    VIDMILL_WEBHOOK_LEASE_SECONDS: int(15, 3600).default(60),
    VIDMILL_WEBHOOK_POLL_MS: int(50, 60_000).default(500),
  })
  .superRefine((env, ctx) => {
    if (env.VIDMILL_METRICS_PORT !== undefined && env.VIDMILL_METRICS_PORT !== 0 && env.VIDMILL_METRICS_PORT === env.VIDMILL_PORT) {
      ctx.addIssue({ code: 'custom', path: ['VIDMILL_METRICS_PORT'], message: 'must differ from VIDMILL_PORT (unset it to serve /metrics on the API port)' });
    }
    if (env.VIDMILL_STORAGE !== 's3') return;
    for (const name of ['VIDMILL_S3_BUCKET', 'VIDMILL_S3_ACCESS_KEY', 'VIDMILL_S3_SECRET_KEY'] as const) {
      if (!env[name]) ctx.addIssue({ code: 'custom', path: [name], message: 'is required when VIDMILL_STORAGE=s3' });
    }
  });

export type RawConfig = z.infer<typeof schema>;

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  database: DatabaseConfig;
  bootstrap: { email?: string; password?: string };
  masterKey?: Buffer;
  rateLimitPerMinute: number;
  role: 'all' | 'api' | 'worker';
  logLevel: RawConfig['VIDMILL_LOG_LEVEL'];
  /**
   * `GET /metrics`: the bearer token it requires (none when unset), and the port (and address)
   * of its own server; without a port it is served on the API port (src/http/metrics-endpoint.ts).
   */
  metrics: { token?: string; port?: number; host: string };
  bodyLimitBytes: number;
  allowPrivateUrls: boolean;
  login: { maxFailures: number; lockMinutes: number };
  /** Failed Basic sign-ins (API key management) per client address and per e-mail, per minute. */
  signInRateLimit: { perAddressPerMinute: number; perEmailPerMinute: number };
  /** Express 'trust proxy': proxies whose X-Forwarded-For names the client address (false: none). */
  trustProxy: false | number | string[];
  /** Platform storage: files under the data directory, or an S3-compatible bucket. */
  storage: StorageConfig;
  /** Prices and volume discount used by billing (default in code, or VIDMILL_PRICE_LIST_FILE). */
  priceList: PriceList;
  /**
   * Webhook signing keys: rotation period, how long a replaced key keeps verifying, and how long
   * a new key is published before it signs.
   */
  webhookSigningKeys: { rotationDays: number; graceHours: number; publishAheadMinutes: number };
  /**
   * ffmpeg and ffprobe: configured paths (else PATH, else the npm-shipped binaries; see
   * src/media/binaries.ts) and the time limit of one ffmpeg/ffprobe child process.
   */
  media: { ffmpegPath?: string; ffprobePath?: string; timeoutMs: number };
  /**
   * Processing: ranges longer than `segmentSeconds` are split into segments processed as separate
   * jobs (0: never); ffmpeg's thread count (0: ffmpeg's choice); the x264/x265 speed preset.
   */
  processing: { segmentSeconds: number; threads: number; encoderPreset: 'ultrafast' | 'superfast' | 'veryfast' | 'faster' | 'fast' | 'medium' | 'slow' | 'slower' | 'veryslow' };
  /** Strict response validation (tests); production logs response mismatches instead. */
  strictResponses: boolean;
  /** Share of responses checked against the contract in production (mismatches are logged). */
  responseValidationSample: number;
  /** Extra certificate authorities (PEM) trusted for HTTPS video-in sources. */
  extraCa?: string[];
  /** Base URL clients reach this installation at (signed media links); default http://host:port. */
  publicUrl: string;
  /**
   * Whether VIDMILL_PUBLIC_URL set `publicUrl`. Only then does the served contract name it as
   * the server; else it names each request's own origin.
   */
  publicUrlConfigured: boolean;
  /** Scratch space for media work (downloads, thumbnails, web videos): `<data dir>/work`. */
  workDir: string;
  /** How long the first response to a POST with an `Idempotency-Key` is kept for replays. */
  idempotencyTtlMs: number;
  /**
   * Direct resumable uploads (docs/uploads.md): how long an upload session lasts, and where the
   * bytes of unfinished uploads wait on local-disk storage (`<data dir>/uploads`).
   */
  uploads: { expiryMs: number; directory: string };
  /**
   * Background jobs: the lease a worker holds on a running job (renewed by a heartbeat every
   * third of it) and thus how soon another worker takes over the job of a killed one.
   */
  jobs: { leaseMs: number; heartbeatMs: number; concurrency: number; pollMs: number };
  /** Webhook delivery in a worker process: sends in flight, the lease of a claimed delivery, the longest sleep. */
  webhookDelivery: { concurrency: number; leaseMs: number; pollMs: number };
}

export type { DatabaseConfig, StorageConfig };

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith('VIDMILL_') && v !== '')));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const raw = parsed.data;
  let priceList = DEFAULT_PRICE_LIST;
  if (raw.VIDMILL_PRICE_LIST_FILE) {
    try {
      priceList = loadPriceListFile(path.resolve(raw.VIDMILL_PRICE_LIST_FILE));
    } catch (err) {
      throw new ConfigError(`Invalid configuration:\n  VIDMILL_PRICE_LIST_FILE: ${(err as Error).message}`);
    }
  }
  const dataDir = path.resolve(raw.VIDMILL_DATA_DIR);
  let extraCa: string[] | undefined;
  if (raw.VIDMILL_EXTRA_CA_FILE) {
    try {
      extraCa = [readFileSync(path.resolve(raw.VIDMILL_EXTRA_CA_FILE), 'utf8')];
    } catch (err) {
      throw new ConfigError(`Invalid configuration:\n  VIDMILL_EXTRA_CA_FILE: ${(err as Error).message}`);
    }
    if (!extraCa[0]!.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError('Invalid configuration:\n  VIDMILL_EXTRA_CA_FILE: must be a PEM file of certificates');
  }
  const url = raw.VIDMILL_DATABASE_URL;
  return {
    host: raw.VIDMILL_HOST,
    port: raw.VIDMILL_PORT,
    dataDir,
    database:
      url && !url.startsWith('sqlite:')
        ? { client: 'pg', connectionString: url }
        : { client: 'sqlite', filename: url ? path.resolve(url.slice('sqlite:'.length)) : path.join(dataDir, 'vidmill.sqlite') },
    bootstrap: { email: raw.VIDMILL_BOOTSTRAP_EMAIL, password: raw.VIDMILL_BOOTSTRAP_PASSWORD },
    masterKey: raw.VIDMILL_MASTER_KEY ? Buffer.from(raw.VIDMILL_MASTER_KEY, 'base64') : undefined,
    rateLimitPerMinute: raw.VIDMILL_RATE_LIMIT_PER_MINUTE,
    role: raw.VIDMILL_ROLE,
    logLevel: raw.VIDMILL_LOG_LEVEL,
    metrics: { token: raw.VIDMILL_METRICS_TOKEN, port: raw.VIDMILL_METRICS_PORT, host: raw.VIDMILL_METRICS_HOST ?? raw.VIDMILL_HOST },
    bodyLimitBytes: raw.VIDMILL_BODY_LIMIT_BYTES,
    allowPrivateUrls: raw.VIDMILL_ALLOW_PRIVATE_URLS,
    login: { maxFailures: raw.VIDMILL_LOGIN_MAX_FAILURES, lockMinutes: raw.VIDMILL_LOGIN_LOCK_MINUTES },
    signInRateLimit: { perAddressPerMinute: raw.VIDMILL_LOGIN_RATE_LIMIT_PER_ADDRESS, perEmailPerMinute: raw.VIDMILL_LOGIN_RATE_LIMIT_PER_EMAIL },
    trustProxy: raw.VIDMILL_TRUST_PROXY,
    storage:
      raw.VIDMILL_STORAGE === 's3'
        ? {
            kind: 's3',
            bucket: raw.VIDMILL_S3_BUCKET!,
            endpoint: raw.VIDMILL_S3_ENDPOINT,
            region: raw.VIDMILL_S3_REGION,
            accessKey: raw.VIDMILL_S3_ACCESS_KEY!,
            secretKey: raw.VIDMILL_S3_SECRET_KEY!,
            forcePathStyle: raw.VIDMILL_S3_FORCE_PATH_STYLE,
          }
        : { kind: 'disk', root: path.join(dataDir, 'blobs') },
    priceList,
    webhookSigningKeys: {
      rotationDays: raw.VIDMILL_WEBHOOK_KEY_ROTATION_DAYS,
      graceHours: raw.VIDMILL_WEBHOOK_KEY_GRACE_HOURS,
      publishAheadMinutes: raw.VIDMILL_WEBHOOK_KEY_PUBLISH_AHEAD_MINUTES,
    },
    media: {
      ffmpegPath: raw.VIDMILL_FFMPEG_PATH,
      ffprobePath: raw.VIDMILL_FFPROBE_PATH,
      timeoutMs: raw.VIDMILL_MEDIA_TIMEOUT_MINUTES * 60_000,
    },
    processing: { segmentSeconds: raw.VIDMILL_SEGMENT_SECONDS, threads: raw.VIDMILL_FFMPEG_THREADS, encoderPreset: raw.VIDMILL_ENCODER_PRESET },
    strictResponses: false,
    responseValidationSample: raw.VIDMILL_RESPONSE_VALIDATION_SAMPLE,
    extraCa,
    workDir: path.join(dataDir, 'work'),
    idempotencyTtlMs: raw.VIDMILL_IDEMPOTENCY_TTL_HOURS * 3600_000,
    uploads: { expiryMs: raw.VIDMILL_UPLOAD_EXPIRY_HOURS * 3600_000, directory: path.join(dataDir, 'uploads') },
    jobs: {
      leaseMs: raw.VIDMILL_JOB_LEASE_SECONDS * 1000,
      heartbeatMs: Math.floor((raw.VIDMILL_JOB_LEASE_SECONDS * 1000) / 3),
      concurrency: raw.VIDMILL_WORKER_CONCURRENCY,
      pollMs: raw.VIDMILL_WORKER_POLL_MS,
    },
    webhookDelivery: {
      concurrency: raw.VIDMILL_WEBHOOK_CONCURRENCY,
      leaseMs: raw.VIDMILL_WEBHOOK_LEASE_SECONDS * 1000,
      pollMs: raw.VIDMILL_WEBHOOK_POLL_MS,
    },
    publicUrlConfigured: raw.VIDMILL_PUBLIC_URL !== undefined,
    publicUrl: raw.VIDMILL_PUBLIC_URL ?? `http://${raw.VIDMILL_HOST.includes(':') ? `[${raw.VIDMILL_HOST}]` : raw.VIDMILL_HOST}:${raw.VIDMILL_PORT}`,
  };
}

/**
 * Settings that weaken a safeguard, as warnings the process logs at every start while they are
 * on (main.ts).
 */
export function startupWarnings(config: Pick<Config, 'allowPrivateUrls'>): string[] {
  const warnings: string[] = [];
  if (config.allowPrivateUrls) {
    warnings.push(
      'VIDMILL_ALLOW_PRIVATE_URLS is on: HTTPS sources, webhook URLs and bucket endpoints may use http and reach private, ' +
        'loopback and link-local addresses (cloud metadata included). Keep it off on anything reachable from the internet.',
    );
  }
  return warnings;
}
