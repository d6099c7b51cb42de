import type { Knex } from 'knex';

/**
 * Storage billing (issue 18): what each team stores over time and the charges made for it, and
 * the history of deleted webhooks kept for its retention.
 *
 * - `storage_meters`: per team, the bytes stored now and since when (the open interval).
 * - `storage_usage`: closed intervals of constant stored bytes within one UTC month, appended
 *   when the bytes change, at month boundaries and when usage is billed; `charge_id` is set in
 *   the transaction that bills them.
 * - `storage_charges`: one row per billed batch, with the running totals of its team, month and
 *   billing type (usage in GB-months and what was charged), so each batch charges the rounded
 *   running total minus what was charged before.
 * - `webhooks.deleted_at`: a deleted webhook's row stays (hidden from the webhook operations)
 *   while its events are kept; the history sweep removes it with the last of them.
 *
 * `storage_meters` and `storage_usage` have no foreign key to `teams` on purpose: on PostgreSQL
 * such an insert takes a key-share lock on the team row, and a storage change holding the meter
 * must never wait for the team row that a storage charge holds while it waits for the meter.
 * (Teams are never deleted.)
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('storage_meters', (t) => {
    t.uuid('team_id').primary();
    t.bigInteger('bytes').notNullable();
    // Start of the open interval: usage before it is in storage_usage.
    t.timestamp('since', { useTz: true }).notNullable();
  });

  await knex.schema.createTable('storage_charges', (t) => {
    t.bigIncrements('seq');
    t.uuid('id').notNullable().unique();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    // First instant of the UTC month the usage belongs to.
    t.timestamp('month_start', { useTz: true }).notNullable();
    t.string('billing_type', 32).notNullable();
    // This batch's usage, and the running total of the team's month under this billing type.
    t.double('usage_gb_months').notNullable();
    t.double('total_gb_months').notNullable();
    // Charged by this batch and the running total: micro-USD (WALLET) or credits (CLOUD_MARKETPLACE).
    t.bigInteger('amount').notNullable();
    t.bigInteger('total_amount').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['team_id', 'month_start', 'billing_type', 'seq']);
  });

  await knex.schema.createTable('storage_usage', (t) => {
    t.bigIncrements('seq');
    t.uuid('team_id').notNullable();
    t.timestamp('month_start', { useTz: true }).notNullable();
    t.timestamp('from_at', { useTz: true }).notNullable();
    t.timestamp('to_at', { useTz: true }).notNullable();
    t.bigInteger('bytes').notNullable();
    // The charge that billed it; set in that charge's transaction.
    t.uuid('charge_id').nullable().references('storage_charges.id');
    t.index(['team_id', 'charge_id', 'seq']);
    t.index(['charge_id']);
  });

  await knex.schema.alterTable('webhooks', (t) => {
    t.timestamp('deleted_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhooks', (t) => t.dropColumn('deleted_at'));
  for (const table of ['storage_usage', 'storage_charges', 'storage_meters']) await knex.schema.dropTableIfExists(table);
}
