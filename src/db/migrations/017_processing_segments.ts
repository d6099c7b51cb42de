import type { Knex } from 'knex';

/**
 * Segmented processing (docs/processing.md "Segmented processing"): the parts of a processing job
 * split into segments, one row each (the video segments in order, then the audio pass), with the
 * segment length the split used, each part's progress and, once done, the blob holding its file.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('processing_segments', (t) => {
    t.uuid('video_id').notNullable();
    t.integer('part').notNullable();
    t.string('kind', 8).notNullable();
    t.integer('duration_ms').notNullable();
    t.integer('segment_seconds').notNullable();
    t.string('status', 16).notNullable();
    t.double('progress').notNullable().defaultTo(0);
    t.string('blob_key', 512).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.primary(['video_id', 'part']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('processing_segments');
}
