import type { Knex } from 'knex';

/**
 * Webhook listeners (issue 15): a team's events kept for a client that polls for them (the
 * `vidmill webhooks listen` command) instead of being pushed to a public URL.
 *
 * - `webhook_listeners`: the team, the subscribed event types (JSON array), when the listener
 *   ends unless polled (`expires_at`, moved 5 minutes ahead by every poll) and the last
 *   `sequence` handed out.
 * - `webhook_listener_deliveries`: one row per event and listener, written in the event's
 *   transaction with its payload frozen (`attemptCount` is set per hand-out, the signature is
 *   made when polled). `row_id` is the order of insertion; `sequence` is assigned by the poll
 *   that first hands the row out, under the listener's row lock, so sequences follow commit
 *   order and a client acknowledging up to a sequence never skips a row committed late.
 *   `id` is the payload's `id` (the delivery's `eventId`). Rows go with their listener.
 *
 * `listener_id` has no foreign key on purpose: on PostgreSQL the event's insert would take a
 * key-share lock on the listener row, so deleting a listener would wait for every event
 * transaction in flight, and an event transaction that read the listener just before a delete
 * committed would fail on the key check (a stage move rolled back because a developer stopped
 * `vidmill webhooks listen`). Rows of a deleted listener are deleted with it; one written in
 * that race is removed by the expiry sweep.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_listeners', (t) => {
    t.uuid('id').primary();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    // JSON array of WebhookEventType values.
    t.text('event_types').notNullable();
    t.bigInteger('last_sequence').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['team_id', 'expires_at']);
    t.index(['expires_at']);
  });

  await knex.schema.createTable('webhook_listener_deliveries', (t) => {
    t.bigIncrements('row_id');
    t.uuid('id').notNullable().unique();
    t.uuid('listener_id').notNullable();
    // Null until a poll hands the row out for the first time.
    t.bigInteger('sequence').nullable();
    t.string('event_type', 64).notNullable();
    // WebhookEventPayload frozen at fan-out (attemptCount is filled in per hand-out).
    t.text('payload').notNullable();
    t.integer('attempt_count').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.unique(['listener_id', 'sequence']);
    t.index(['listener_id', 'row_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_listener_deliveries');
  await knex.schema.dropTableIfExists('webhook_listeners');
}
