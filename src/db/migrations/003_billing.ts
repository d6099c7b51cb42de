import type { Knex } from 'knex';

/**
 * Billing: wallet billing periods and ledger, per-period aggregates, cloud-marketplace agreement
 * history, credits usage, and the history of billing-type switches. Money is integer micro-USD
 * (BIGINT) or whole credits; rows are appended, never edited (periods only get `ended_at`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('billing_periods', (t) => {
    t.uuid('id').primary();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.timestamp('ended_at', { useTz: true }).nullable();
    t.index(['team_id', 'created_at']);
    t.index(['ended_at']);
  });

  await knex.schema.createTable('ledger_transactions', (t) => {
    t.bigIncrements('seq');
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('period_id').notNullable().references('billing_periods.id').onDelete('CASCADE');
    t.string('balance_kind', 16).notNullable(); // 'processing' | 'utilities'
    t.string('type', 16).notNullable(); // PROCESSING | UTILITIES
    t.string('category', 16).notNullable();
    t.bigInteger('amount_micros').notNullable();
    t.bigInteger('balance_micros').notNullable(); // running balance of balance_kind after this row
    t.string('adjustment_type', 40).nullable();
    t.string('reason', 500).nullable();
    t.uuid('video_id').nullable();
    t.uuid('source_video_id').nullable();
    t.text('products').nullable(); // JSON: priced products
    t.decimal('discount_percentage', 6, 2).nullable();
    t.string('job_id', 200).nullable().unique(); // idempotent charges and refunds
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['period_id', 'created_at', 'seq']);
    t.index(['team_id', 'balance_kind', 'seq']);
    t.index(['period_id', 'video_id']);
  });

  // Per-category lines of each transaction (a processing charge spans several categories);
  // totals over a filtered set are a GROUP BY over this table's (period_id, created_at) index.
  await knex.schema.createTable('ledger_lines', (t) => {
    t.bigIncrements('seq');
    t.bigInteger('transaction_seq').notNullable().references('ledger_transactions.seq').onDelete('CASCADE');
    t.uuid('period_id').notNullable().references('billing_periods.id').onDelete('CASCADE');
    t.string('type', 16).notNullable();
    t.string('category', 16).notNullable();
    t.bigInteger('amount_micros').notNullable();
    t.uuid('video_id').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['period_id', 'created_at']);
    t.index(['transaction_seq']);
  });

  // One row per (period, type, category), updated in the same transaction as each ledger insert,
  // so the totals of a whole period are read without touching its transactions.
  await knex.schema.createTable('ledger_period_totals', (t) => {
    t.uuid('period_id').notNullable().references('billing_periods.id').onDelete('CASCADE');
    t.string('type', 16).notNullable();
    t.string('category', 16).notNullable();
    t.bigInteger('credit_micros').notNullable().defaultTo(0);
    t.bigInteger('debit_micros').notNullable().defaultTo(0);
    t.primary(['period_id', 'type', 'category']);
  });

  // Transaction count and time span per (period, type), maintained like the totals.
  await knex.schema.createTable('ledger_period_counts', (t) => {
    t.uuid('period_id').notNullable().references('billing_periods.id').onDelete('CASCADE');
    t.string('type', 16).notNullable();
    t.bigInteger('row_count').notNullable().defaultTo(0);
    t.timestamp('first_at', { useTz: true }).notNullable();
    t.timestamp('last_at', { useTz: true }).notNullable();
    t.primary(['period_id', 'type']);
  });

  await knex.schema.createTable('marketplace_agreement_events', (t) => {
    t.bigIncrements('seq');
    t.string('agreement_id', 128).notNullable();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('status', 32).notNullable();
    t.string('license_id', 300).notNullable();
    t.string('offer_id', 200).notNullable();
    t.string('product_id', 200).notNullable();
    t.string('product_name', 200).notNullable();
    t.string('buyer_account_id', 64).notNullable();
    t.string('seller_account_id', 64).notNullable();
    t.string('agreement_intent', 64).nullable();
    t.string('agreement_status', 64).nullable();
    t.timestamp('acceptance_time', { useTz: true }).notNullable();
    t.timestamp('start_time', { useTz: true }).notNullable();
    t.timestamp('setup_completed_at', { useTz: true }).notNullable();
    t.timestamp('cancellation_requested_at', { useTz: true }).nullable();
    t.timestamp('license_deprovisioned_at', { useTz: true }).nullable();
    t.timestamp('effective_from_hour', { useTz: true }).notNullable();
    t.string('replaces_agreement_id', 128).nullable();
    t.string('replaced_by_agreement_id', 128).nullable();
    t.string('reassigned_from_agreement_id', 128).nullable();
    t.string('reassigned_to_agreement_id', 128).nullable();
    t.timestamp('reassigned_at', { useTz: true }).nullable();
    t.string('note', 500).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['agreement_id', 'seq']);
    t.index(['team_id', 'seq']);
  });

  await knex.schema.createTable('credits_usage', (t) => {
    t.bigIncrements('seq');
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('agreement_id', 128).nullable();
    t.string('type', 16).notNullable();
    t.string('category', 16).notNullable();
    t.bigInteger('credits').notNullable();
    t.uuid('video_id').nullable();
    t.uuid('source_video_id').nullable();
    t.text('products').nullable();
    t.string('adjustment_type', 40).nullable();
    t.string('reason', 500).nullable();
    t.string('job_id', 200).nullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['team_id', 'created_at', 'seq']);
  });

  await knex.schema.createTable('credits_usage_lines', (t) => {
    t.bigIncrements('seq');
    t.bigInteger('usage_seq').notNullable().references('credits_usage.seq').onDelete('CASCADE');
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('type', 16).notNullable();
    t.string('category', 16).notNullable();
    t.bigInteger('credits').notNullable();
    t.uuid('video_id').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['team_id', 'created_at']);
  });

  await knex.schema.createTable('billing_type_changes', (t) => {
    t.bigIncrements('seq');
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('from_type', 32).notNullable();
    t.string('to_type', 32).notNullable();
    t.string('reason', 500).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['team_id', 'seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'billing_type_changes',
    'credits_usage_lines',
    'credits_usage',
    'marketplace_agreement_events',
    'ledger_period_counts',
    'ledger_period_totals',
    'ledger_lines',
    'ledger_transactions',
    'billing_periods',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
