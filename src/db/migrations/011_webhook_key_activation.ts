import type { Knex } from 'knex';

/**
 * Webhook signing keys are published before they sign: `activates_at` is when a key starts
 * signing (earlier rows: their creation). `retired_at` of the key it replaces is set to the same
 * instant when the new key is published, so the switch needs no further write.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_signing_keys', (t) => {
    t.timestamp('activates_at', { useTz: true }).nullable();
  });
  await knex('webhook_signing_keys').update({ activates_at: knex.ref('created_at') });
  await knex.schema.alterTable('webhook_signing_keys', (t) => {
    t.index(['activates_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_signing_keys', (t) => {
    t.dropIndex(['activates_at']);
    t.dropColumn('activates_at');
  });
}
