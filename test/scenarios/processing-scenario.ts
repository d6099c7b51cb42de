/**
 * The setup the processing scenarios share (test/scenarios/processing.test.ts, whose subject is
 * the SQL of processing and runs on both databases, and processing-media.test.ts, the media-heavy
 * ones, on one): an HTTPS range server for masters, a local S3 server, and per test a harness
 * with the built-in configurations, a user whose team has the free clip off, and a worker.
 * Registers its hooks in the calling `describe`; `h` and `u` are the current test's.
 */
import { strict as assert } from 'node:assert';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { findVideo } from '../../src/features/videos';
import { assertEtaQuality, createHarness, type Harness, recordEtaRuns, type TestUser } from '../helpers/harness';
import { type RangeServer, startRangeServer } from '../helpers/range-server';
import { type LocalS3, startLocalS3 } from '../helpers/s3-server';
import { apiRequests, waitFor } from '../helpers/scenario';

type StoredVideo = NonNullable<Awaited<ReturnType<typeof findVideo>>>;

export interface ProcessingScenario {
  readonly h: Harness;
  readonly u: TestUser;
  readonly s3: LocalS3;
  readonly get: ReturnType<typeof apiRequests>['get'];
  readonly post: ReturnType<typeof apiRequests>['post'];
  readonly del: ReturnType<typeof apiRequests>['del'];
  /** How good the time-left estimates of the file's stages were (src/shared/progress-eta.ts). */
  readonly etaRuns: ReturnType<typeof recordEtaRuns>;
  /** The webhook event types of a video, in order. */
  readonly eventsOf: (videoId: string) => Promise<string[]>;
  /** The stage once it has one of `want`'s statuses (DONE or FAILED by default). */
  readonly waitStage: <S extends 'ingestion' | 'processing'>(videoId: string, stage: S, want?: string[]) => Promise<NonNullable<StoredVideo[S]>>;
  /** A master copied in and ingested (metadata only, no clip). */
  readonly ingested: (data: Buffer, ext?: string) => Promise<string>;
  /** The wallet's processing charges (a top-up is a PROCESSING-balance transaction too, without a video). */
  readonly processingCharges: () => Promise<any[]>;
}

export function processingScenario(): ProcessingScenario {
  let server: RangeServer;
  let s3: LocalS3;
  let h: Harness;
  let u: TestUser;
  let n = 0;
  const { get, post, del } = apiRequests(
    () => h,
    () => u,
  );
  const etaRuns = recordEtaRuns(['ingestion', 'clip', 'processing']);

  before(async () => {
    server = await startRangeServer();
    s3 = await startLocalS3({ buckets: ['deliveries'] });
  });
  after(async () => {
    await server.close();
    await s3.close();
    assertEtaQuality(etaRuns.stop());
  });
  beforeEach(async () => {
    h = await createHarness({ allowPrivateUrls: true, extraCa: [server.ca] });
    await h.services.configurations.ensureBuiltIns();
    u = await h.user();
    await setFreeClipEnabled(h.database.db, u.teamId, false);
    h.startWorker({ concurrency: 2 });
  });
  afterEach(() => h.close());

  const waitStage: ProcessingScenario['waitStage'] = <S extends 'ingestion' | 'processing'>(videoId: string, stage: S, want = ['DONE', 'FAILED']) =>
    waitFor(
      `${stage} of ${videoId}`,
      async () => {
        const s = (await findVideo(h.database.db, videoId))?.[stage];
        return s && want.includes(s.status) ? s : undefined;
      },
      { timeoutMs: 150_000 },
    );

  return {
    get h() {
      return h;
    },
    get u() {
      return u;
    },
    get s3() {
      return s3;
    },
    get,
    post,
    del,
    etaRuns,
    eventsOf: async (videoId) => {
      return (
        await h.database
          .db('webhook_events')
          .orderBy([{ column: 'occurred_at' }, { column: 'created_at' }])
          .select('event_type', 'data')
      )
        .filter((r: any) => JSON.parse(r.data).videoId === videoId)
        .map((r: any) => r.event_type as string);
    },
    waitStage,
    ingested: async (data, ext = 'mp4') => {
      const p = `/media/processing-${++n}.${ext}`;
      server.serve(p, data);
      const res = await post('/v1/videos/in/https', { name: `Source ${n}`, url: server.origin + p });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      const ingestion = await waitStage(res.body.videoId, 'ingestion');
      assert.equal(ingestion.status, 'DONE', JSON.stringify(ingestion.error));
      return res.body.videoId;
    },
    processingCharges: async () => {
      return ((await get('/v2/wallet/billing-periods/latest/transactions?pageSize=100')).body.items ?? []).filter((t: any) => t.type === 'PROCESSING' && t.videoId);
    },
  };
}
