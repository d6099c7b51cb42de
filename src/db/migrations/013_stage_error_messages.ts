import type { Knex } from 'knex';

/**
 * Failure reasons become visible: every stage's `error` (code and message) is now shown in the
 * video's state and in its `*.failed` webhook event. Messages stored before this migration could
 * hold internal detail (ffmpeg's stderr with file paths, exception texts), so they are replaced
 * by one fixed sentence; the code is kept, and the ingestion code for a file that is not a video
 * takes its new name. No column is added: the stages have had `<stage>_error_code` and
 * `<stage>_error_message` since 005, 006 and 008.
 */
const EARLIER = 'This failure was recorded by an earlier version, which kept no message to show; the error code says what failed.';

export async function up(knex: Knex): Promise<void> {
  for (const stage of ['upload', 'ingestion', 'processing', 'output']) {
    await knex('videos')
      .whereNotNull(`${stage}_error_code`)
      .update({ [`${stage}_error_message`]: EARLIER });
  }
  await knex('videos').where({ ingestion_error_code: 'UNSUPPORTED_CONTENT_TYPE' }).update({ ingestion_error_code: 'INGESTION_UNREADABLE_MEDIA' });
}

export async function down(): Promise<void> {
  // The replaced messages are gone on purpose; nothing to restore.
}
