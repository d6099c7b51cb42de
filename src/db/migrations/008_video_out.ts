import type { Knex } from 'knex';

/**
 * Video out: the `output` stage of a video (its latest copy out of the platform), the copy
 * operations to customer buckets with the parts they have sent, and the bytes served by download
 * URLs until they are billed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('videos', (t) => {
    // INITIAL | IN_PROGRESS | DONE | FAILED; null when the video was never copied out (or the
    // failed copy was abandoned).
    t.string('output_status', 16).nullable();
    t.integer('output_progress').notNullable().defaultTo(0);
    t.timestamp('output_updated_at', { useTz: true }).nullable();
    t.string('output_error_code', 64).nullable();
    t.text('output_error_message').nullable();
  });

  // The latest copy of a video to a bucket: one row per video, replaced by the next copy once
  // this one is DONE, removed by abandon and with the video.
  await knex.schema.createTable('video_out_operations', (t) => {
    t.uuid('video_id').primary();
    // Identifies this copy among the copies of the video (billing job id, stale jobs).
    t.uuid('id').notNullable().unique();
    // BUCKET (settings in the request) | OUTPUT_LOCATION
    t.string('target_kind', 16).notNullable();
    t.uuid('output_location_id').nullable();
    // Bucket, endpoint, region and credentials as they were when the copy was created, sealed.
    t.text('sealed_bucket').notNullable();
    t.string('object_key', 1024).notNullable();
    t.bigInteger('size').notNullable();
    t.string('content_type', 127).nullable();
    // The customer's multipart upload ({store, id: UploadId, key, size, partSize}) once created.
    t.text('upload_json').nullable();
    // Runs of the copy (1 for the first, +1 per restart).
    t.integer('attempt').notNullable().defaultTo(1);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });

  // CRC-32C of each part already sent, so a resumed copy sends only the rest.
  await knex.schema.createTable('video_out_parts', (t) => {
    t.uuid('video_id').notNullable();
    t.integer('part_number').notNullable();
    t.bigInteger('crc32c').notNullable();
    t.primary(['video_id', 'part_number']);
  });

  // One row per response served by a download URL (bytes actually sent). Rows are gathered into
  // batches per team and video, and each batch is accrued to billing once (job id = batch).
  await knex.schema.createTable('video_download_usage', (t) => {
    t.uuid('id').primary();
    t.uuid('team_id').notNullable();
    t.uuid('video_id').notNullable();
    t.bigInteger('bytes').notNullable();
    t.timestamp('served_at', { useTz: true }).notNullable();
    t.uuid('batch_id').nullable();
    t.timestamp('billed_at', { useTz: true }).nullable();
    t.index(['batch_id', 'billed_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['video_download_usage', 'video_out_parts', 'video_out_operations']) await knex.schema.dropTableIfExists(table);
  await knex.schema.alterTable('videos', (t) => {
    for (const c of ['output_status', 'output_progress', 'output_updated_at', 'output_error_code', 'output_error_message']) t.dropColumn(c);
  });
}
