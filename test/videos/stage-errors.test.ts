import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import * as m013 from '../../src/db/migrations/013_stage_error_messages';
import { findVideo, mediaStageError, stageError } from '../../src/features/videos';
import { insertVideo, STAGE_ERRORS, videoStageWrites } from '../../src/features/videos/testing';
import { MediaProcessError, MediaTimeoutError, UnsupportedMediaError } from '../../src/media';
import { BadRequestError } from '../../src/shared/errors';
import { TEST_DIALECT } from '../helpers/database';
import { assertStageError, createHarness, Harness } from '../helpers/harness';

describe(`Stage errors (${TEST_DIALECT})`, () => {
  it('every code has a fixed message with no internal detail', () => {
    for (const [stage, codes] of Object.entries(STAGE_ERRORS)) {
      for (const [code, message] of Object.entries(codes)) {
        assertStageError({ errorCode: code, message }, code);
        assert.deepEqual(stageError(stage as keyof typeof STAGE_ERRORS, code as never), { code, message }, `${stage}.${code}`);
      }
    }
  });

  it('media failures: not video, time limit, anything else; a processing DomainError keeps its code and message', () => {
    const stderr = new MediaProcessError('ffmpeg exited with code 1: /tmp/vidmill/work/ingest-1/file: Invalid data', 1, null, '/tmp/vidmill/work/ingest-1/file: Invalid data');
    assert.equal(mediaStageError('ingestion', new UnsupportedMediaError('ffprobe cannot read /work/x/file')).code, 'INGESTION_UNREADABLE_MEDIA');
    assert.equal(mediaStageError('ingestion', new MediaTimeoutError('ffmpeg timed out', 1000)).code, 'INGESTION_TIMED_OUT');
    assert.deepEqual(mediaStageError('ingestion', stderr), stageError('ingestion', 'INGESTION_FAILED'));
    assert.equal(mediaStageError('clip', new MediaTimeoutError('x', 1)).code, 'CLIP_TIMED_OUT');
    assert.equal(mediaStageError('clip', stderr).code, 'CLIP_PROCESSING_FAILED');
    assert.equal(mediaStageError('processing', stderr).code, 'PROCESSING_FAILED');
    assert.equal(mediaStageError('processing', new MediaTimeoutError('x', 1)).code, 'PROCESSING_TIMED_OUT');
    const refused = new BadRequestError('UNSUPPORTED_PROCESSING_OPTION', 'filters.denoiser: not supported by this installation (no nlmeans)');
    assert.deepEqual(mediaStageError('processing', refused), { code: refused.errorCode, message: refused.message });
  });

  describe('migration 009', () => {
    let h: Harness;
    before(async () => {
      h = await createHarness();
    });
    after(() => h.close());

    it('replaces the messages stored before failures were shown, keeps the codes, renames the unreadable-media code', async () => {
      const u = await h.user();
      const projectId = (await h.request.get('/api/v1/projects/default').set('X-API-Key', u.apiKey)).body.id;
      const id = randomUUID();
      const now = h.clock.now();
      await insertVideo(h.database.db, { id, teamId: u.teamId, projectId, userId: u.userId, name: 'old', uploadStatus: 'DONE', createdAt: now });
      await videoStageWrites.updateIngestion(
        h.database.db,
        id,
        { status: 'FAILED', error: { code: 'UNSUPPORTED_CONTENT_TYPE', message: 'ffprobe cannot read /var/lib/vidmill/work/ingest-1/file: Invalid data' } },
        now,
      );
      await m013.up(h.database.db);
      const v = await findVideo(h.database.db, id);
      assert.equal(v?.ingestion?.error?.code, 'INGESTION_UNREADABLE_MEDIA');
      assertStageError({ errorCode: v?.ingestion?.error?.code, message: v?.ingestion?.error?.message }, 'INGESTION_UNREADABLE_MEDIA');
      const state = (await h.request.get(`/api/v1/videos/${id}`).set('X-API-Key', u.apiKey)).body.ingestion.ingestionState;
      assert.equal(state.error.errorCode, 'INGESTION_UNREADABLE_MEDIA');
    });
  });
});
