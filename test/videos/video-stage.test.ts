/**
 * VideoStage as the only writer of video rows outside the videos feature (issue 26): each write
 * a stage's work makes, what it leaves in the row, and (checked by the type check of the whole
 * project, test/contract/contract.test.ts) that a stage cannot make another stage's writes.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { findVideo, VideoStage } from '../../src/features/videos';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness } from '../helpers/harness';
import { recordStatements } from '../helpers/statements';

describe(`VideoStage: the writer of video rows for the other features (${TEST_DIALECT})`, () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  it('the row a stage creates, then its file, size, CRC-32C and description in one statement', async () => {
    const u = await h.user();
    const projectId = (await h.request.get('/api/v1/projects/default').set('X-API-Key', u.apiKey)).body.id;
    const db = h.database.db;
    const now = h.clock.now();
    const upload = new VideoStage(db, h.clock, 'upload');
    const id = randomUUID();
    await upload.create(db, { id, teamId: u.teamId, projectId, userId: u.userId, name: 'a.mp4', uploadStatus: 'IN_PROGRESS', createdAt: now });
    const file = { name: 'a.mp4', size: 1234, type: 'video/mp4', containerName: 'MP4', lastModified: new Date('2026-01-02T03:04:05Z') };
    const recorder = recordStatements(db);
    const { statements } = await recorder.during(() => upload.recordFile(db, id, { blobKey: `videos/${id}/file`, crc32c: 99, size: 1234, file }, now)).finally(() => recorder.stop());
    assert.deepEqual(
      statements.map((s) => s.sql.split(' set ')[0]),
      [TEST_DIALECT === 'postgres' ? 'update "videos"' : 'update `videos`'],
      'one update of the row',
    );
    const v = await findVideo(db, id);
    assert.equal(v?.blobKey, `videos/${id}/file`);
    assert.equal(v?.crc32c, 99);
    assert.deepEqual({ ...v?.file, lastModified: v?.file?.lastModified.toISOString() }, { ...file, lastModified: file.lastModified.toISOString() });
  });

  it("each stage makes its own writes only (a compile-time check: the other stages' calls do not type-check)", () => {
    const stage = <S extends 'upload' | 'ingestion' | 'processing' | 'output'>(name: S) => new VideoStage(h.database.db, h.clock, name);
    // Built and not called: the type check is the test.
    const calls = [
      // @ts-expect-error ingestion creates no video (video in, a processing or the free clip's cut do)
      () => stage('ingestion').create(h.database.db, {} as never),
      // @ts-expect-error the output stage records no file of the video
      () => stage('output').recordFile(h.database.db, 'id', { blobKey: 'k' }, new Date()),
      // @ts-expect-error processing does not record ingestion's facts
      () => stage('processing').recordFacts('id', {}),
      // @ts-expect-error ingestion does not record a processing's applied options
      () => stage('ingestion').recordApplied('id', {}),
      // @ts-expect-error video in does not record a derived video's source range
      () => stage('upload').recordSourceRange(h.database.db, 'id', { startMs: 0, endMs: 1 }, new Date()),
      // @ts-expect-error only the output stage gives up an output
      () => stage('processing').clearOutput(h.database.db, 'id', new Date()),
    ];
    assert.equal(calls.length, 6);
  });
});
