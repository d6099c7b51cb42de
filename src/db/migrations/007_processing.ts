import type { Knex } from 'knex';

/**
 * Processing: saved and built-in configurations, appraisals (priced estimates that expire), and
 * what a processed video keeps about how it was made.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('processing_configurations', (t) => {
    t.uuid('id').primary();
    // Null for built-in configurations (shared by every team).
    t.uuid('team_id').nullable().references('teams.id').onDelete('CASCADE');
    t.string('name', 47).notNullable();
    t.string('description', 511).nullable();
    // VideoProcessingConfigurationOptions as JSON text.
    t.text('options_json').notNullable();
    t.boolean('builtin').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['team_id', 'created_at']);
  });

  await knex.schema.createTable('processing_appraisals', (t) => {
    t.uuid('id').primary();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable();
    t.uuid('source_video_id').notNullable();
    // The id the processed video gets when the appraisal is accepted (shown in the appraisal).
    t.uuid('video_id').notNullable();
    t.uuid('configuration_id').nullable();
    t.text('options_json').notNullable();
    t.bigInteger('start_ms').notNullable();
    t.bigInteger('end_ms').notNullable();
    // The billing type the appraisal was priced for; accepting under another one is refused.
    t.string('billing_type', 32).notNullable();
    // The estimate and its priced products (JSON), as shown and as charged.
    t.text('appraisal_json').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    // The video accepting it created (an appraisal is accepted once).
    t.uuid('accepted_video_id').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['expires_at']);
  });

  await knex.schema.alterTable('videos', (t) => {
    // The options as applied (with notes on classical equivalents) and the appraisal it was charged by.
    t.text('processing_options_json').nullable();
    t.text('processing_appraisal_json').nullable();
    // The facts ingestion's probe found (duration, size, audio...), which processing plans from.
    t.text('probe_json').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('videos', (t) => {
    t.dropColumn('processing_options_json');
    t.dropColumn('processing_appraisal_json');
    t.dropColumn('probe_json');
  });
  await knex.schema.dropTableIfExists('processing_appraisals');
  await knex.schema.dropTableIfExists('processing_configurations');
}
