/**
 * Process entry: configuration -> database -> migrations -> services -> HTTP and/or workers
 * (VIDMILL_ROLE). SIGINT/SIGTERM stop in order: stop accepting, drain loops, close the pool;
 * a second signal forces exit.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { hostname } from 'node:os';
import { ConfigError, loadConfig, startupWarnings } from './config';
import { createApp, createPeriodicTasks, createServices, jobDefinitions } from './composition';
import { isPostgres, migrateToLatest, openDatabase } from './db/database';
import { JobNotifications, listenForJobs } from './jobs/job-notifications';
import { answerClientErrors } from './http/client-errors';
import { startMetricsServer } from './http/metrics-endpoint';
import { PeriodicTask } from './jobs/periodic-task';
import { Worker } from './jobs/worker';
import { loadMasterKey } from './security/secret-box';
import { systemClock } from './shared/clock';
import { createBlobStore } from './storage/create-blob-store';
import { createLogger, flushLogger } from './shared/logger';
import { DeliveryWorker, deliveryNotices, jobNotices } from './features/webhooks';
import { firstStartNotice } from './features/accounts';

/** The logger once created, so a fatal error can flush it before exiting. */
let startedLog: Logger | undefined;

async function main(): Promise<void> {
  // Everything the service writes (the data folder, the SQLite file, master.key, blobs, uploads,
  // scratch files) is for the service user only: folders 0700, files 0600 (docs/security.md).
  process.umask(0o077);
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\nSee docs/configuration.md.\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  startedLog = log;
  for (const warning of startupWarnings(config)) log.warn(warning);
  const db = openDatabase(config.database);
  await migrateToLatest(db);
  const masterKey = loadMasterKey({ configured: config.masterKey, dataDir: config.dataDir, embedded: config.database.client === 'sqlite' });
  const blobs = createBlobStore(config.storage);
  const services = createServices({ db, clock: systemClock, masterKey, blobs, config });
  // ffmpeg and ffprobe are found and their versions read (for /readyz and media work) while the rest starts.
  void services.mediaBinaries.get().catch(() => undefined);
  const owner = await services.accounts.bootstrap(config.bootstrap);
  if (owner) {
    const generated = owner.generatedPassword !== undefined;
    log.info(
      { userId: owner.userId, teamId: owner.teamId, email: owner.email, passwordGenerated: generated },
      generated ? 'created the owner user, team and Default Project; the generated password is shown once on stdout, not logged' : 'created the owner user, team and Default Project',
    );
    if (owner.generatedPassword) {
      // After every log line so far, not among them; straight to stdout, never through the logger.
      flushLogger(log);
      process.stdout.write(firstStartNotice(owner.email, owner.generatedPassword));
    }
  }
  // The webhook signing key exists from the first start (rotation is a periodic task below).
  await services.signingKeys.current();
  // The built-in processing configurations exist from the first start (updated on upgrade).
  await services.configurations.ensureBuiltIns();

  const tasks: PeriodicTask[] = [];
  const jobs = services.jobs;
  let worker: Worker | undefined;
  let deliveries: DeliveryWorker | undefined;
  let notifications: JobNotifications | undefined;
  if (config.role !== 'api') {
    worker = new Worker(jobs, {
      workerId: `${hostname()}:${process.pid}`,
      log,
      leaseMs: config.jobs.leaseMs,
      heartbeatMs: config.jobs.heartbeatMs,
      concurrency: config.jobs.concurrency,
      pollMs: config.jobs.pollMs,
      scratchRoot: config.workDir,
    });
    for (const job of jobDefinitions(services)) worker.define(job);
    jobs.onEnqueue(() => worker?.notify());
    // Jobs enqueued by other processes (API processes): woken at their commit on PostgreSQL.
    // Webhook deliveries recorded by other processes wake the delivery loop the same way.
    if (isPostgres(db)) notifications = listenForJobs(db, log);
    const heard = notifications?.subscribe;
    if (heard) worker.wakeOn(jobNotices(heard));
    worker.start();
    deliveries = new DeliveryWorker({ db, clock: services.clock, signingKeys: services.signingKeys, policy: services.outbound, log }, config.webhookDelivery);
    if (heard) deliveries.wakeOn(deliveryNotices(heard));
    deliveries.start();
    // Each feature's periodic tasks and the HTTP layer's purges, listed by the composition root.
    for (const definition of createPeriodicTasks(services)) tasks.push(new PeriodicTask(definition, { log }));
    tasks.forEach((t) => t.start());
  }

  let server: Server | undefined;
  if (config.role !== 'worker') {
    const app = createApp(services, { logger: log, config });
    server = await new Promise<Server>((resolve, reject) => {
      const s = answerClientErrors(app.listen(config.port, config.host, () => resolve(s)));
      s.on('error', reject);
    });
    // The port actually bound (VIDMILL_PORT=0 picks a free one).
    const { port } = server.address() as AddressInfo;
    log.info({ url: `http://${config.host}:${port}`, docs: `http://${config.host}:${port}/docs`, role: config.role, database: config.database.client }, 'Vidmill is listening');
  } else {
    log.info({ role: config.role, database: config.database.client }, 'Vidmill worker started');
  }

  // VIDMILL_METRICS_PORT: /metrics on a server of its own (then not on the API port), in every role.
  const metricsServer = config.metrics.port === undefined ? undefined : await startMetricsServer({ ...config.metrics, port: config.metrics.port, db, clock: services.clock, log });
  if (metricsServer) log.info({ url: `http://${config.metrics.host}:${(metricsServer.address() as AddressInfo).port}/metrics` }, 'metrics are served');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      flushLogger(log);
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    // Long polls of webhook listeners answer now instead of holding the close for up to 25 s.
    services.webhookListeners.stopWaiting();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    metricsServer?.close();
    await Promise.all([worker?.stop({ graceMs: 30_000 }), deliveries?.stop(), ...tasks.map((t) => t.stop())]);
    await notifications?.close();
    await blobs.close();
    await db.destroy();
    log.info('stopped');
    flushLogger(log);
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((err) => {
  if (startedLog) flushLogger(startedLog);
  process.stderr.write(`Vidmill failed to start: ${(err as { stack?: string } | null | undefined)?.stack ?? String(err)}\n`);
  process.exit(1);
});
