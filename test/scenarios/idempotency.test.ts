/**
 * Idempotent retries (docs/security.md "Idempotent retries"): a POST with an Idempotency-Key
 * runs once per caller and key; retries get the stored response with Idempotent-Replayed: true.
 */
import { strict as assert } from 'node:assert';
import pino from 'pino';
import supertest from 'supertest';
import { createApp } from '../../src/composition';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { findVideo } from '../../src/features/videos';
import { IDEMPOTENCY_LEASE_MS, idempotencyScope, requestFingerprint } from '../../src/http/idempotency';
import { TEST_DIALECT } from '../helpers/database';
import { basic, createHarness, expectError, Harness, TestUser } from '../helpers/harness';

/** A header sent once per value (Node writes an array as repeated header lines); supertest types only Cookie so. */
const twice = (values: string[]) => values as unknown as string;
import { waitFor } from '../helpers/scenario';
import { fixtureBytes } from '../helpers/media-fixtures';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { scaled } from '../helpers/timeouts';

const HOUR_MS = 3600_000;
/** Priced above zero even for a short source (output gigapixels of a 4K upscale). */
const UPSCALE_4K = { container: 'MP4', encodingConfiguration: { codec: 'H264' }, filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'UHD_4K' } } };

describe(`Idempotent retries (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;

  const createProject = (key: string | undefined, body: object, opts: { apiKey?: string; query?: string; app?: supertest.Agent } = {}) => {
    const req = (opts.app ?? h.request).post(`/api/v1/projects${opts.query ?? ''}`).set('X-API-Key', opts.apiKey ?? u.apiKey);
    return (key === undefined ? req : req.set('Idempotency-Key', key)).send(body);
  };
  const projectsNamed = async (name: string) => Number((await h.database.db('projects').where({ team_id: u.teamId, name }).count({ n: '*' }))[0]!.n);
  const storedKeys = async () => h.database.db('idempotency_keys').select('*');

  /** Holds every projects.create until `release()`; `entered` resolves when the first call is inside. */
  function holdProjectCreation() {
    const projects = h.services.projects;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- restored later, called only through .apply(projects)
    const original = projects.create;
    let release!: () => void;
    let entered!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const inside = new Promise<void>((r) => (entered = r));
    projects.create = async (...args: Parameters<typeof original>) => {
      entered();
      await gate;
      return original.apply(projects, args);
    };
    return {
      entered: inside,
      release: () => {
        projects.create = original;
        release();
      },
    };
  }

  beforeEach(async () => {
    h = await createHarness();
    u = await h.user();
  });
  afterEach(() => h.close());

  it('a retry with the same key and body replays the first response with Idempotent-Replayed: true and creates one project', async () => {
    const first = await createProject('retry-1', { name: 'Once' });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const retry = await createProject('retry-1', { name: 'Once' });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, first.body);
    assert.match(String(retry.headers['content-type']), /^application\/json/);
    assert.notEqual(retry.headers['x-request-id'], first.headers['x-request-id'], 'the replay is a request of its own');
    assert.ok(retry.headers['x-ratelimit-remaining'] !== undefined);
    assert.equal(await projectsNamed('Once'), 1);
  });

  it('the body is compared canonically: the same JSON with other key order and spacing replays', async () => {
    const first = await createProject('canonical', { name: 'Canon' });
    const retry = await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).set('Idempotency-Key', 'canonical').set('Content-Type', 'application/json').send('{ "name" :  "Canon" }');
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, first.body);
  });

  it('headers read as one value may not be repeated: two Idempotency-Key headers (which Node joins) are 400 VALIDATION_ERROR naming the header, and nothing runs or is reserved', async () => {
    const res = await h.request
      .post('/api/v1/projects')
      .set('X-API-Key', u.apiKey)
      .set('Idempotency-Key', twice(['key-a', 'key-b']))
      .send({ name: 'twice' });
    expectError(res, 400, 'VALIDATION_ERROR');
    assert.deepEqual(res.body.validationErrors, [{ field: 'headers.idempotency-key', message: 'must be given once' }]);
    assert.equal(await projectsNamed('twice'), 0);
    assert.equal((await storedKeys()).length, 0);
    // A GET ignores the header, as it ignores one.
    assert.equal(
      (
        await h.request
          .get('/api/v1/projects')
          .set('X-API-Key', u.apiKey)
          .set('Idempotency-Key', twice(['key-a', 'key-b']))
      ).status,
      200,
    );
    assert.equal((await createProject('key-a', { name: 'once' })).status, 201);
  });

  it('headers read as one value may not be repeated: two X-API-Key headers are 401 INVALID_API_KEY saying so, two Authorization headers 400 VALIDATION_ERROR naming it, even when both are right (API, tus creation)', async () => {
    // A 401: with no one key there is no rate-limit budget to charge (a 400 carries its headers).
    const twoKeys = await h.request.get('/api/v1/projects').set('X-API-Key', twice([u.apiKey, u.apiKey]));
    expectError(twoKeys, 401, 'INVALID_API_KEY');
    assert.match(twoKeys.body.message, /X-API-Key header must be given once/);
    assert.doesNotMatch(twoKeys.text, new RegExp(u.apiKey));
    // Node keeps the first Authorization and drops the second without a word.
    const twoBasic = await h.request.get('/api/v1/api-keys').set('Authorization', twice([basic(u.email, u.password), basic(u.email, 'other')]));
    expectError(twoBasic, 400, 'VALIDATION_ERROR');
    assert.deepEqual(twoBasic.body.validationErrors, [{ field: 'headers.authorization', message: 'must be given once' }]);
    const tus = await h.request
      .post('/tus/uploads')
      .set('X-API-Key', twice([u.apiKey, 'vmk_other']))
      .set('Tus-Resumable', '1.0.0')
      .set('Upload-Length', '10')
      .set('Upload-Metadata', `name ${Buffer.from('n').toString('base64')}`);
    expectError(tus, 401, 'INVALID_API_KEY');
    assert.match(tus.body.message, /X-API-Key header must be given once/);
    assert.equal((await h.request.get('/api/v1/projects').set('X-API-Key', u.apiKey)).status, 200);
  });

  it('without an Idempotency-Key every POST runs', async () => {
    assert.equal((await createProject(undefined, { name: 'Twice' })).status, 201);
    assert.equal((await createProject(undefined, { name: 'Twice' })).status, 201);
    assert.equal(await projectsNamed('Twice'), 2);
    assert.equal((await storedKeys()).length, 0);
  });

  it('the same key with a different body, path or query is 422 IDEMPOTENCY_KEY_REUSED', async () => {
    assert.equal((await createProject('reused', { name: 'First' })).status, 201);
    expectError(await createProject('reused', { name: 'Second' }), 422, 'IDEMPOTENCY_KEY_REUSED');
    expectError(await createProject('reused', { name: 'First' }, { query: `?selectTeamId=${u.teamId}` }), 422, 'IDEMPOTENCY_KEY_REUSED');
    const webhook = await h.request
      .post('/api/v1/webhooks')
      .set('X-API-Key', u.apiKey)
      .set('Idempotency-Key', 'reused')
      .send({ name: 'Hook', url: 'https://hooks.example.com/vidmill', eventTypes: ['video_processing.done'] });
    expectError(webhook, 422, 'IDEMPOTENCY_KEY_REUSED');
    assert.equal(await projectsNamed('Second'), 0);
    assert.equal(Number((await h.database.db('webhooks').count({ n: '*' }))[0]!.n), 0);
  });

  it('a retry while the first request runs is 409 IDEMPOTENCY_KEY_IN_USE, also on another API process; afterwards it replays', async () => {
    const second = supertest(createApp(h.services, { logger: pino({ level: 'silent' }), config: h.config }));
    const hold = holdProjectCreation();
    const first = createProject('concurrent', { name: 'Held' }).then((r) => r);
    await hold.entered;
    expectError(await createProject('concurrent', { name: 'Held' }), 409, 'IDEMPOTENCY_KEY_IN_USE');
    expectError(await createProject('concurrent', { name: 'Held' }, { app: second }), 409, 'IDEMPOTENCY_KEY_IN_USE');
    hold.release();
    const done = await first;
    assert.equal(done.status, 201, JSON.stringify(done.body));
    const retry = await createProject('concurrent', { name: 'Held' }, { app: second });
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, done.body);
    assert.equal(await projectsNamed('Held'), 1);
  });

  it('concurrent reservations of one key (one INSERT guarded by the primary key): exactly one runs, the others are in progress', async () => {
    const scope = idempotencyScope({ userId: u.userId, apiKeyId: u.apiKeyId });
    const fingerprint = requestFingerprint('POST', '/api/v1/projects', { name: 'Race' });
    const decisions = await Promise.all(Array.from({ length: 8 }, () => h.services.idempotency.reserve(scope, 'race', fingerprint)));
    assert.deepEqual(decisions.map((d) => d.outcome).sort(), ['in-progress', 'in-progress', 'in-progress', 'in-progress', 'in-progress', 'in-progress', 'in-progress', 'run']);
    assert.equal((await storedKeys()).length, 1);
  });

  it('a request rejected by validation stores nothing and the key can be reused', async () => {
    expectError(await createProject('corrected', { name: '' }), 400, 'VALIDATION_ERROR');
    assert.deepEqual(await storedKeys(), []);
    const corrected = await createProject('corrected', { name: 'Corrected' });
    assert.equal(corrected.status, 201, JSON.stringify(corrected.body));
    assert.equal(corrected.headers['idempotent-replayed'], undefined);
  });

  it('a request rejected by a domain rule (4xx) or failing (5xx) stores nothing and the key can be reused', async () => {
    expectError(await createProject('domain', { name: 'Nowhere' }, { query: '?selectTeamId=3fa85f64-5717-4562-b3fc-2c963f66afa6' }), 403, 'FORBIDDEN');
    assert.deepEqual(await storedKeys(), []);
    const projects = h.services.projects;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- saved only to be restored
    const original = projects.create;
    projects.create = async () => {
      throw new Error('database went away');
    };
    try {
      expectError(await createProject('domain', { name: 'Retried' }), 500, 'INTERNAL_SERVER_ERROR');
    } finally {
      projects.create = original;
    }
    assert.deepEqual(await storedKeys(), []);
    assert.equal((await createProject('domain', { name: 'Retried' })).status, 201);
  });

  it('an Idempotency-Key of 256 characters is 400 VALIDATION_ERROR naming the header; 255 characters are accepted', async () => {
    const res = await createProject('k'.repeat(256), { name: 'Long key' });
    expectError(res, 400, 'VALIDATION_ERROR');
    assert.ok(
      res.body.validationErrors.some((e: any) => /idempotency-key/i.test(e.field)),
      JSON.stringify(res.body.validationErrors),
    );
    assert.deepEqual(await storedKeys(), []);
    assert.equal((await createProject('k'.repeat(255), { name: 'Long key' })).status, 201);
    assert.equal((await createProject('k'.repeat(255), { name: 'Long key' })).headers['idempotent-replayed'], 'true');
  });

  it('keys are scoped per API key: another key of the same user with the same Idempotency-Key runs on its own', async () => {
    const { secret: otherKey } = await h.services.apiKeys.create(u.userId, { name: 'second key', active: true });
    const mine = await createProject('shared', { name: 'Scoped' });
    const theirs = await createProject('shared', { name: 'Scoped' }, { apiKey: otherKey });
    assert.equal(theirs.status, 201);
    assert.equal(theirs.headers['idempotent-replayed'], undefined);
    assert.notEqual(theirs.body.id, mine.body.id);
    assert.equal((await createProject('shared', { name: 'Other body' }, { apiKey: otherKey })).status, 422);
    assert.equal(await projectsNamed('Scoped'), 2);
  });

  it('after the retention (24 h by default) the key is free again, and the purge deletes expired records', async () => {
    const first = await createProject('daily', { name: 'Day one' });
    h.clock.advance(24 * HOUR_MS - 1);
    assert.equal((await createProject('daily', { name: 'Day one' })).headers['idempotent-replayed'], 'true');
    assert.equal(await h.services.idempotency.purgeExpired(), 0);
    h.clock.advance(1);
    const next = await createProject('daily', { name: 'Day two' });
    assert.equal(next.status, 201);
    assert.notEqual(next.body.id, first.body.id);
    assert.equal(await h.services.idempotency.purgeExpired(), 0, 'the key now holds the new response');
    h.clock.advance(24 * HOUR_MS);
    assert.equal(await h.services.idempotency.purgeExpired(), 1);
    assert.deepEqual(await storedKeys(), []);
  });

  it('the retention follows VIDMILL_IDEMPOTENCY_TTL_HOURS', async () => {
    await h.close();
    h = await createHarness({ idempotencyTtlMs: 2 * HOUR_MS });
    u = await h.user();
    await createProject('short', { name: 'Short' });
    h.clock.advance(2 * HOUR_MS - 1);
    assert.equal((await createProject('short', { name: 'Short' })).headers['idempotent-replayed'], 'true');
    h.clock.advance(1);
    assert.equal((await createProject('short', { name: 'Short' })).headers['idempotent-replayed'], undefined);
    assert.equal(await projectsNamed('Short'), 2);
  });

  it('a stale in-progress record past its lease (the process died) can be retried; the lost request cannot store its answer', async () => {
    const body = { name: 'Crashed' };
    const scope = idempotencyScope({ userId: u.userId, apiKeyId: u.apiKeyId });
    const crashed = await h.services.idempotency.reserve(scope, 'crash', requestFingerprint('POST', '/api/v1/projects', body));
    assert.equal(crashed.outcome, 'run');
    expectError(await createProject('crash', body), 409, 'IDEMPOTENCY_KEY_IN_USE');
    h.clock.advance(IDEMPOTENCY_LEASE_MS);
    const retried = await createProject('crash', body);
    assert.equal(retried.status, 201, JSON.stringify(retried.body));
    if (crashed.outcome !== 'run') return;
    assert.equal(await h.services.idempotency.complete(scope, 'crash', crashed.leaseToken, { status: 201, headers: {}, body: '{}' }), false);
    assert.deepEqual((await createProject('crash', body)).body, retried.body);
  });

  it('POST /v1/api-keys (Basic auth) is scoped to the user; the replayed key is stored sealed, never in clear', async () => {
    const auth = basic(u.email, u.password);
    const create = () => h.request.post('/api/v1/api-keys').set('Authorization', auth).set('Idempotency-Key', 'new-key').send({ name: 'ci', active: true });
    const first = await create();
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const retry = await create();
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.equal(retry.body.apiKey, first.body.apiKey);
    const [row] = await storedKeys();
    assert.equal(row.scope, `user:${u.userId}`);
    assert.ok(!String(row.response).includes(first.body.apiKey), 'the secret is not stored in clear');
    assert.equal(Number((await h.database.db('api_keys').where({ user_id: u.userId }).count({ n: '*' }))[0]!.n), 2);
  });

  describe('a billed operation', function () {
    this.timeout(scaled(120_000));
    let server: RangeServer;
    before(async () => {
      server = await startRangeServer();
    });
    after(() => server.close());

    it('processing/start retried with the same key creates one processed video and charges once', async () => {
      await h.close();
      h = await createHarness({ allowPrivateUrls: true, extraCa: [server.ca] });
      u = await h.user();
      await setFreeClipEnabled(h.database.db, u.teamId, false);
      await h.services.ledger.topUp(u.teamId, 100_000_000);
      const worker = h.startWorker();
      server.serve('/media/source.mp4', fixtureBytes({ seconds: 2 }));
      const source = await h.request
        .post('/api/v1/videos/in/https')
        .set('X-API-Key', u.apiKey)
        .send({ name: 'Source', url: `${server.origin}/media/source.mp4` });
      assert.equal(source.status, 202, JSON.stringify(source.body));
      const ingestion = await waitFor(
        'ingestion of the source',
        async () => {
          const s = (await findVideo(h.database.db, source.body.videoId))?.ingestion;
          return s && ['DONE', 'FAILED'].includes(s.status) ? s : undefined;
        },
        { timeoutMs: 90_000 },
      );
      assert.equal(ingestion.status, 'DONE', JSON.stringify(ingestion.error));
      // Only the API is under test: the processing job itself need not run.
      await worker.stop();

      const start = () => h.request.post(`/api/v1/videos/${source.body.videoId}/processing/start?videoName=Processed`).set('X-API-Key', u.apiKey).set('Idempotency-Key', 'start-once').send(UPSCALE_4K);
      const first = await start();
      assert.equal(first.status, 202, JSON.stringify(first.body));
      const retry = await start();
      assert.equal(retry.status, 202);
      assert.equal(retry.headers['idempotent-replayed'], 'true');
      assert.deepEqual(retry.body, first.body);
      const processed = await h.database.db('videos').where({ master_video_id: source.body.videoId }).select('id');
      assert.deepEqual(
        processed.map((v: any) => v.id),
        [first.body.videoId],
      );
      const charges = await h.database.db('ledger_transactions').where({ team_id: u.teamId, video_id: first.body.videoId }).select('amount_micros');
      assert.equal(charges.length, 1);
      assert.ok(Number(charges[0].amount_micros) < 0, 'the job costs something');
      assert.equal(await h.services.ledger.processingBalance(u.teamId), 100_000_000 + Number(charges[0].amount_micros));
      assert.equal(Number((await h.database.db('jobs').where({ kind: 'video.process' }).count({ n: '*' }))[0]!.n), 1);
    });
  });
});
