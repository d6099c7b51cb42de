import type { Knex } from 'knex';

/**
 * Signed webhooks: subscriptions, signing keys (private halves sealed), domain events, one
 * delivery row per event and webhook (payload frozen), and one row per delivery attempt.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhooks', (t) => {
    t.uuid('id').primary();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.boolean('active').notNullable();
    t.string('name', 47).notNullable();
    t.string('description', 255).nullable();
    t.text('url').notNullable();
    t.integer('rate_limit_per_second').notNullable();
    t.integer('max_total_retry_delay_minutes').notNullable();
    // JSON array of WebhookEventType values.
    t.text('event_types').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['team_id', 'created_at']);
    t.index(['team_id', 'active']);
  });

  await knex.schema.createTable('webhook_signing_keys', (t) => {
    t.uuid('id').primary();
    t.string('algorithm', 8).notNullable().defaultTo('EC');
    // base64 DER SubjectPublicKeyInfo.
    t.text('public_key').notNullable();
    // PKCS#8 PEM sealed with the master key (AES-256-GCM), bound to the key id.
    t.text('private_key_sealed').notNullable();
    // Set when a newer key replaced this one; the key keeps verifying until expires_at.
    t.timestamp('retired_at', { useTz: true }).nullable();
    t.timestamp('expires_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['retired_at']);
  });

  await knex.schema.createTable('webhook_events', (t) => {
    t.uuid('id').primary();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('event_type', 64).notNullable();
    t.timestamp('occurred_at', { useTz: true }).notNullable();
    // WebhookEventData as JSON text.
    t.text('data').notNullable();
    t.boolean('test').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['team_id', 'test', 'created_at']);
    t.index(['created_at']);
  });

  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.uuid('id').primary();
    t.uuid('event_id').notNullable().references('webhook_events.id').onDelete('CASCADE');
    t.uuid('webhook_id').notNullable().references('webhooks.id').onDelete('CASCADE');
    t.uuid('team_id').notNullable();
    t.string('event_type', 64).notNullable();
    t.timestamp('occurred_at', { useTz: true }).notNullable();
    t.boolean('test').notNullable().defaultTo(false);
    // WebhookEventPayload frozen at fan-out (attemptCount is filled in per attempt).
    t.text('payload').notNullable();
    // 'pending' | 'succeeded' | 'failed'
    t.string('status', 16).notNullable();
    t.timestamp('next_attempt_at', { useTz: true }).nullable();
    // Start of the current attempt series; the retry window counts from here.
    t.timestamp('series_started_at', { useTz: true }).nullable();
    t.integer('attempt_count').notNullable().defaultTo(0);
    t.string('lease_owner', 64).nullable();
    t.timestamp('lease_expires_at', { useTz: true }).nullable();
    t.boolean('successful').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['status', 'next_attempt_at']);
    t.index(['team_id', 'created_at']);
    t.index(['webhook_id']);
    t.index(['event_id']);
    t.index(['created_at']);
  });

  await knex.schema.createTable('webhook_delivery_attempts', (t) => {
    t.uuid('id').primary();
    t.uuid('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.integer('attempt_number').notNullable();
    t.timestamp('requested_at', { useTz: true }).notNullable();
    t.integer('response_time_millis').notNullable();
    t.integer('status_code').notNullable();
    t.string('response_body', 100).nullable();
    t.string('error_code', 64).nullable();
    t.string('error_message', 500).nullable();
    t.timestamp('response_retry_at', { useTz: true }).nullable();
    // JSON object, values cut to 50 characters; failed attempts only.
    t.text('response_headers').nullable();
    t.index(['delivery_id', 'attempt_number']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['webhook_delivery_attempts', 'webhook_deliveries', 'webhook_events', 'webhook_signing_keys', 'webhooks']) {
    await knex.schema.dropTableIfExists(table);
  }
}
