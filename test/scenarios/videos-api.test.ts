/**
 * The videos API (getVideos, getVideoById, patchVideo, deleteVideoById, getDerivedVideos) over
 * video rows written directly through the store, as video in, the free clip and processing do.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { IngestionUpdate, insertVideo, NewVideo, recordVideoFile, videoStageWrites } from '../../src/features/videos/testing';
import { findVideo, OperationStatus, PURGE_BLOBS_JOB } from '../../src/features/videos';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, expectError, Harness, TestUser } from '../helpers/harness';
import { waitFor } from '../helpers/scenario';

const FILE = { name: 'beach.mov', size: 1234, type: 'video/quicktime', containerName: 'QuickTime', lastModified: new Date('2026-01-01T11:58:00Z') };

describe(`Videos API (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  let projectId: string;

  const as = (user: TestUser) => ({
    get: (path: string) => h.request.get(`/api${path}`).set('X-API-Key', user.apiKey),
    patch: (path: string, body: object) => h.request.patch(`/api${path}`).set('X-API-Key', user.apiKey).send(body),
    delete: (path: string, body?: unknown) => {
      const req = h.request.delete(`/api${path}`).set('X-API-Key', user.apiKey);
      return body === undefined ? req : req.send(body as object);
    },
  });
  const api = () => as(u);
  const db = () => h.database.db;

  /** Inserts a video one second after the previous one (so creation order is sort order). */
  async function video(opts: Partial<NewVideo> & { upload?: OperationStatus; ingestion?: IngestionUpdate; user?: TestUser; sample?: boolean } = {}): Promise<string> {
    const owner = opts.user ?? u;
    const id = randomUUID();
    h.clock.advance(1000);
    const kind = opts.kind ?? 'MASTER';
    await insertVideo(db(), {
      id,
      kind,
      teamId: owner.teamId,
      projectId: opts.projectId ?? (owner === u ? projectId : await defaultProject(owner)),
      userId: owner.userId,
      name: opts.name ?? `${kind.toLowerCase()} ${id.slice(0, 8)}`,
      description: opts.description,
      masterVideoId: opts.masterVideoId,
      sourceVideoId: opts.sourceVideoId,
      // A clip's clipId is its own id (migration 005).
      clipId: kind === 'CLIP' ? id : opts.clipId,
      file: kind === 'MASTER' ? FILE : undefined,
      uploadStatus: kind === 'MASTER' ? 'INITIAL' : undefined,
      createdAt: h.clock.now(),
    });
    if (opts.upload) await videoStageWrites.updateUpload(db(), id, { status: opts.upload, progress: opts.upload === 'DONE' ? 100 : 40 }, h.clock.now());
    if (opts.ingestion) await videoStageWrites.updateIngestion(db(), id, opts.ingestion, h.clock.now());
    if (opts.sample) await db()('videos').where({ id }).update({ is_sample: true });
    return id;
  }
  const defaultProject = async (user: TestUser) => (await as(user).get('/v1/projects/default')).body.id as string;

  /** A master (copied and ingested) with its free clip, a processed clip of the clip, and a processed video of the master. */
  async function family() {
    const master = await video({ upload: 'DONE', ingestion: { status: 'DONE', progress: 100, metadataAvailable: true } });
    const clip = await video({ kind: 'CLIP', masterVideoId: master, sourceVideoId: master, ingestion: { status: 'DONE', progress: 100 } });
    const processedClip = await video({ kind: 'PROCESSED', masterVideoId: master, sourceVideoId: clip, clipId: clip });
    const processed = await video({ kind: 'PROCESSED', masterVideoId: master, sourceVideoId: master });
    return { master, clip, processedClip, processed };
  }
  const ids = (res: any) => res.body.items.map((v: any) => v.id);
  const exists = async (id: string) => Boolean(await findVideo(db(), id));
  const deletedEvents = async () =>
    (await db()('webhook_events').where({ event_type: 'video.deleted' }).select('team_id', 'data', 'occurred_at')).map((r: any) => ({
      teamId: r.team_id,
      videoId: JSON.parse(r.data).videoId,
    }));
  const purgeJobs = () => db()('jobs').where({ kind: PURGE_BLOBS_JOB.kind });

  beforeEach(async () => {
    h = await createHarness();
    u = await h.user();
    projectId = await defaultProject(u);
  });
  afterEach(() => h.close());

  describe('getVideoById', () => {
    it('a master shows its upload (file and state) and ingestion (state, metadata, quality)', async () => {
      const id = await video({
        upload: 'DONE',
        description: 'drone footage',
        ingestion: { status: 'DONE', progress: 100, metadataAvailable: true, thumbnailsAvailable: true, metadata: { containerName: 'mov', frameWidth: 1920 } },
      });
      const res = await api().get(`/v1/videos/${id}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const v = res.body;
      assert.equal(v.id, id);
      assert.equal(v.teamId, u.teamId);
      assert.equal(v.projectId, projectId);
      assert.equal(v.userId, u.userId);
      assert.equal(v.description, 'drone footage');
      assert.deepEqual(v.upload.file, { ...FILE, lastModified: FILE.lastModified.toISOString() });
      assert.equal(v.upload.uploadState.uploadStatus, 'DONE');
      assert.equal(v.upload.uploadState.progressPercentage, 100);
      assert.equal(v.upload.uploadState.error, undefined);
      assert.equal(v.ingestion.ingestionState.ingestionStatus, 'DONE');
      assert.equal(v.ingestion.ingestionState.etaSeconds, 0);
      assert.equal(v.ingestion.ingestionState.videoMetadataAvailable, true);
      assert.equal(v.ingestion.ingestionState.thumbnailsAvailable, true);
      assert.equal(v.ingestion.ingestionState.webVideoAvailable, false);
      assert.deepEqual(v.ingestion.metadata, { containerName: 'mov', frameWidth: 1920 });
      assert.deepEqual(v.ingestion.qualityAssessment, { metrics: [] });
      assert.equal(v.masterVideo, undefined);
      assert.equal(v.clipId, undefined);
    });

    it('a failed upload carries error {errorCode, message} (StageError) with code repeating errorCode', async () => {
      const id = await video();
      await videoStageWrites.updateUpload(db(), id, { status: 'FAILED', error: { code: 'CHECKSUM_MISMATCH', message: 'crc differs' } }, h.clock.now());
      const v = (await api().get(`/v1/videos/${id}`)).body;
      assert.equal(v.upload.uploadState.uploadStatus, 'FAILED');
      assert.deepEqual(v.upload.uploadState.error, { errorCode: 'CHECKSUM_MISMATCH', code: 'CHECKSUM_MISMATCH', message: 'crc differs' });
      assert.equal(v.upload.uploadState.etaSeconds, 0, 'a finished stage has no time left');
      assert.equal(v.ingestion, undefined);
    });

    it('ingestion that is not finished shows its progress, eta and empty metadata / quality', async () => {
      const id = await video({ upload: 'DONE', ingestion: { status: 'IN_PROGRESS', progress: 30, etaSeconds: 12 } });
      const i = (await api().get(`/v1/videos/${id}`)).body.ingestion;
      assert.equal(i.ingestionState.ingestionStatus, 'IN_PROGRESS');
      assert.equal(i.ingestionState.progressPercentage, 30);
      assert.equal(i.ingestionState.etaSeconds, 12);
      assert.deepEqual(i.metadata, {});
      assert.deepEqual(i.qualityAssessment, { metrics: [] });
    });

    it('a derived video shows its masterVideo with the master file, its clipId, and no upload', async () => {
      const f = await family();
      const master = (await api().get(`/v1/videos/${f.master}`)).body;
      const p = (await api().get(`/v1/videos/${f.processedClip}`)).body;
      assert.deepEqual(p.masterVideo, { id: f.master, createdAt: master.createdAt, updatedAt: master.updatedAt, videoFile: master.upload.file });
      assert.equal(p.clipId, f.clip);
      assert.equal(p.upload, undefined);
      const clip = (await api().get(`/v1/videos/${f.clip}`)).body;
      assert.equal(clip.masterVideo.id, f.master);
      assert.equal(clip.clipId, f.clip);
    });

    it('a video of a team the caller is not a member of is 404 RESOURCE_NOT_FOUND, like an unknown id', async () => {
      const other = await h.user();
      const theirs = await video({ user: other });
      expectError(await api().get(`/v1/videos/${theirs}`), 404, 'RESOURCE_NOT_FOUND');
      expectError(await api().get(`/v1/videos/${randomUUID()}`), 404, 'RESOURCE_NOT_FOUND');
      assert.equal((await as(other).get(`/v1/videos/${theirs}`)).status, 200);
    });
  });

  describe('flags are true to the state', () => {
    const flagsOf = async (id: string) => (await api().get(`/v1/videos/${id}`)).body.flags;
    const none = { isMaster: false, isProcessing: false, isProcessed: false, isIngesting: false, isIngested: false, isClip: false, isSample: false };

    const cases: Array<[string, Parameters<typeof video>[0] & {}, Partial<typeof none>]> = [
      ['master, upload INITIAL: master and ingesting', {}, { isMaster: true, isIngesting: true }],
      ['master, upload IN_PROGRESS: ingesting', { upload: 'IN_PROGRESS' }, { isMaster: true, isIngesting: true }],
      ['master, upload FAILED: neither ingesting nor ingested', { upload: 'FAILED' }, { isMaster: true }],
      ['master, upload DONE, ingestion INITIAL: ingesting', { upload: 'DONE', ingestion: { status: 'INITIAL' } }, { isMaster: true, isIngesting: true }],
      ['master, ingestion IN_PROGRESS: ingesting', { upload: 'DONE', ingestion: { status: 'IN_PROGRESS' } }, { isMaster: true, isIngesting: true }],
      ['master, ingestion DONE: ingested', { upload: 'DONE', ingestion: { status: 'DONE' } }, { isMaster: true, isIngested: true }],
      ['master, ingestion FAILED: neither', { upload: 'DONE', ingestion: { status: 'FAILED' } }, { isMaster: true }],
      ['sample master: isSample', { upload: 'DONE', ingestion: { status: 'DONE' }, sample: true }, { isMaster: true, isIngested: true, isSample: true }],
    ];
    for (const [name, opts, expected] of cases) {
      it(name, async () => {
        assert.deepEqual(await flagsOf(await video(opts)), { ...none, ...expected });
      });
    }

    it('clip: isClip, not master; ingesting then ingested with its own ingestion', async () => {
      const master = await video({ upload: 'DONE', ingestion: { status: 'DONE' } });
      const clip = await video({ kind: 'CLIP', masterVideoId: master });
      assert.deepEqual(await flagsOf(clip), { ...none, isClip: true });
      await videoStageWrites.updateIngestion(db(), clip, { status: 'IN_PROGRESS' }, h.clock.now());
      assert.deepEqual(await flagsOf(clip), { ...none, isClip: true, isIngesting: true });
      await videoStageWrites.updateIngestion(db(), clip, { status: 'DONE' }, h.clock.now());
      assert.deepEqual(await flagsOf(clip), { ...none, isClip: true, isIngested: true });
    });

    it('processed video of a clip: isClip; processed video of a master: not a clip; isProcessing/isProcessed false without processing state', async () => {
      const f = await family();
      assert.deepEqual(await flagsOf(f.processedClip), { ...none, isClip: true });
      assert.deepEqual(await flagsOf(f.processed), { ...none });
    });
  });

  describe('getVideos', () => {
    it('lists the videos of every team of the caller and none of other teams; teamId narrows to one team', async () => {
      const other = await h.user();
      const mine = await video();
      const theirs = await video({ user: other });
      const team2 = await h.services.accounts.createTeam({ name: 'Second', ownerEmail: u.email });
      const p2 = (await h.request.post(`/api/v1/projects?selectTeamId=${team2.id}`).set('X-API-Key', u.apiKey).send({ name: 'p' })).body.id;
      const inTeam2 = randomUUID();
      await insertVideo(db(), { id: inTeam2, teamId: team2.id, projectId: p2, userId: u.userId, name: 'in team 2', createdAt: h.clock.now() });

      const all = await api().get('/v1/videos');
      assert.equal(all.status, 200, JSON.stringify(all.body));
      assert.deepEqual(ids(all).sort(), [mine, inTeam2].sort());
      assert.ok(!ids(all).includes(theirs));
      assert.deepEqual(ids(await api().get(`/v1/videos?teamId=${team2.id}`)), [inTeam2]);
      expectError(await api().get(`/v1/videos?teamId=${other.teamId}`), 403, 'FORBIDDEN');
    });

    it('projectId filter: only videos of that project', async () => {
      const p2 = (await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: 'second' })).body.id;
      const a = await video();
      const b = await video({ projectId: p2 });
      assert.deepEqual(ids(await api().get(`/v1/videos?projectId=${p2}`)), [b]);
      assert.deepEqual(ids(await api().get(`/v1/videos?projectId=${projectId}`)), [a]);
    });

    it('masterVideoId filter: only videos derived from that master', async () => {
      const f = await family();
      const other = await family();
      assert.deepEqual(ids(await api().get(`/v1/videos?masterVideoId=${f.master}`)), [f.clip, f.processedClip, f.processed]);
      assert.deepEqual(ids(await api().get(`/v1/videos?masterVideoId=${other.master}`)), [other.clip, other.processedClip, other.processed]);
    });

    it('clipId filter: only videos whose clipId is that clip', async () => {
      const f = await family();
      await family();
      assert.deepEqual(ids(await api().get(`/v1/videos?clipId=${f.clip}`)), [f.clip, f.processedClip]);
      assert.deepEqual(ids(await api().get(`/v1/videos?clipId=${f.clip}&clipMode=EXCLUDE`)), []);
    });

    it('clipMode INCLUDE (the default): clips are listed with the rest', async () => {
      const f = await family();
      const all = [f.master, f.clip, f.processedClip, f.processed];
      assert.deepEqual(ids(await api().get('/v1/videos')), all);
      assert.deepEqual(ids(await api().get('/v1/videos?clipMode=INCLUDE')), all);
    });

    it('clipMode EXCLUDE: clips and videos processed from clips are left out', async () => {
      const f = await family();
      assert.deepEqual(ids(await api().get('/v1/videos?clipMode=EXCLUDE')), [f.master, f.processed]);
    });

    it('clipMode ONLY: clips alone', async () => {
      const f = await family();
      const res = await api().get('/v1/videos?clipMode=ONLY');
      assert.deepEqual(ids(res), [f.clip, f.processedClip]);
      assert.ok(res.body.items.every((v: any) => v.flags.isClip));
    });

    it('paging: pageNumber/pageSize with totals; sorting by createdAt or updatedAt in both directions', async () => {
      const made: string[] = [];
      for (let i = 0; i < 5; i++) made.push(await video());
      const p1 = await api().get('/v1/videos?pageSize=2&pageNumber=1');
      assert.deepEqual(ids(p1), made.slice(2, 4));
      assert.equal(p1.body.pageNumber, 1);
      assert.equal(p1.body.pageSize, 2);
      assert.equal(p1.body.numberOfElements, 2);
      assert.equal(p1.body.totalElements, 5);
      assert.equal(p1.body.totalPages, 3);
      const past = await api().get('/v1/videos?pageSize=2&pageNumber=7');
      assert.deepEqual(ids(past), []);
      assert.equal(past.body.totalElements, 5);
      assert.deepEqual(ids(await api().get('/v1/videos?sortDirection=DESC')), [...made].reverse());

      h.clock.advance(1000);
      assert.equal((await api().patch(`/v1/videos/${made[0]}`, { name: 'touched' })).status, 200);
      assert.deepEqual(ids(await api().get('/v1/videos?sortBy=updatedAt&sortDirection=DESC&pageSize=1')), [made[0]]);
      assert.deepEqual(ids(await api().get('/v1/videos?sortBy=createdAt&sortDirection=DESC&pageSize=1')), [made[4]]);
    });
  });

  describe('getDerivedVideos', () => {
    it('for a master: every video made from it, clips and processed videos', async () => {
      const f = await family();
      await family();
      const res = await api().get(`/v1/videos/${f.master}/derived`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(ids(res), [f.clip, f.processedClip, f.processed]);
      assert.equal(res.body.totalElements, 3);
      assert.deepEqual(ids(await api().get(`/v1/videos/${f.master}/derived?pageSize=1&pageNumber=2`)), [f.processed]);
    });

    it('for a clip: the processed clips based on it', async () => {
      const f = await family();
      assert.deepEqual(ids(await api().get(`/v1/videos/${f.clip}/derived`)), [f.processedClip]);
    });

    it('for a processed video: none', async () => {
      const f = await family();
      assert.deepEqual(ids(await api().get(`/v1/videos/${f.processed}/derived`)), []);
    });

    it('of a video of another team: 404 RESOURCE_NOT_FOUND', async () => {
      const other = await h.user();
      expectError(await api().get(`/v1/videos/${await video({ user: other })}/derived`), 404, 'RESOURCE_NOT_FOUND');
    });
  });

  describe('patchVideo', () => {
    it('changes name and/or description and updatedAt', async () => {
      const id = await video({ name: 'old', description: 'first' });
      const before = (await api().get(`/v1/videos/${id}`)).body;
      h.clock.advance(5000);
      const res = await api().patch(`/v1/videos/${id}`, { name: 'new' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.name, 'new');
      assert.equal(res.body.description, 'first');
      assert.ok(res.body.updatedAt > before.updatedAt);
      const both = await api().patch(`/v1/videos/${id}`, { name: 'newer', description: '' });
      assert.equal(both.body.name, 'newer');
      assert.equal(both.body.description, '');
      assert.deepEqual((await api().get(`/v1/videos/${id}`)).body, both.body);
    });

    it('a video of another team is 404 and stays unchanged; an empty body is 400', async () => {
      const other = await h.user();
      const theirs = await video({ user: other, name: 'theirs' });
      expectError(await api().patch(`/v1/videos/${theirs}`, { name: 'mine now' }), 404, 'RESOURCE_NOT_FOUND');
      assert.equal((await findVideo(db(), theirs))?.name, 'theirs');
      expectError(await api().patch(`/v1/videos/${theirs}`, {}), 400, 'VALIDATION_ERROR');
      expectError(await api().patch(`/v1/videos/${theirs}`, { name: '' }), 400, 'VALIDATION_ERROR');
    });
  });

  describe('deleteVideoById', () => {
    it('without a body, deleting a master removes it and every derived video; ids requested first', async () => {
      const f = await family();
      const keep = await family();
      const res = await api().delete(`/v1/videos/${f.master}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, [f.master, f.clip, f.processedClip, f.processed]);
      for (const id of res.body) assert.equal(await exists(id), false, id);
      for (const id of Object.values(keep)) assert.equal(await exists(id), true, id);
      expectError(await api().get(`/v1/videos/${f.master}`), 404, 'RESOURCE_NOT_FOUND');
    });

    it('deleting a clip removes the clip and the processed clips made from it, nothing else', async () => {
      const f = await family();
      const res = await api().delete(`/v1/videos/${f.clip}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, [f.clip, f.processedClip]);
      assert.equal(await exists(f.master), true);
      assert.equal(await exists(f.processed), true);
      assert.deepEqual(ids(await api().get(`/v1/videos/${f.master}/derived`)), [f.processed]);
    });

    it('deleting a processed video removes it alone', async () => {
      const f = await family();
      assert.deepEqual((await api().delete(`/v1/videos/${f.processed}`, [])).body, [f.processed]);
      assert.equal(await exists(f.master), true);
    });

    it('with the matching list of derived ids (in any order) it deletes', async () => {
      const f = await family();
      const res = await api().delete(`/v1/videos/${f.master}`, [f.processed, f.clip, f.processedClip]);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, [f.master, f.clip, f.processedClip, f.processed]);
    });

    it('with a mismatching list: 409 CONFLICTING_DERIVED_VIDEO_IDS and nothing deleted, no event, no purge', async () => {
      const f = await family();
      const stranger = randomUUID();
      for (const body of [
        [f.clip, f.processedClip],
        [f.clip, f.processedClip, f.processed, stranger],
        [f.clip, f.processedClip, stranger],
      ]) {
        expectError(await api().delete(`/v1/videos/${f.master}`, body), 409, 'CONFLICTING_DERIVED_VIDEO_IDS');
      }
      expectError(await api().delete(`/v1/videos/${f.clip}`, [f.processed]), 409, 'CONFLICTING_DERIVED_VIDEO_IDS');
      for (const id of Object.values(f)) assert.equal(await exists(id), true, id);
      assert.deepEqual(await deletedEvents(), []);
      assert.equal((await purgeJobs()).length, 0);
    });

    it('[] when derived videos exist is 409; [] when there are none deletes', async () => {
      const f = await family();
      expectError(await api().delete(`/v1/videos/${f.master}`, []), 409, 'CONFLICTING_DERIVED_VIDEO_IDS');
      assert.equal(await exists(f.master), true);
      const lonely = await video();
      const res = await api().delete(`/v1/videos/${lonely}`, []);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, [lonely]);
    });

    it('a body that is not a list of distinct uuids is 400 VALIDATION_ERROR and nothing is deleted', async () => {
      const f = await family();
      for (const body of [['not-a-uuid'], [f.clip, f.clip, f.processedClip, f.processed], { ids: [f.clip] }, [42]]) {
        expectError(await api().delete(`/v1/videos/${f.master}`, body), 400, 'VALIDATION_ERROR');
      }
      for (const id of Object.values(f)) assert.equal(await exists(id), true, id);
    });

    it('a video of a team the caller is not a member of is 404 and nothing is deleted', async () => {
      const other = await h.user();
      const theirs = await video({ user: other });
      expectError(await api().delete(`/v1/videos/${theirs}`), 404, 'RESOURCE_NOT_FOUND');
      expectError(await api().delete(`/v1/videos/${theirs}`, []), 404, 'RESOURCE_NOT_FOUND');
      expectError(await api().delete(`/v1/videos/${randomUUID()}`), 404, 'RESOURCE_NOT_FOUND');
      assert.equal(await exists(theirs), true);
      assert.deepEqual(await deletedEvents(), []);
    });

    it('writes one video.deleted event per removed video, in the video team, with data.videoId', async () => {
      const f = await family();
      await api().delete(`/v1/videos/${f.clip}`);
      assert.deepEqual(
        (await deletedEvents()).sort((a, b) => a.videoId.localeCompare(b.videoId)),
        [f.clip, f.processedClip].sort().map((videoId) => ({ teamId: u.teamId, videoId })),
      );
      await api().delete(`/v1/videos/${f.master}`);
      assert.deepEqual((await deletedEvents()).map((e) => e.videoId).sort(), Object.values(f).sort());
    });

    it('removes the video-in operation, its parts and the ingestion assets of every removed video', async () => {
      const f = await family();
      const now = h.clock.now();
      await db()('video_in_operations').insert({ video_id: f.master, source_kind: 'HTTPS', source_url: 'https://example.com/v.mov', max_connections: 4, created_at: now, updated_at: now });
      await db()('video_in_parts').insert({ video_id: f.master, part_number: 1, crc32c: 42 });
      for (const id of [f.master, f.clip]) {
        await db()('video_assets').insert({
          id: randomUUID(),
          video_id: id,
          kind: 'THUMBNAIL',
          ordinal: 0,
          blob_key: `videos/${id}/thumbnails/0.jpg`,
          content_type: 'image/jpeg',
          size: 3,
          created_at: now,
        });
      }
      assert.equal((await api().delete(`/v1/videos/${f.master}`)).status, 200);
      for (const table of ['video_in_operations', 'video_in_parts']) assert.equal((await db()(table).where({ video_id: f.master })).length, 0, table);
      assert.equal((await db()('video_assets').whereIn('video_id', Object.values(f))).length, 0);
    });

    it('stored data is purged after the commit by a durable video.purge-blobs job (files, assets, unfinished uploads)', async () => {
      const f = await family();
      const blobs = h.services.blobs;
      const now = h.clock.now();
      // The master's file, a thumbnail of the clip, and the web video of the processed clip.
      await blobs.put(`videos/${f.master}/file`, Buffer.from('master'));
      await recordVideoFile(db(), f.master, { blobKey: `videos/${f.master}/file` }, now);
      await blobs.put(`videos/${f.clip}/thumbnails/0.jpg`, Buffer.from('jpg'));
      await db()('video_assets').insert({
        id: randomUUID(),
        video_id: f.clip,
        kind: 'THUMBNAIL',
        ordinal: 0,
        blob_key: `videos/${f.clip}/thumbnails/0.jpg`,
        content_type: 'image/jpeg',
        size: 3,
        created_at: now,
      });
      await blobs.put(`videos/${f.processedClip}/web.mp4`, Buffer.from('mp4'));
      // Data of a video that is not deleted stays.
      await blobs.put(`videos/${f.processed}/file`, Buffer.from('other'));
      // A second master whose copy was cut short: an unfinished multipart upload holds its parts.
      const cut = await video({ upload: 'FAILED' });
      const upload = await blobs.createUpload(`videos/${cut}/file`, 10, { partSize: 5 });
      await upload.writePart(1, Buffer.from('12345'));
      await db()('video_in_operations').insert({
        video_id: cut,
        source_kind: 'HTTPS',
        source_url: 'https://example.com/v.mov',
        max_connections: 4,
        upload_json: JSON.stringify(upload.descriptor),
        created_at: now,
        updated_at: now,
      });

      assert.equal((await api().delete(`/v1/videos/${f.clip}`)).status, 200);
      assert.equal((await api().delete(`/v1/videos/${f.master}`, [f.processed])).status, 200);
      assert.equal((await api().delete(`/v1/videos/${cut}`)).status, 200);
      // Until a worker runs, the jobs remember what to remove (a crash after the commit loses nothing).
      const queued = await purgeJobs();
      assert.equal(queued.length, 3);
      const keys = queued.flatMap((j: any) => JSON.parse(j.payload).blobKeys as string[]);
      for (const key of [`videos/${f.master}/file`, `videos/${f.clip}/thumbnails/0.jpg`, `videos/${f.processedClip}/web.mp4`]) assert.ok(keys.includes(key), key);
      assert.ok(await blobs.stat(`videos/${f.master}/file`));

      h.startWorker();
      await waitFor('purge jobs done', async () => (await purgeJobs()).every((j: any) => j.status === 'done'));
      for (const key of [`videos/${f.master}/file`, `videos/${f.clip}/thumbnails/0.jpg`, `videos/${f.processedClip}/web.mp4`, `videos/${f.processed}/file`]) {
        assert.equal(await blobs.stat(key), undefined, key);
      }
      await assert.rejects(blobs.resumeUpload(upload.descriptor), /no longer exists/);
      assert.equal(await blobs.stat(`videos/${cut}/file`), undefined);
    });

    it('the purge job succeeds when the blobs and uploads are already gone (it may run twice)', async () => {
      const id = await video({ upload: 'FAILED' });
      const upload = await h.services.blobs.createUpload(`videos/${id}/file`, 4, { partSize: 4 });
      await upload.abort();
      const now = h.clock.now();
      await db()('video_in_operations').insert({
        video_id: id,
        source_kind: 'HTTPS',
        max_connections: 1,
        upload_json: JSON.stringify(upload.descriptor),
        created_at: now,
        updated_at: now,
      });
      assert.equal((await api().delete(`/v1/videos/${id}`)).status, 200);
      h.startWorker();
      const job = await waitFor('purge job finished', async () => (await purgeJobs()).find((j: any) => j.status !== 'queued' && j.status !== 'running'));
      assert.equal(job.status, 'done', job.last_error);
    });
  });

  describe('project rule with real videos', () => {
    it('PROJECT_WITH_VIDEOS_CANNOT_BE_DELETED until its videos are deleted through the API', async () => {
      const p = (await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: 'holiday' })).body.id;
      const master = await video({ projectId: p, upload: 'DONE', ingestion: { status: 'DONE' } });
      await video({ kind: 'CLIP', projectId: p, masterVideoId: master });
      expectError(await api().delete(`/v1/projects/${p}`), 409, 'PROJECT_WITH_VIDEOS_CANNOT_BE_DELETED');
      assert.equal((await api().delete(`/v1/videos/${master}`)).status, 200);
      assert.equal((await api().delete(`/v1/projects/${p}`)).status, 204);
    });
  });
});
