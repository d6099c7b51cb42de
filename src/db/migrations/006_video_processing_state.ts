import type { Knex } from 'knex';

/**
 * The processing stage of a video: the free clip's cut (`clip_processing`) now, the processing
 * jobs of derived videos later. Null until processing begins.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('videos', (t) => {
    // INITIAL | IN_PROGRESS | DONE | FAILED
    t.string('processing_status', 16).nullable();
    t.integer('processing_progress').notNullable().defaultTo(0);
    t.integer('processing_eta_seconds').nullable();
    t.timestamp('processing_updated_at', { useTz: true }).nullable();
    t.string('processing_error_code', 64).nullable();
    t.text('processing_error_message').nullable();
    // The time range of the source that was processed (the clip's window).
    t.bigInteger('processing_start_ms').nullable();
    t.bigInteger('processing_end_ms').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('videos', (t) => {
    for (const c of [
      'processing_status',
      'processing_progress',
      'processing_eta_seconds',
      'processing_updated_at',
      'processing_error_code',
      'processing_error_message',
      'processing_start_ms',
      'processing_end_ms',
    ])
      t.dropColumn(c);
  });
}
