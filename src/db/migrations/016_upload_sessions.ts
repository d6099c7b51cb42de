import type { Knex } from 'knex';

/**
 * Direct resumable uploads (tus 1.0, docs/uploads.md): a video-in operation of source kind
 * `UPLOAD` keeps its tus upload id, when the session expires and when its last byte arrived;
 * every video-in copy reports the bytes received so far (`bytesTransferred`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('videos', (t) => {
    t.bigInteger('upload_bytes').nullable();
  });
  await knex.schema.alterTable('video_in_operations', (t) => {
    t.string('tus_upload_id', 64).nullable();
    t.timestamp('upload_expires_at', { useTz: true }).nullable();
    t.timestamp('upload_received_at', { useTz: true }).nullable();
    t.unique(['tus_upload_id']);
    t.index(['upload_expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('video_in_operations', (t) => {
    t.dropIndex(['upload_expires_at']);
    t.dropUnique(['tus_upload_id']);
    t.dropColumn('tus_upload_id');
    t.dropColumn('upload_expires_at');
    t.dropColumn('upload_received_at');
  });
  await knex.schema.alterTable('videos', (t) => t.dropColumn('upload_bytes'));
}
