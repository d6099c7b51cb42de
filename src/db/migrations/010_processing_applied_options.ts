import type { Knex } from 'knex';

/**
 * What a processing job applied (the options resolved and the output they make), next to the
 * options as requested: planned when the job is accepted, replaced when the job plans.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('videos', (t) => {
    t.text('processing_applied_options_json').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('videos', (t) => {
    t.dropColumn('processing_applied_options_json');
  });
}
