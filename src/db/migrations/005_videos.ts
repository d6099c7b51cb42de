import type { Knex } from 'knex';

/**
 * Videos in full (video in, ingestion, the free clip, derived videos) and the video-in copy
 * operations. The `videos` table of 001 gains the state of each stage; processing and video out
 * add their own columns in later migrations.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('videos', (t) => {
    // MASTER (video in) | CLIP (the free 10-second clip) | PROCESSED (processing result)
    t.string('kind', 16).notNullable().defaultTo('MASTER');
    // For derived videos: the master they all come from, and the video they were made from.
    t.uuid('master_video_id').nullable();
    t.uuid('source_video_id').nullable();
    // For clips: their own id; for processed clips: the clip they were made from.
    t.uuid('clip_id').nullable();
    t.boolean('is_sample').notNullable().defaultTo(false);
    t.boolean('full_ingestion').notNullable().defaultTo(false);
    // The video file in platform storage (BlobStore key), once it exists.
    t.string('blob_key', 1024).nullable();
    t.string('file_name', 255).nullable();
    t.bigInteger('file_size').nullable();
    t.string('file_type', 127).nullable();
    t.string('file_container', 127).nullable();
    t.timestamp('file_last_modified', { useTz: true }).nullable();
    t.bigInteger('file_crc32c').nullable();
    // Upload (video in): INITIAL | IN_PROGRESS | DONE | FAILED; null for derived videos.
    t.string('upload_status', 16).nullable();
    t.integer('upload_progress').notNullable().defaultTo(0);
    t.timestamp('upload_updated_at', { useTz: true }).nullable();
    t.string('upload_error_code', 64).nullable();
    t.text('upload_error_message').nullable();
    // Ingestion: null until it begins.
    t.string('ingestion_status', 16).nullable();
    t.integer('ingestion_progress').notNullable().defaultTo(0);
    t.integer('ingestion_eta_seconds').nullable();
    t.timestamp('ingestion_updated_at', { useTz: true }).nullable();
    t.string('ingestion_error_code', 64).nullable();
    t.text('ingestion_error_message').nullable();
    t.boolean('metadata_available').notNullable().defaultTo(false);
    t.boolean('thumbnails_available').notNullable().defaultTo(false);
    t.boolean('full_frames_available').notNullable().defaultTo(false);
    t.boolean('web_video_available').notNullable().defaultTo(false);
    // VideoMetadata and VideoQualityAssessment as JSON text.
    t.text('metadata_json').nullable();
    t.text('quality_json').nullable();
    t.index(['master_video_id']);
    t.index(['source_video_id']);
    t.index(['clip_id']);
  });

  // One row per master video while its copy into the platform exists (kept after DONE, so
  // the status can name its source; removed with the video).
  await knex.schema.createTable('video_in_operations', (t) => {
    t.uuid('video_id').primary();
    // HTTPS | BUCKET | INPUT_LOCATION
    t.string('source_kind', 16).notNullable();
    t.text('source_url').nullable();
    t.uuid('input_location_id').nullable();
    // Ad-hoc bucket source: bucket, region, endpoint and credentials, sealed with the master key.
    t.text('sealed_bucket').nullable();
    t.string('object_key', 1024).nullable();
    t.integer('max_connections').notNullable();
    t.bigInteger('expected_crc32c').nullable();
    t.boolean('skip_checksum').notNullable().defaultTo(false);
    // SourceInfo pinned at the first probe (size, ETag, Last-Modified) as JSON.
    t.text('pinned_json').nullable();
    // The BlobStore UploadDescriptor as JSON, once the upload exists.
    t.text('upload_json').nullable();
    t.integer('attempt').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });

  // CRC-32C of each part already stored, so a restart copies only the rest.
  await knex.schema.createTable('video_in_parts', (t) => {
    t.uuid('video_id').notNullable();
    t.integer('part_number').notNullable();
    t.bigInteger('crc32c').notNullable();
    t.primary(['video_id', 'part_number']);
  });

  // What ingestion made: thumbnails, full frames, the web video.
  await knex.schema.createTable('video_assets', (t) => {
    t.uuid('id').primary();
    t.uuid('video_id').notNullable();
    // THUMBNAIL | FRAME | WEB_VIDEO
    t.string('kind', 16).notNullable();
    t.integer('ordinal').notNullable();
    t.string('blob_key', 1024).notNullable();
    t.string('content_type', 127).notNullable();
    t.bigInteger('size').notNullable();
    t.integer('width').nullable();
    t.integer('height').nullable();
    t.integer('position_ms').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.unique(['video_id', 'kind', 'ordinal']);
  });

  // Team setting: whether video in makes the free 10-second clip (admin CLI changes it).
  await knex.schema.alterTable('teams', (t) => {
    t.boolean('free_clip_enabled').notNullable().defaultTo(true);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('teams', (t) => t.dropColumn('free_clip_enabled'));
  for (const table of ['video_assets', 'video_in_parts', 'video_in_operations']) await knex.schema.dropTableIfExists(table);
  await knex.schema.alterTable('videos', (t) => {
    t.dropIndex(['master_video_id']);
    t.dropIndex(['source_video_id']);
    t.dropIndex(['clip_id']);
    for (const c of [
      'kind',
      'master_video_id',
      'source_video_id',
      'clip_id',
      'is_sample',
      'full_ingestion',
      'blob_key',
      'file_name',
      'file_size',
      'file_type',
      'file_container',
      'file_last_modified',
      'file_crc32c',
      'upload_status',
      'upload_progress',
      'upload_updated_at',
      'upload_error_code',
      'upload_error_message',
      'ingestion_status',
      'ingestion_progress',
      'ingestion_eta_seconds',
      'ingestion_updated_at',
      'ingestion_error_code',
      'ingestion_error_message',
      'metadata_available',
      'thumbnails_available',
      'full_frames_available',
      'web_video_available',
      'metadata_json',
      'quality_json',
    ])
      t.dropColumn(c);
  });
}
