/**
 * GET /metrics (src/http/metrics-endpoint.ts, src/shared/metrics.ts): the Prometheus text format,
 * the optional bearer token, the port of its own (and a worker process serving it), and that
 * each area's metrics move when its work happens. The registry is one per process, shared by
 * every harness of this test process, so counters are compared before and after (deltas).
 */
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import express from 'express';
import pino from 'pino';
import supertest from 'supertest';
import { ConfigError, loadConfig } from '../../src/config';
import { DeliveryWorker, recordEvent } from '../../src/features/webhooks';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { findVideo } from '../../src/features/videos';
import { metricsEndpoint, startMetricsServer } from '../../src/http/metrics-endpoint';
import { PermanentJobError, Worker } from '../../src/jobs/worker';
import { TEST_DIALECT } from '../helpers/database';
import { serverArgs } from '../helpers/entry-points';
import { createHarness, expectError, Harness, TestUser } from '../helpers/harness';

/** A header sent once per value (Node writes an array as repeated header lines); supertest types only Cookie so. */
const twice = (values: string[]) => values as unknown as string;
import { fixtureBytes } from '../helpers/media-fixtures';
import { Exposition, parseExposition } from '../helpers/prometheus';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { waitFor } from '../helpers/scenario';
import { startReceiver } from '../helpers/webhook-receiver';
import { scaled } from '../helpers/timeouts';

const silent = pino({ level: 'silent' });
const TOKEN = 'metrics-token-0123456789abcdef';

const FAMILIES: [string, string][] = [
  ['vidmill_http_requests_total', 'counter'],
  ['vidmill_http_request_duration_seconds', 'histogram'],
  ['vidmill_rate_limit_rejections_total', 'counter'],
  ['vidmill_jobs', 'gauge'],
  ['vidmill_jobs_oldest_queued_age_seconds', 'gauge'],
  ['vidmill_job_duration_seconds', 'histogram'],
  ['vidmill_job_attempts', 'histogram'],
  ['vidmill_job_lease_takeovers_total', 'counter'],
  ['vidmill_webhook_deliveries_total', 'counter'],
  ['vidmill_webhook_delivery_attempts', 'histogram'],
  ['vidmill_webhook_delivery_latency_seconds', 'histogram'],
  ['vidmill_webhook_listener_deliveries_total', 'counter'],
  ['vidmill_bytes_copied_total', 'counter'],
  ['vidmill_ffmpeg_seconds_total', 'counter'],
  ['vidmill_billing_charges_total', 'counter'],
  ['vidmill_billing_charged_usd_total', 'counter'],
  ['vidmill_billing_refunds_total', 'counter'],
  ['vidmill_billing_refunded_usd_total', 'counter'],
  ['vidmill_db_pool_connections', 'gauge'],
  ['process_cpu_seconds_total', 'counter'],
  ['process_resident_memory_bytes', 'gauge'],
  ['nodejs_eventloop_lag_seconds', 'gauge'],
];

async function scrape(agent: supertest.Agent, headers: Record<string, string> = {}): Promise<Exposition> {
  const res = await agent.get('/metrics').set(headers);
  assert.equal(res.status, 200, res.text);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return parseExposition(res.text);
}

/** The app's /metrics without the harness (own cache period), as the process's endpoint reads this harness's database. */
function endpointOf(h: Harness, cacheMs: number): supertest.Agent {
  const app = express();
  app.get('/metrics', metricsEndpoint({ db: h.services.db, clock: h.clock, log: silent, cacheMs }));
  return supertest.agent(app);
}

describe(`Metrics (${TEST_DIALECT})`, function () {
  this.timeout(scaled(120_000));
  let h: Harness;
  let u: TestUser;

  afterEach(async () => {
    await h?.close();
    h = undefined as unknown as Harness; // closed: the next test makes its own
  });

  describe('the endpoint', () => {
    beforeEach(async () => {
      h = await createHarness();
      u = await h.user();
    });

    it('GET /metrics is the Prometheus text format with every Vidmill family and the process metrics; no API key, no rate limit', async () => {
      const m = await scrape(h.request);
      for (const [name, type] of FAMILIES) assert.equal(m.types.get(name), type, `${name} is declared as a ${type}`);
      assert.ok(m.has('vidmill_db_pool_connections', { state: 'used' }) && m.has('vidmill_db_pool_connections', { state: 'free' }) && m.has('vidmill_db_pool_connections', { state: 'pending' }));
      assert.ok(m.value('process_cpu_seconds_total') > 0);
      const res = await h.request.get('/metrics');
      assert.equal(res.headers['x-ratelimit-limit'], undefined, 'not rate-limited');
      assert.ok(res.headers['x-request-id']);
    });

    it('vidmill_http_requests_total and the latency histogram count requests by operationId and status, also those answered before validation', async () => {
      const before = await scrape(h.request);
      assert.equal((await h.request.get('/api/v1/projects').set('X-API-Key', u.apiKey)).status, 200);
      expectError(await h.request.get('/api/v1/projects'), 401, 'MISSING_API_KEY');
      expectError(await h.request.get('/api/v1/no-such-thing').set('X-API-Key', u.apiKey), 404, 'NOT_FOUND');
      assert.equal((await h.request.get('/healthz')).status, 200);
      const after = await scrape(h.request);
      const delta = (name: string, labels: Record<string, string>) => after.value(name, labels) - before.value(name, labels);
      assert.equal(delta('vidmill_http_requests_total', { operation: 'getProjects', status: '200' }), 1);
      assert.equal(delta('vidmill_http_requests_total', { operation: 'getProjects', status: '401' }), 1, 'authentication answered before the validator; the operation is still named');
      assert.equal(delta('vidmill_http_requests_total', { operation: 'unmatched', status: '404' }), 1);
      assert.equal(delta('vidmill_http_requests_total', { operation: 'healthz', status: '200' }), 1);
      assert.equal(delta('vidmill_http_request_duration_seconds_count', { operation: 'getProjects', status: '200' }), 1);
      assert.ok(delta('vidmill_http_request_duration_seconds_sum', { operation: 'getProjects', status: '200' }) > 0);
      assert.equal(delta('vidmill_http_requests_total', { operation: 'metrics', status: '200' }), 1, 'the first scrape itself');
    });

    it('VIDMILL_METRICS_TOKEN: 401 with the Error body without a token or with a wrong one, 200 with it', async () => {
      await h.close();
      h = await createHarness({ metrics: { token: TOKEN, host: '127.0.0.1' } });
      const missing = await h.request.get('/metrics');
      expectError(missing, 401, 'UNAUTHORIZED');
      assert.match(String(missing.headers['www-authenticate']), /^Bearer /);
      expectError(await h.request.get('/metrics').set('Authorization', `Bearer ${TOKEN}x`), 401, 'INVALID_CREDENTIALS');
      expectError(await h.request.get('/metrics').set('Authorization', `Basic ${Buffer.from(`a:${TOKEN}`).toString('base64')}`), 401, 'INVALID_CREDENTIALS');
      // Two Authorization headers (Node would keep the first): 400 naming the header, even with the token first.
      const repeated = await h.request.get('/metrics').set('Authorization', twice([`Bearer ${TOKEN}`, 'Bearer other']));
      expectError(repeated, 400, 'VALIDATION_ERROR');
      assert.equal(repeated.body.validationErrors[0].field, 'headers.authorization');
      const m = await scrape(h.request, { Authorization: `Bearer ${TOKEN}` });
      assert.equal(m.types.get('vidmill_jobs'), 'gauge');
    });

    it('VIDMILL_METRICS_PORT: served by a server of its own (token included), and the API port answers 404 NOT_FOUND for /metrics', async () => {
      await h.close();
      h = await createHarness({ metrics: { port: 0, host: '127.0.0.1', token: TOKEN } });
      expectError(await h.request.get('/metrics'), 404, 'NOT_FOUND');
      expectError(await h.request.get('/metrics').set('Authorization', `Bearer ${TOKEN}`), 404, 'NOT_FOUND');
      const server: Server = await startMetricsServer({ db: h.services.db, clock: h.clock, log: silent, host: '127.0.0.1', port: 0, token: TOKEN });
      try {
        const own = supertest.agent(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
        expectError(await own.get('/metrics'), 401, 'UNAUTHORIZED');
        const m = await scrape(own, { Authorization: `Bearer ${TOKEN}` });
        assert.equal(m.types.get('vidmill_http_requests_total'), 'counter');
        expectError(await own.get('/api/v1/projects').set('Authorization', `Bearer ${TOKEN}`), 404, 'NOT_FOUND');
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('configuration: VIDMILL_METRICS_* are validated; the metrics address defaults to VIDMILL_HOST', () => {
      assert.deepEqual(loadConfig({ VIDMILL_HOST: '0.0.0.0' }).metrics, { token: undefined, port: undefined, host: '0.0.0.0' });
      assert.deepEqual(loadConfig({ VIDMILL_METRICS_PORT: '9464', VIDMILL_METRICS_HOST: '127.0.0.2', VIDMILL_METRICS_TOKEN: TOKEN }).metrics, { token: TOKEN, port: 9464, host: '127.0.0.2' });
      assert.throws(
        () => loadConfig({ VIDMILL_METRICS_TOKEN: 'short' }),
        (e: Error) => e instanceof ConfigError && /VIDMILL_METRICS_TOKEN/.test(e.message),
      );
      assert.throws(() => loadConfig({ VIDMILL_METRICS_TOKEN: 'has a space in it, sixteen+' }), ConfigError);
      assert.throws(
        () => loadConfig({ VIDMILL_PORT: '9000', VIDMILL_METRICS_PORT: '9000' }),
        (e: Error) => e instanceof ConfigError && /VIDMILL_METRICS_PORT/.test(e.message),
      );
      assert.throws(() => loadConfig({ VIDMILL_METRICS_PORT: '70000' }), ConfigError);
    });

    it('rate-limit rejections are counted by limit', async () => {
      await h.close();
      h = await createHarness({ rateLimitPerMinute: 1, signInRateLimit: { perAddressPerMinute: 1, perEmailPerMinute: 100 } });
      u = await h.user();
      const before = await scrape(h.request);
      assert.equal((await h.request.get('/api/v1/projects').set('X-API-Key', u.apiKey)).status, 200);
      expectError(await h.request.get('/api/v1/projects').set('X-API-Key', u.apiKey), 429, 'TOO_MANY_REQUESTS');
      // Sign-in budgets count failures: the right password is given back, a wrong one spends it.
      assert.equal((await h.request.get('/api/v1/api-keys').auth(u.email, u.password)).status, 200);
      expectError(await h.request.get('/api/v1/api-keys').auth(u.email, 'wrong'), 401, 'INVALID_CREDENTIALS');
      expectError(await h.request.get('/api/v1/api-keys').auth(u.email, u.password), 429, 'TOO_MANY_REQUESTS');
      const after = await scrape(h.request);
      assert.equal(after.value('vidmill_rate_limit_rejections_total', { limit: 'sign_in_address' }) - before.value('vidmill_rate_limit_rejections_total', { limit: 'sign_in_address' }), 1);
      assert.equal(after.value('vidmill_rate_limit_rejections_total', { limit: 'api_key' }) - before.value('vidmill_rate_limit_rejections_total', { limit: 'api_key' }), 1);
      assert.equal(
        after.value('vidmill_http_requests_total', { operation: 'getProjects', status: '429' }) - before.value('vidmill_http_requests_total', { operation: 'getProjects', status: '429' }),
        1,
      );
    });
  });

  it('a job run shows in the job metrics: queue depth and oldest wait read from the database (cached), then duration, attempts and a lease takeover', async () => {
    h = await createHarness();
    const kind = `metrics-test-${randomUUID().slice(0, 8)}`;
    const jobs = h.services.jobs;
    await jobs.enqueue(h.services.db, { kind, payload: { fail: false } });
    await jobs.enqueue(h.services.db, { kind, payload: { fail: true } });
    h.clock.advance(30_000);
    const cached = endpointOf(h, 60_000);
    let m = await scrape(cached);
    assert.equal(m.value('vidmill_jobs', { kind, state: 'queued' }), 2);
    assert.equal(m.value('vidmill_jobs_oldest_queued_age_seconds', { kind }), 30);
    const before = await scrape(h.request);

    const worker = new Worker(jobs, { workerId: 'metrics-test', log: silent, pollMs: 20 });
    worker.define<{ fail: boolean }>({
      kind,
      run: async ({ fail }) => {
        if (fail) throw new PermanentJobError('failing on purpose');
      },
    });
    worker.start();
    await waitFor('both jobs finished', async () => (await h.database.db('jobs').where({ kind }).whereIn('status', ['done', 'failed']).count({ n: '*' }))[0]!.n == 2);
    await worker.stop();

    m = await scrape(cached);
    assert.equal(m.value('vidmill_jobs', { kind, state: 'queued' }), 2, 'within the cache period the queue is not read again');
    m = await scrape(endpointOf(h, 0));
    assert.equal(m.has('vidmill_jobs', { kind, state: 'queued' }), false);
    assert.equal(m.value('vidmill_jobs_oldest_queued_age_seconds', { kind }), 0, 'none queued: 0');
    assert.ok(m.has('vidmill_jobs_oldest_queued_age_seconds', { kind }));
    assert.equal(m.value('vidmill_jobs', { kind, state: 'failed' }), 1);
    assert.equal(m.value('vidmill_job_duration_seconds_count', { kind, outcome: 'completed' }) - before.value('vidmill_job_duration_seconds_count', { kind, outcome: 'completed' }), 1);
    assert.equal(m.value('vidmill_job_duration_seconds_count', { kind, outcome: 'failed' }) - before.value('vidmill_job_duration_seconds_count', { kind, outcome: 'failed' }), 1);
    assert.equal(m.value('vidmill_job_attempts_count', { kind }) - before.value('vidmill_job_attempts_count', { kind }), 2);
    assert.equal(m.value('vidmill_job_attempts_sum', { kind }) - before.value('vidmill_job_attempts_sum', { kind }), 2, 'each on its first attempt');

    // A worker dies holding a job: the sweep of another takes it over.
    await jobs.enqueue(h.services.db, { kind, payload: { fail: false } });
    const lost = await jobs.claim('dead-worker', [kind], 1_000);
    assert.ok(lost);
    h.clock.advance(1_001);
    assert.deepEqual(await jobs.sweepExpiredLeases(), { requeued: 1, failed: 0, jobIds: [lost.id] });
    m = await scrape(endpointOf(h, 0));
    assert.equal(m.value('vidmill_job_lease_takeovers_total', { kind }), 1);
    assert.equal(m.value('vidmill_jobs', { kind, state: 'queued' }), 1);
  });

  it('a webhook delivery shows in the delivery metrics: delivered with its attempt and commit-to-delivery latency; a final failure', async () => {
    h = await createHarness({ allowPrivateUrls: true });
    u = await h.user();
    const verifier = {
      now: () => h.clock.now(),
      fetchKey: async (id: string) => (await h.request.get(`/api/v1/webhooks/public-keys/${id}`).set('X-API-Key', u.apiKey)).body.publicKey,
    };
    const receiver = await startReceiver(verifier);
    const worker = new DeliveryWorker({ db: h.services.db, clock: h.clock, signingKeys: h.services.signingKeys, policy: { allowPrivateUrls: true }, log: silent }, { random: () => 0.5 });
    try {
      const created = await h.request
        .post('/api/v1/webhooks')
        .set('X-API-Key', u.apiKey)
        .send({ name: 'Receiver', url: receiver.url, eventTypes: ['video_in.done'], active: true, maxTotalRetryDelayMinutes: 0 });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const emit = () => h.services.db.transaction((trx) => recordEvent(trx, { teamId: u.teamId, eventType: 'video_in.done', videoId: randomUUID(), occurredAt: h.clock.now() }));
      const before = await scrape(h.request);
      await emit();
      h.clock.advance(2_000);
      assert.equal(await worker.drain(), 1);
      let m = await scrape(h.request);
      const delta = (name: string, labels?: Record<string, string>) => m.value(name, labels) - before.value(name, labels);
      assert.equal(delta('vidmill_webhook_deliveries_total', { outcome: 'delivered' }), 1);
      assert.equal(delta('vidmill_webhook_delivery_attempts_count'), 1);
      assert.equal(delta('vidmill_webhook_delivery_attempts_sum'), 1);
      assert.equal(delta('vidmill_webhook_delivery_latency_seconds_count'), 1);
      assert.equal(delta('vidmill_webhook_delivery_latency_seconds_sum'), 2, 'committed at t, answered 2 s later on the clock');

      receiver.answer(() => ({ status: 500 }));
      await emit();
      assert.equal(await worker.drain(), 1);
      m = await scrape(h.request);
      assert.equal(delta('vidmill_webhook_deliveries_total', { outcome: 'failed' }), 1, 'no retry window: failed for good');
      assert.equal(delta('vidmill_webhook_delivery_attempts_count'), 2);
      assert.equal(delta('vidmill_webhook_delivery_latency_seconds_count'), 1, 'only deliveries answered 2xx have a latency');

      // A webhook's send budget (rateLimitPerSecond): an attempt without a permit in time is a rejection, retried later.
      receiver.answer(() => ({ status: 200 }));
      const limited = await h.request
        .post('/api/v1/webhooks')
        .set('X-API-Key', u.apiKey)
        .send({ name: 'Limited', url: receiver.url, eventTypes: ['video.deleted'], active: true, rateLimitPerSecond: 1 });
      assert.equal(limited.status, 201, JSON.stringify(limited.body));
      const hurried = new DeliveryWorker(
        { db: h.services.db, clock: h.clock, signingKeys: h.services.signingKeys, policy: { allowPrivateUrls: true }, log: silent },
        { random: () => 0.5, permitWaitMs: 50 },
      );
      try {
        for (let i = 0; i < 2; i++) await h.services.db.transaction((trx) => recordEvent(trx, { teamId: u.teamId, eventType: 'video.deleted', videoId: randomUUID(), occurredAt: h.clock.now() }));
        assert.equal(await hurried.runOnce(2), 2);
      } finally {
        await hurried.stop();
      }
      m = await scrape(h.request);
      assert.equal(delta('vidmill_rate_limit_rejections_total', { limit: 'webhook' }), 1);
      assert.equal(delta('vidmill_webhook_deliveries_total', { outcome: 'retry' }), 1);
      assert.equal(delta('vidmill_webhook_deliveries_total', { outcome: 'delivered' }), 2);
    } finally {
      await worker.stop();
      await receiver.close();
    }
  });

  describe('billing, copies and ffmpeg', () => {
    let server: RangeServer;
    before(async () => {
      server = await startRangeServer();
    });
    after(() => server.close());

    it('an accepted appraisal moves the charge counters (once committed); video in counts bytes in and ingestion ffmpeg seconds', async () => {
      h = await createHarness({ allowPrivateUrls: true, extraCa: [server.ca] });
      await h.services.configurations.ensureBuiltIns();
      u = await h.user();
      await setFreeClipEnabled(h.database.db, u.teamId, false);
      const worker = h.startWorker({ concurrency: 2 });
      const data = fixtureBytes({ seconds: 2, audio: false });
      server.serve('/media/metrics.mp4', data);
      const before = await scrape(h.request);
      const started = await h.request
        .post('/api/v1/videos/in/https')
        .set('X-API-Key', u.apiKey)
        .send({ name: 'Metrics source', url: `${server.origin}/media/metrics.mp4` });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const source = started.body.videoId as string;
      const ingestion = await waitFor(
        'ingestion of the source',
        async () => {
          const s = (await findVideo(h.database.db, source))?.ingestion;
          return s && ['DONE', 'FAILED'].includes(s.status) ? s : undefined;
        },
        { timeoutMs: 90_000 },
      );
      assert.equal(ingestion.status, 'DONE', JSON.stringify(ingestion.error));
      // The processing itself is not needed here: only the charge made on accepting.
      await worker.stop();
      let m = await scrape(h.request);
      const delta = (name: string, labels?: Record<string, string>) => m.value(name, labels) - before.value(name, labels);
      assert.equal(delta('vidmill_bytes_copied_total', { direction: 'in' }), data.length);
      assert.ok(delta('vidmill_ffmpeg_seconds_total', { stage: 'video.ingest' }) > 0, 'ffprobe/ffmpeg of the ingestion counted under its job kind');

      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const appraisal = await h.request
        .post(`/api/v1/videos/${source}/processing/appraisals/create`)
        .set('X-API-Key', u.apiKey)
        .send({ container: 'MP4', encodingConfiguration: { codec: 'H264' } });
      assert.equal(appraisal.status, 201, JSON.stringify(appraisal.body));
      const cost = appraisal.body.video.processingJobAppraisal.cost.totalProcessingCostUsd as number;
      assert.ok(cost > 0);
      const accepted = await h.request.post(`/api/v1/videos/${source}/processing/appraisals/${appraisal.body.appraisalId}/accept`).set('X-API-Key', u.apiKey);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      expectError(await h.request.post(`/api/v1/videos/${source}/processing/appraisals/${appraisal.body.appraisalId}/accept`).set('X-API-Key', u.apiKey), 409, 'APPRAISAL_ALREADY_ACCEPTED');
      m = await scrape(h.request);
      assert.equal(delta('vidmill_billing_charges_total'), 1);
      assert.ok(Math.abs(delta('vidmill_billing_charged_usd_total') - cost) < 1e-9, `${delta('vidmill_billing_charged_usd_total')} USD charged, the appraisal said ${cost}`);

      // A charge whose transaction rolls back is not counted; a refund is counted once.
      const products = [{ productName: 'H.264 / AVC', category: 'ENCODER' as const, amount: 100 }];
      await assert.rejects(
        h.services.db.transaction(async (trx) => {
          await h.services.ledger.within(trx).charge(u.teamId, { jobId: 'rolled-back', products });
          throw new Error('roll back');
        }),
        /roll back/,
      );
      await h.services.ledger.refund(u.teamId, accepted.body.videoId, 'PROCESSING_FAILED');
      await h.services.ledger.refund(u.teamId, accepted.body.videoId, 'PROCESSING_FAILED');
      m = await scrape(h.request);
      assert.equal(delta('vidmill_billing_charges_total'), 1, 'the rolled-back charge is not counted');
      assert.equal(delta('vidmill_billing_refunds_total'), 1);
      assert.ok(Math.abs(delta('vidmill_billing_refunded_usd_total') - cost) < 1e-9);
    });
  });

  it('a worker process (VIDMILL_ROLE=worker) serves its own metrics on VIDMILL_METRICS_PORT', async function () {
    this.timeout(scaled(60_000));
    const dataDir = mkdtempSync(path.join(tmpdir(), 'vidmill-metrics-worker-'));
    const port = await new Promise<number>((resolve) => {
      const s = express().listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VIDMILL_')));
    const child = spawn(process.execPath, serverArgs(), {
      env: { ...env, VIDMILL_ROLE: 'worker', VIDMILL_DATA_DIR: dataDir, VIDMILL_METRICS_PORT: String(port), VIDMILL_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    try {
      const agent = supertest.agent(`http://127.0.0.1:${port}`);
      const m = await waitFor(
        'the worker to serve /metrics',
        async () => {
          if (child.exitCode !== null) throw new Error(`the worker exited with ${child.exitCode}: ${stderr}`);
          try {
            return await scrape(agent);
          } catch {
            return undefined;
          }
        },
        { timeoutMs: 45_000, intervalMs: 200 },
      );
      assert.equal(m.types.get('vidmill_job_duration_seconds'), 'histogram');
      assert.ok(m.has('vidmill_db_pool_connections', { state: 'used' }));
      expectError(await agent.get('/healthz'), 404, 'NOT_FOUND');
    } finally {
      child.kill('SIGKILL');
      await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve)));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
