import type { Knex } from 'knex';

/**
 * The durable job queue (src/jobs/job-queue.ts): one row per unit of background work. A worker
 * owns a `running` row only while `lease_owner` is its lease token and `lease_expires_at` is in
 * the future; the sweeper requeues rows whose lease expired.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('jobs', (t) => {
    t.uuid('id').primary();
    t.string('kind', 64).notNullable();
    // JSON text, frozen at enqueue time.
    t.text('payload').notNullable();
    // queued | running | done | failed
    t.string('status', 16).notNullable();
    t.timestamp('run_at', { useTz: true }).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.integer('max_attempts').notNullable();
    t.text('last_error').nullable();
    t.string('lease_owner', 200).nullable();
    t.timestamp('lease_expires_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['status', 'run_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('jobs');
}
