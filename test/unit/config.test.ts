import { strict as assert } from 'node:assert';
import path from 'node:path';
import { ConfigError, loadConfig, startupWarnings } from '../../src/config';
import { createBlobStore } from '../../src/storage/create-blob-store';
import { LocalDiskStore } from '../../src/storage/local-disk-store';
import { S3BlobStore } from '../../src/storage/s3-blob-store';

describe('Configuration', () => {
  it('defaults: 127.0.0.1:8080, ./data, SQLite file in the data directory, 600 requests per minute, role all', () => {
    const c = loadConfig({});
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 8080);
    assert.equal(c.dataDir, path.resolve('./data'));
    assert.deepEqual(c.database, { client: 'sqlite', filename: path.resolve('./data/vidmill.sqlite') });
    assert.equal(c.rateLimitPerMinute, 600);
    assert.equal(c.role, 'all');
    assert.equal(c.allowPrivateUrls, false);
  });

  it('VIDMILL_ALLOW_PRIVATE_URLS=true is warned about at start (it covers bucket endpoints too); off by default, no warning', () => {
    assert.deepEqual(startupWarnings(loadConfig({})), []);
    const warnings = startupWarnings(loadConfig({ VIDMILL_ALLOW_PRIVATE_URLS: 'true' }));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /VIDMILL_ALLOW_PRIVATE_URLS/);
    assert.match(warnings[0]!, /bucket endpoints/);
  });

  it('a postgres URL selects PostgreSQL', () => {
    const c = loadConfig({ VIDMILL_DATABASE_URL: 'postgres://u@db:5432/vidmill' });
    assert.deepEqual(c.database, { client: 'pg', connectionString: 'postgres://u@db:5432/vidmill' });
  });

  it('invalid settings stop the start with a message naming each variable', () => {
    assert.throws(
      () => loadConfig({ VIDMILL_PORT: 'eighty', VIDMILL_ROLE: 'boss', VIDMILL_MASTER_KEY: 'short', VIDMILL_DATABASE_URL: 'mysql://x', VIDMILL_ALLOW_PRIVATE_URLS: 'yes' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        for (const name of ['VIDMILL_PORT', 'VIDMILL_ROLE', 'VIDMILL_MASTER_KEY', 'VIDMILL_DATABASE_URL', 'VIDMILL_ALLOW_PRIVATE_URLS']) {
          assert.match(err.message, new RegExp(name));
        }
        return true;
      },
    );
  });

  it('platform storage: local disk under the data directory by default', () => {
    const c = loadConfig({ VIDMILL_DATA_DIR: '/srv/vidmill' });
    assert.deepEqual(c.storage, { kind: 'disk', root: path.resolve('/srv/vidmill/blobs') });
    assert.ok(createBlobStore(c.storage) instanceof LocalDiskStore);
  });

  it('platform storage on S3: bucket and credentials are required; the rest has defaults', async () => {
    assert.throws(
      () => loadConfig({ VIDMILL_STORAGE: 's3' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        for (const name of ['VIDMILL_S3_BUCKET', 'VIDMILL_S3_ACCESS_KEY', 'VIDMILL_S3_SECRET_KEY']) assert.match(err.message, new RegExp(`${name}: is required when VIDMILL_STORAGE=s3`));
        return true;
      },
    );
    const c = loadConfig({ VIDMILL_STORAGE: 's3', VIDMILL_S3_BUCKET: 'vidmill-media', VIDMILL_S3_ACCESS_KEY: 'AK', VIDMILL_S3_SECRET_KEY: 'very-secret' });
    assert.deepEqual(c.storage, {
      kind: 's3',
      bucket: 'vidmill-media',
      endpoint: undefined,
      region: 'us-east-1',
      accessKey: 'AK',
      secretKey: 'very-secret',
      forcePathStyle: false,
    });
    const full = loadConfig({
      VIDMILL_STORAGE: 's3',
      VIDMILL_S3_ENDPOINT: 'http://minio:9000',
      VIDMILL_S3_BUCKET: 'media',
      VIDMILL_S3_REGION: 'eu-central-1',
      VIDMILL_S3_ACCESS_KEY: 'AK',
      VIDMILL_S3_SECRET_KEY: 'SK',
      VIDMILL_S3_FORCE_PATH_STYLE: 'true',
    });
    assert.equal(full.storage.kind === 's3' && full.storage.endpoint, 'http://minio:9000');
    assert.equal(full.storage.kind === 's3' && full.storage.forcePathStyle, true);
    const store = createBlobStore(full.storage);
    assert.ok(store instanceof S3BlobStore);
    await store.close();
  });

  it('invalid storage settings name their variable and never echo the secret', () => {
    assert.throws(
      () =>
        loadConfig({
          VIDMILL_STORAGE: 'ftp',
          VIDMILL_S3_ENDPOINT: 'ftp://x',
          VIDMILL_S3_BUCKET: 'Bad_Bucket',
          VIDMILL_S3_REGION: 'EU WEST',
          VIDMILL_S3_FORCE_PATH_STYLE: 'maybe',
          VIDMILL_S3_SECRET_KEY: 's'.repeat(600),
        }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        for (const name of ['VIDMILL_STORAGE', 'VIDMILL_S3_ENDPOINT', 'VIDMILL_S3_BUCKET', 'VIDMILL_S3_REGION', 'VIDMILL_S3_FORCE_PATH_STYLE', 'VIDMILL_S3_SECRET_KEY']) {
          assert.match(err.message, new RegExp(name));
        }
        assert.doesNotMatch(err.message, /ssssssssss/);
        return true;
      },
    );
  });

  it('media: ffmpeg/ffprobe paths are optional; the child-process time limit defaults to 240 minutes', () => {
    assert.deepEqual(loadConfig({}).media, { ffmpegPath: undefined, ffprobePath: undefined, timeoutMs: 240 * 60_000 });
    const c = loadConfig({ VIDMILL_FFMPEG_PATH: '/opt/ff/ffmpeg', VIDMILL_FFPROBE_PATH: '/opt/ff/ffprobe', VIDMILL_MEDIA_TIMEOUT_MINUTES: '30' });
    assert.deepEqual(c.media, { ffmpegPath: '/opt/ff/ffmpeg', ffprobePath: '/opt/ff/ffprobe', timeoutMs: 30 * 60_000 });
    assert.throws(() => loadConfig({ VIDMILL_MEDIA_TIMEOUT_MINUTES: '0' }), /VIDMILL_MEDIA_TIMEOUT_MINUTES/);
  });

  it('sign-in limits: 30 per address and 10 per e-mail a minute by default, configurable', () => {
    assert.deepEqual(loadConfig({}).signInRateLimit, { perAddressPerMinute: 30, perEmailPerMinute: 10 });
    const c = loadConfig({ VIDMILL_LOGIN_RATE_LIMIT_PER_ADDRESS: '100', VIDMILL_LOGIN_RATE_LIMIT_PER_EMAIL: '3' });
    assert.deepEqual(c.signInRateLimit, { perAddressPerMinute: 100, perEmailPerMinute: 3 });
    assert.throws(() => loadConfig({ VIDMILL_LOGIN_RATE_LIMIT_PER_EMAIL: '0' }), /VIDMILL_LOGIN_RATE_LIMIT_PER_EMAIL/);
  });

  it('trust proxy: none by default; a hop count or proxy addresses/subnets; never "trust everyone"', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ VIDMILL_TRUST_PROXY: 'false' }).trustProxy, false);
    assert.equal(loadConfig({ VIDMILL_TRUST_PROXY: '1' }).trustProxy, 1);
    assert.deepEqual(loadConfig({ VIDMILL_TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::/8,192.0.2.7' }).trustProxy, ['loopback', '10.0.0.0/8', 'fd00::/8', '192.0.2.7']);
    for (const bad of ['true', '10.0.0.0/33', 'proxy.example.com', '64', '10.0.0.1,']) {
      assert.throws(() => loadConfig({ VIDMILL_TRUST_PROXY: bad }), /VIDMILL_TRUST_PROXY/, bad);
    }
  });

  it('reads every documented setting (docs/configuration.md lists them all)', async () => {
    const { readFileSync } = await import('node:fs');
    const doc = readFileSync('docs/configuration.md', 'utf8');
    const source = readFileSync('src/config.ts', 'utf8');
    const inCode = [...new Set(source.match(/VIDMILL_[A-Z0-9_]+/g))];
    for (const name of inCode) assert.match(doc, new RegExp(`\`${name}\``), `${name} is not documented`);
  });

  it('VIDMILL_JOB_LEASE_SECONDS: 30 s by default, heartbeat a third of it; 3..3600 accepted, anything else refused', () => {
    const lease = (env: Record<string, string>) => {
      const { leaseMs, heartbeatMs } = loadConfig(env).jobs;
      return { leaseMs, heartbeatMs };
    };
    assert.deepEqual(lease({}), { leaseMs: 30_000, heartbeatMs: 10_000 });
    assert.deepEqual(lease({ VIDMILL_JOB_LEASE_SECONDS: '3' }), { leaseMs: 3_000, heartbeatMs: 1_000 });
    assert.deepEqual(lease({ VIDMILL_JOB_LEASE_SECONDS: '3600' }), { leaseMs: 3_600_000, heartbeatMs: 1_200_000 });
    assert.deepEqual(lease({ VIDMILL_JOB_LEASE_SECONDS: '10' }), { leaseMs: 10_000, heartbeatMs: 3_333 });
    for (const bad of ['2', '3601', '0', '-5', '7.5', 'soon']) {
      assert.throws(() => loadConfig({ VIDMILL_JOB_LEASE_SECONDS: bad }), /VIDMILL_JOB_LEASE_SECONDS/, bad);
    }
  });

  it('VIDMILL_WORKER_CONCURRENCY (2, 1..64) and VIDMILL_WORKER_POLL_MS (2000, 50..60000)', () => {
    assert.equal(loadConfig({}).jobs.concurrency, 2);
    assert.equal(loadConfig({}).jobs.pollMs, 2000);
    assert.equal(loadConfig({ VIDMILL_WORKER_CONCURRENCY: '1', VIDMILL_WORKER_POLL_MS: '250' }).jobs.concurrency, 1);
    assert.equal(loadConfig({ VIDMILL_WORKER_POLL_MS: '250' }).jobs.pollMs, 250);
    for (const bad of ['0', '65', 'x']) assert.throws(() => loadConfig({ VIDMILL_WORKER_CONCURRENCY: bad }), /VIDMILL_WORKER_CONCURRENCY/, bad);
    for (const bad of ['49', '60001']) assert.throws(() => loadConfig({ VIDMILL_WORKER_POLL_MS: bad }), /VIDMILL_WORKER_POLL_MS/, bad);
  });

  it('processing: VIDMILL_SEGMENT_SECONDS (60, 0 = never split), VIDMILL_FFMPEG_THREADS (0 = ffmpeg chooses), VIDMILL_ENCODER_PRESET (medium)', () => {
    assert.deepEqual(loadConfig({}).processing, { segmentSeconds: 60, threads: 0, encoderPreset: 'medium' });
    assert.deepEqual(loadConfig({ VIDMILL_SEGMENT_SECONDS: '0', VIDMILL_FFMPEG_THREADS: '1', VIDMILL_ENCODER_PRESET: 'veryfast' }).processing, {
      segmentSeconds: 0,
      threads: 1,
      encoderPreset: 'veryfast',
    });
    assert.throws(() => loadConfig({ VIDMILL_SEGMENT_SECONDS: '-1' }), /VIDMILL_SEGMENT_SECONDS/);
    assert.throws(() => loadConfig({ VIDMILL_ENCODER_PRESET: 'turbo' }), /VIDMILL_ENCODER_PRESET/);
  });
});
