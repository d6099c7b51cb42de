/**
 * Builds the whole app without listening, on a database of its own and a manual clock, with
 * response validation strict. Helpers create users with teams and API keys through the services.
 * Every response of the app is checked against the contract's declared statuses and required
 * headers (contract-conformance.ts): a request through `request` that breaks it fails where it
 * is awaited; any other (a browser or a second client on `app`) fails the test in the root
 * `afterEach` below, or `close()`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { ClientRequest, Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { strict as assert } from 'node:assert';
import express, { type Express } from 'express';
import pino, { type Logger } from 'pino';
import supertest from 'supertest';
import { loadConfig, type Config } from '../../src/config';
import { createApp, createServices, jobDefinitions, loadContract, type Services } from '../../src/composition';
import { answerClientErrors } from '../../src/http/client-errors';
import { Worker, type WorkerOptions } from '../../src/jobs/worker';
import type { BlobStore } from '../../src/storage/blob-store';
import { LocalDiskStore } from '../../src/storage/local-disk-store';
import { ManualClock } from '../../src/shared/clock';
import { openDatabase } from '../../src/db/database';
import { conformanceCheck, takeViolations } from './contract-conformance';
import { etaError, EtaRun, onEtaRun } from '../../src/shared/progress-eta';
import { createTestDatabase, TestDatabase } from './database';

export interface TestUser {
  userId: string;
  teamId: string;
  email: string;
  password: string;
  apiKey: string;
  apiKeyId: string;
}

export interface Harness {
  app: Express;
  services: Services;
  clock: ManualClock;
  database: TestDatabase;
  config: Config;
  request: supertest.Agent;
  /**
   * The app on a port of its own, served as main.ts serves it (started on the first call, closed
   * by close()), for requests
   * that need one server for their whole life, e.g. `withoutBodyFraming`; `request` starts a
   * server per request.
   */
  listen(): Promise<supertest.Agent>;
  /** A user with an owner team (and Default Project) and one active API key. */
  user(opts?: { teamName?: string; billingType?: 'WALLET' | 'CLOUD_MARKETPLACE' }): Promise<TestUser>;
  /** Directory of this harness's local-disk platform storage (removed by close()). */
  blobDir: string;
  /**
   * Starts a worker with every job kind of the app (stopped by close()). Jobs enqueued through
   * `services.jobs` wake it at once.
   */
  startWorker(opts?: Partial<WorkerOptions>): Worker;
  /**
   * A second API process on this harness's database: its own database connection(s), services
   * and app, with the same clock, configuration, master key and platform storage (closed by
   * close()). Anything coordinated through the database is shared; anything in process memory
   * (the SQLite rate limiter, caches) is not.
   */
  anotherProcess(): { app: Express; services: Services; request: supertest.Agent };
  close(): Promise<void>;
}

/**
 * `opts.logger` replaces the silent logger, e.g. to capture what the app logs; `opts.blobs`
 * replaces the local-disk platform storage (e.g. an S3BlobStore on the local S3 server).
 */
export async function createHarness(overrides: Partial<Config> = {}, opts: { logger?: Logger; blobs?: BlobStore } = {}): Promise<Harness> {
  const database = await createTestDatabase();
  const clock = new ManualClock(new Date());
  const blobDir = mkdtempSync(path.join(tmpdir(), 'vidmill-blobs-'));
  const workDir = path.join(blobDir, '.work');
  const defaults = loadConfig({});
  const config: Config = {
    ...defaults,
    // x264/x265 `veryfast` instead of the installation default `medium`: the same GOP structure
    // (B-frames, references), a third of the CPU. What the preset changes in a file is tested
    // where it is the subject (the planner, the seam measurements, the corpus), not in every scenario.
    processing: { ...defaults.processing, encoderPreset: 'veryfast' },
    database: database.config,
    strictResponses: true,
    workDir,
    // Tests sign in far more often than people do, all from one address; the sign-in limits
    // have their own tests (test/scenarios/sign-in-rate-limit.test.ts), which override this.
    signInRateLimit: { perAddressPerMinute: 1_000_000, perEmailPerMinute: 1_000_000 },
    // Direct uploads wait next to this harness's storage (removed with it).
    uploads: { expiryMs: 24 * 3600_000, directory: path.join(blobDir, '.tus') },
    ...overrides,
  };
  const masterKey = randomBytes(32);
  const services = createServices({ db: database.db, clock, masterKey, blobs: opts.blobs ?? new LocalDiskStore(blobDir), config });
  const logger = opts.logger ?? pino({ level: process.env.VIDMILL_TEST_LOG ?? 'silent' });
  const app = express();
  app.disable('x-powered-by');
  app.use(conformanceCheck(loadContract()), createApp(services, { logger, config }));
  const workers: Worker[] = [];
  const otherProcesses: Services[] = [];
  let listening: Promise<{ server: Server; agent: supertest.Agent }> | undefined;
  return {
    app,
    services,
    clock,
    database,
    config,
    blobDir,
    request: conformingRequests(supertest(app)),
    anotherProcess() {
      const other = createServices({ db: openDatabase(database.config), clock, masterKey, blobs: services.blobs, config });
      otherProcesses.push(other);
      const otherApp = createApp(other, { logger, config });
      return { app: otherApp, services: other, request: supertest(otherApp) };
    },
    async listen() {
      listening ??= new Promise((resolve, reject) => {
        const server = answerClientErrors(app.listen(0, '127.0.0.1', () => resolve({ server, agent: supertest(server) })));
        server.once('error', reject);
      });
      return (await listening).agent;
    },
    startWorker(wopts = {}) {
      const worker = new Worker(services.jobs, { workerId: `test-worker-${workers.length + 1}`, log: logger, pollMs: 100, scratchRoot: config.workDir, ...wopts });
      for (const job of jobDefinitions(services)) worker.define(job);
      services.jobs.onEnqueue(() => worker.notify());
      workers.push(worker);
      worker.start();
      return worker;
    },
    async user(opts = {}) {
      const email = `user-${randomBytes(4).toString('hex')}@example.com`;
      const password = `pw-${randomBytes(8).toString('hex')}`;
      const { user, team } = await services.accounts.createUserWithTeam({
        email,
        password,
        name: 'Test User',
        teamName: opts.teamName ?? 'Test team',
        billingType: opts.billingType,
      });
      const { key, secret } = await services.apiKeys.create(user.id, { name: 'test key', active: true });
      return { userId: user.id, teamId: team.id, email, password, apiKey: secret, apiKeyId: key.id };
    },
    async close() {
      // As main.ts's shutdown: waiting long polls of webhook listeners answer at once.
      for (const s of [services, ...otherProcesses]) s.webhookListeners.stopWaiting();
      await Promise.all(workers.map((w) => w.stop({ graceMs: 5_000 })));
      await Promise.all(otherProcesses.map((o) => o.db.destroy()));
      if (listening) {
        const { server } = await listening;
        await new Promise((resolve) => server.close(resolve));
      }
      await services.blobs.close();
      await database.drop();
      rmSync(blobDir, { recursive: true, force: true });
      assertNoViolations(takeViolations());
    },
  };
}

function assertNoViolations(violations: string[]): void {
  if (violations.length) assert.fail(`responses that break the contract:\n  ${violations.join('\n  ')}`);
}

/** `agent` whose every request also asserts that its response keeps to the contract. */
function conformingRequests(agent: supertest.Agent): supertest.Agent {
  const conforms = (res: supertest.Response) => assertNoViolations(takeViolations(res.headers['x-request-id']));
  const methods = Object.entries(agent).filter(([, fn]) => typeof fn === 'function');
  return Object.fromEntries(methods.map(([name, fn]) => [name, (...args: unknown[]) => fn(...args).expect(conforms)])) as unknown as supertest.Agent;
}

// Root hook: responses not awaited through `request` (a browser, a second client on `app`).
afterEach(() => assertNoViolations(takeViolations()));

const errorSchema = loadContract().components.schemas.Error;

/** Asserts an error response: status, `errorCode`, and the `Error` body shape of the contract. */
export function expectError(res: supertest.Response, status: number, errorCode: string): void {
  assert.equal(res.status, status, `expected ${status} ${errorCode}, got ${res.status} ${JSON.stringify(res.body)}`);
  assert.match(String(res.headers['content-type']), /application\/json/);
  for (const field of errorSchema.required) assert.ok(field in res.body, `Error body lacks ${field}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.errorCode, errorCode, `errorCode: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.statusCode, status);
  assert.equal(res.body.requestId, res.headers['x-request-id']);
  assert.ok(!Number.isNaN(Date.parse(res.body.timestamp)));
}

/**
 * `url` (absolute or a path) with the first character of its `signature` query value changed to
 * another one: always a different signature (replacing it with a fixed character is not, once
 * in 64 random keys).
 */
export function withTamperedSignature(url: string): string {
  const parsed = new URL(url, 'http://link.invalid');
  const signature = parsed.searchParams.get('signature');
  assert.ok(signature, `no signature in ${url}`);
  parsed.searchParams.set('signature', (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1));
  return url.startsWith('/') ? parsed.pathname + parsed.search : parsed.href;
}

/**
 * Sends `test` with neither Content-Length nor Transfer-Encoding (a request without a body, as
 * some clients send a POST or PATCH); Node would add `Content-Length: 0`. Only on an agent of
 * `listen()`, and after the test's headers are set.
 */
export function withoutBodyFraming(test: supertest.Test): supertest.Test {
  const req = (test as unknown as { request(): ClientRequest }).request();
  req.removeHeader('Content-Length');
  req.removeHeader('Transfer-Encoding');
  return test;
}

/** Links a cloud-marketplace agreement (fixed test product and accounts) to a team. */
export function linkTestAgreement(h: Harness, teamId: string, agreementId: string) {
  return h.services.billing.linkAgreement({
    teamId,
    agreementId,
    licenseId: `lic-${agreementId}`,
    offerId: 'offer-1',
    productId: 'prod-1',
    productName: 'Vidmill',
    buyerAccountId: '111122223333',
    sellerAccountId: '444455556666',
  });
}

export const basic = (email: string, password: string) => 'Basic ' + Buffer.from(`${email}:${password}`).toString('base64');

/** A webhook of the user's team for these event types (the harness sends no deliveries; their frozen payloads are rows). */
export async function subscribeWebhook(h: Harness, user: TestUser, eventTypes: string[]): Promise<string> {
  const res = await h.request.post('/api/v1/webhooks').set('X-API-Key', user.apiKey).send({ name: 'Failures', url: 'https://1.1.1.1/vidmill-hook', eventTypes, active: true });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

/** The payloads of the webhook deliveries about a video, oldest first, exactly as they will be POSTed. */
export async function deliveryPayloads(h: Harness, videoId: string): Promise<any[]> {
  const rows = await h.database
    .db('webhook_deliveries')
    .orderBy([{ column: 'occurred_at' }, { column: 'created_at' }])
    .select('payload');
  return rows.map((r: { payload: string }) => JSON.parse(r.payload)).filter((p: any) => p.data?.videoId === videoId);
}

/**
 * Asserts a stage's `error` (StageError): the code, a message of its own, and no internal detail
 * (no absolute path such as /tmp/... or /work/..., no tool output).
 */
export function assertStageError(error: { errorCode?: string; message?: string } | undefined, errorCode: string): void {
  assert.ok(error, `expected an error ${errorCode}`);
  assert.equal(error.errorCode, errorCode, JSON.stringify(error));
  assert.ok(typeof error.message === 'string' && error.message.length > 10, JSON.stringify(error));
  assert.doesNotMatch(error.message, /\/tmp|\/work|(^|[\s'"(=:])\/[\w.-]+\/|stderr|ffmpeg exited|ffprobe cannot|Error:/, `internal detail in ${JSON.stringify(error.message)}`);
}

/**
 * Collects every run of progress estimates that finishes while it listens (src/shared/progress-eta.ts),
 * and says how good they were: the median absolute error after 10 % progress, as a share of the
 * time that was actually left.
 */
export function recordEtaRuns(labels?: string[]): { runs: EtaRun[]; stop(): ReturnType<typeof etaError> } {
  const runs: EtaRun[] = [];
  const off = onEtaRun((run) => {
    if (!labels || labels.includes(run.label)) runs.push(run);
  });
  return {
    runs,
    stop() {
      off();
      return etaError(runs);
    },
  };
}

/**
 * Prints the estimates' quality (median error after 10 % progress, as a share of the time left)
 * and fails only on a wiring mistake no machine load explains: a median error of ten times the
 * time left or more (a unit slip, seconds for milliseconds, gives a thousand times). How good the
 * estimates are is a timing figure, tested where time is controlled: the estimator on a synthetic
 * job with an injected clock (test/unit/progress-eta.test.ts, under 25 %), and `npm run bench --
 * processing` on a machine to itself (under 25 %). Inside the whole suite other files share the
 * cores and move every estimate: a full run measured 28 % where the same files alone gave 12 to
 * 17 %, and a CI run with ten files on 2 cores 56.8 % (it failed a bound of 50 % then).
 */
export function assertEtaQuality(e: ReturnType<typeof etaError>): void {
  const pct = (x?: number) => (x === undefined ? '-' : `${(x * 100).toFixed(1)} %`);
  console.log(`      time left: ${e.reports} estimates after 10 % progress, median error ${pct(e.median)} (90th percentile ${pct(e.p90)}) of the time actually left`);
  if (e.reports > 0) assert.ok(e.median! < 10, `median ETA error ${pct(e.median)}: ten times the time left, a wiring mistake (a wrong unit, a wrong fraction)`);
}
