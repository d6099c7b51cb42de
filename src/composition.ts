/**
 * Composition root of the services and the HTTP app. main.ts adds configuration, the process
 * lifecycle and the background loops; tests call these directly with their own database and clock.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config';
import { Db, isPostgres } from './db/database';
import { AccountsService } from './features/accounts';
import { accountsHandlers } from './features/accounts';
import { ApiKeysService } from './features/api-keys';
import { apiKeysHandlers } from './features/api-keys';
import { BillingService } from './features/billing';
import { billingHandlers } from './features/billing';
import { LedgerService } from './features/billing';
import { StorageBillingService } from './features/billing';
import { LocationsService } from './features/locations';
import { locationsHandlers } from './features/locations';
import { ProjectsService } from './features/projects';
import { projectsHandlers } from './features/projects';
import { videosJobs } from './features/videos';
import { VideosService } from './features/videos';
import { videosHandlers } from './features/videos';
import { testEventError } from './features/videos';
import { VideoInService } from './features/video-in';
import { videoInHandlers } from './features/video-in';
import { VideoInSources } from './features/video-in';
import { videoInJobs } from './features/video-in';
import { UploadEndpoint, videoInPeriodicTasks } from './features/video-in';
import { IngestionService, ingestionJobs } from './features/ingestion';
import { VideoAssetsService } from './features/videos';
import { ConfigurationsService } from './features/processing';
import type { BuiltInConfiguration as ServiceBuiltInConfiguration } from './features/processing';
import { configurationsHandlers } from './features/processing';
import { ProcessingService, processingJobs } from './features/processing';
import { processingHandlers } from './features/processing';
import { FfmpegProcessingEngine } from './features/processing';
import { BUILT_IN_CONFIGURATIONS } from './processing-planner';
import { ComparisonService, comparisonHandlers } from './features/comparison';
import { VideoOutService } from './features/video-out';
import { videoOutHandlers } from './features/video-out';
import { videoOutJobs } from './features/video-out';
import { SignedLinks } from './http/signed-links';
import { WebhooksService } from './features/webhooks';
import { webhooksHandlers } from './features/webhooks';
import { WebhookListenersService, webhookListenersHandlers } from './features/webhooks';
import { buildApp, type ContractDocument } from './http/app';
import type { AllHandlers } from './http/operations';
import { pendingHandlers } from './http/pending-operations';
import { IdempotencyKeys } from './http/idempotency';
import { createRateLimiter } from './http/rate-limit';
import { createSignInLimiters } from './http/sign-in-limit';
import type { OutboundPolicy } from './net/outbound-url';
import { SecretBox } from './security/secret-box';
import type { Clock } from './shared/clock';
import { SigningKeys } from './features/webhooks';
import type { BoundJob } from './jobs/job-definition';
import { JobQueue } from './jobs/job-queue';
import type { PeriodicTaskDefinition } from './jobs/periodic-task';
import { apiKeysPeriodicTasks } from './features/api-keys';
import { billingPeriodicTasks } from './features/billing';
import { processingPeriodicTasks } from './features/processing';
import { videoOutPeriodicTasks } from './features/video-out';
import { webhooksPeriodicTasks } from './features/webhooks';
import { sweepEndedRateWindows } from './http/rate-limit';
import { metricsEndpoint } from './http/metrics-endpoint';
import { MediaBinariesProvider } from './media';

import type { BlobStore } from './storage/blob-store';
import { createTusStorage } from './storage/tus-storage';

export const CONTRACT_FILE = path.resolve(__dirname, '..', 'generated', 'openapi.json');

let contractCache: unknown;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON.parse of the bundled OpenAPI document is untyped; tests walk it freely
export function loadContract(): any {
  return (contractCache ??= JSON.parse(readFileSync(CONTRACT_FILE, 'utf8')));
}

export interface Services {
  db: Db;
  clock: Clock;
  secretBox: SecretBox;
  /**
   * The outbound policy of every host a customer names (src/net/outbound-url.ts): it reads
   * `allowPrivateUrls` from the configuration each time it is asked, so every check and every
   * connection follows the setting as it is then, not as it was when a URL was stored.
   */
  outbound: OutboundPolicy;
  accounts: AccountsService;
  apiKeys: ApiKeysService;
  projects: ProjectsService;
  videos: VideosService;
  videoIn: VideoInService;
  /** ffmpeg and ffprobe, found once (src/media/binaries.ts) for ingestion, processing and the readiness check. */
  mediaBinaries: MediaBinariesProvider;
  ingestion: IngestionService;
  assets: VideoAssetsService;
  configurations: ConfigurationsService;
  processing: ProcessingService;
  /** Compare with: the comparison link and the page it points at. */
  comparison: ComparisonService;
  videoOut: VideoOutService;
  locations: LocationsService;
  ledger: LedgerService;
  /** Stored bytes over time, charged daily and at each period's close (STORAGE). */
  storageBilling: StorageBillingService;
  billing: BillingService;
  webhooks: WebhooksService;
  /** Webhook listeners (`vidmill webhooks listen`); `stopWaiting()` at shutdown answers the long polls. */
  webhookListeners: WebhookListenersService;
  signingKeys: SigningKeys;
  /** Platform storage (video files, thumbnails, frames, web videos). */
  blobs: BlobStore;
  /** The durable job queue; enqueue in the transaction of the domain write. */
  jobs: JobQueue;
  /** Stored first responses of POSTs with an `Idempotency-Key` (replays, 409/422). */
  idempotency: IdempotencyKeys;
}

export function createServices(deps: {
  db: Db;
  clock: Clock;
  masterKey: Buffer;
  blobs: BlobStore;
  config: Pick<Config, 'login' | 'priceList' | 'allowPrivateUrls' | 'webhookSigningKeys' | 'extraCa' | 'media' | 'workDir' | 'publicUrl' | 'idempotencyTtlMs' | 'uploads' | 'processing'>;
}): Services {
  const { db, clock } = deps;
  const jobs = new JobQueue(db, clock);
  const accounts = new AccountsService({ db, clock, options: { login: deps.config.login } });
  const secretBox = new SecretBox(deps.masterKey);
  const ledger = new LedgerService({ db, clock, priceList: deps.config.priceList });
  const storageBilling = new StorageBillingService({ db, clock, ledger });
  // A wallet period closes with its storage usage up to the month's end booked into it.
  ledger.onPeriodClosing(async (trx, teamId, boundary) => {
    await storageBilling.within(trx).billTeam(teamId, { upTo: boundary });
  });
  const outbound: OutboundPolicy = {
    get allowPrivateUrls() {
      return deps.config.allowPrivateUrls;
    },
  };
  const locations = new LocationsService({ db, clock, accounts, secretBox, policy: outbound });
  const videos = new VideosService({ db, clock, accounts, jobs });
  const projects = new ProjectsService({ db, clock, accounts, contents: videos });
  accounts.onTeamCreated((trx, team) => projects.within(trx).createDefaultProject(team.id));
  const sources = new VideoInSources({ policy: outbound, extraCa: deps.config.extraCa });
  const signedLinks = new SignedLinks(deps.masterKey, deps.config.publicUrl);
  const mediaBinaries = new MediaBinariesProvider({ ffmpegPath: deps.config.media.ffmpegPath, ffprobePath: deps.config.media.ffprobePath });
  const ingestion = new IngestionService({ db, clock, jobs, blobs: deps.blobs, binaries: mediaBinaries, media: deps.config.media });
  const engine = new FfmpegProcessingEngine(mediaBinaries, deps.config.processing);
  // The service keeps `options` as a plain record (ProcessingOptions has no index signature).
  const configurations = new ConfigurationsService({ db, clock, accounts, engine, builtIns: BUILT_IN_CONFIGURATIONS as unknown as readonly ServiceBuiltInConfiguration[] });
  const processing = new ProcessingService({
    db,
    clock,
    configurations,
    ledger,
    jobs,
    blobs: deps.blobs,
    ingestion,
    binaries: mediaBinaries,
    engine,
    timeoutMs: deps.config.media.timeoutMs,
  });
  ingestion.onFailure(processing.refundFailedIngestion);
  const videoOut = new VideoOutService({ db, clock, locations, jobs, secretBox, blobs: deps.blobs, links: signedLinks, ledger, policy: outbound });
  videos.onRemove((trx, ids) => videoOut.within(trx).onVideosRemoved(ids));
  const signingKeys = new SigningKeys({ db, clock, secretBox, policy: deps.config.webhookSigningKeys });
  const videoIn = new VideoInService({
    db,
    clock,
    accounts,
    locations,
    videos,
    jobs,
    secretBox,
    sources,
    projects,
    uploads: createTusStorage(deps.blobs, { directory: deps.config.uploads.directory }),
    links: signedLinks,
    uploadExpiryMs: deps.config.uploads.expiryMs,
  });
  // A video deleted while its direct upload runs: the upload's bytes are removed too.
  videos.onRemove((trx, ids) => videoIn.within(trx).onVideosRemoved(ids));
  return {
    db,
    clock,
    secretBox,
    outbound,
    accounts,
    apiKeys: new ApiKeysService({ db, clock }),
    projects,
    videos,
    videoIn,
    mediaBinaries,
    ingestion,
    configurations,
    processing,
    assets: new VideoAssetsService({ db, clock, blobs: deps.blobs, signer: signedLinks }),
    comparison: new ComparisonService({ db, clock, signer: signedLinks }),
    videoOut,
    locations,
    ledger,
    storageBilling,
    billing: new BillingService({ db, clock, accounts, ledger }),
    webhooks: new WebhooksService({ db, clock, accounts, policy: outbound, testEventError }),
    webhookListeners: new WebhookListenersService({ db, clock, accounts, signingKeys }),
    signingKeys,
    blobs: deps.blobs,
    jobs,
    idempotency: new IdempotencyKeys(db, clock, secretBox, { ttlMs: deps.config.idempotencyTtlMs }),
  };
}

/**
 * Every feature's jobs (videos' purge, video in, ingestion and the clip, processing, video out),
 * each declared with `defineJob` in the feature's `*.jobs.ts` and bound here to its dependencies:
 * the one list main.ts and the test harness `define` on their Worker.
 */
export function jobDefinitions(s: Services): BoundJob[] {
  return [
    ...videosJobs(s.blobs),
    ...videoInJobs({ db: s.db, clock: s.clock, blobs: s.blobs, videoIn: s.videoIn, onCopied: (trx, video) => s.ingestion.begin(trx, video) }),
    ...ingestionJobs(s.ingestion),
    ...processingJobs(s.processing),
    ...videoOutJobs({ db: s.db, clock: s.clock, blobs: s.blobs, jobs: s.jobs, videoOut: s.videoOut }),
  ];
}

/**
 * Every periodic task: each feature's own, then the HTTP layer's purges. main.ts runs one
 * PeriodicTask per definition in every process that works (VIDMILL_ROLE worker or all).
 */
export function createPeriodicTasks(s: Services): PeriodicTaskDefinition[] {
  return [
    ...apiKeysPeriodicTasks(s.apiKeys),
    ...videoInPeriodicTasks(s.videoIn),
    ...billingPeriodicTasks(s),
    ...processingPeriodicTasks(s.processing),
    ...videoOutPeriodicTasks(s.videoOut),
    ...webhooksPeriodicTasks(s),
    {
      name: 'idempotency-key-purge',
      intervalMs: 15 * 60_000,
      async run(log) {
        const deleted = await s.idempotency.purgeExpired();
        if (deleted) log.info({ deleted }, 'purged idempotency keys past retention or lease');
      },
    },
    {
      name: 'rate-limit-sweep',
      intervalMs: 60 * 60_000,
      async run(log) {
        const deleted = await sweepEndedRateWindows(s.db, s.clock.now());
        if (deleted) log.debug({ deleted }, 'deleted ended rate-limit windows');
      },
    },
  ];
}

export function createHandlers(s: Services): AllHandlers {
  return {
    ...apiKeysHandlers(s.apiKeys),
    ...accountsHandlers(s.accounts),
    ...projectsHandlers(s.projects),
    ...videosHandlers(s.videos, s.assets),
    ...comparisonHandlers(s.comparison),
    ...videoInHandlers(s.videoIn),
    ...configurationsHandlers(s.configurations),
    ...processingHandlers(s.processing),
    ...videoOutHandlers(s.videoOut),
    ...locationsHandlers(s.locations),
    ...billingHandlers(s.billing),
    ...webhooksHandlers(s.webhooks, s.signingKeys),
    ...webhookListenersHandlers(s.webhookListeners),
    ...pendingHandlers,
  };
}

export function createApp(
  s: Services,
  opts: {
    logger: Logger;
    config: Pick<Config, 'rateLimitPerMinute' | 'signInRateLimit' | 'trustProxy' | 'bodyLimitBytes' | 'strictResponses' | 'responseValidationSample' | 'publicUrl' | 'publicUrlConfigured' | 'metrics'>;
  },
) {
  const rateLimiter = createRateLimiter(s.db, opts.config.rateLimitPerMinute);
  return buildApp({
    contract: loadContract() as ContractDocument,
    handlers: createHandlers(s),
    accounts: s.accounts,
    apiKeys: s.apiKeys,
    rateLimiter,
    idempotency: s.idempotency,
    signInLimiters: createSignInLimiters(s.db, opts.config.signInRateLimit),
    trustProxy: opts.config.trustProxy,
    logger: opts.logger,
    bodyLimitBytes: opts.config.bodyLimitBytes,
    strictResponses: opts.config.strictResponses,
    responseValidationSample: opts.config.responseValidationSample,
    publicRoutes: [s.assets.routes(), s.comparison.routes(), s.videoOut.routes(opts.logger), new UploadEndpoint(s.videoIn, s.clock, opts.logger, s.apiKeys, rateLimiter).routes()],
    publicUrl: opts.config.publicUrlConfigured ? opts.config.publicUrl : undefined,
    // On the API port unless VIDMILL_METRICS_PORT gives it a server of its own (main.ts).
    metrics: opts.config.metrics.port === undefined ? metricsEndpoint({ db: s.db, clock: s.clock, log: opts.logger, token: opts.config.metrics.token }) : undefined,
    readiness: async () => {
      await s.db.raw('select 1');
      // ffmpeg is reported, not required: an API-only process does no media work.
      const media = await s.mediaBinaries.get().then(
        (m) => ({ ffmpeg: { version: m.ffmpegVersion, source: m.source.ffmpeg }, ffprobe: { version: m.ffprobeVersion, source: m.source.ffprobe } }),
        (err: Error) => ({ ffmpeg: { error: err.message }, ffprobe: { error: err.message } }),
      );
      return { database: isPostgres(s.db) ? 'postgresql' : 'sqlite', storage: s.blobs.kind, ...media };
    },
  });
}
