import type { Knex } from 'knex';

/**
 * Time left of the two copies: video in (`upload`) and video out (`output`) report `etaSeconds`
 * like ingestion and processing (005, 006), from the bytes copied (src/shared/progress-eta.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('videos', (t) => {
    t.integer('upload_eta_seconds').nullable();
    t.integer('output_eta_seconds').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('videos', (t) => {
    t.dropColumn('upload_eta_seconds');
    t.dropColumn('output_eta_seconds');
  });
}
