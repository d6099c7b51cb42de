import type { Knex } from 'knex';

/**
 * Idempotency keys (src/http/idempotency.ts): one row per caller and `Idempotency-Key`. The
 * primary key is the reservation: of two requests inserting the same (scope, key), in any
 * number of processes, exactly one gets the row. A row without a response is a request in
 * flight, held until `expires_at` (its lease); a row with a response is replayed until
 * `expires_at` (the retention). Rows past `expires_at` are free to take over and are purged.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (t) => {
    // The authenticated caller: `key:<API key id>`, or `user:<user id>` under Basic auth.
    t.string('scope', 64).notNullable();
    t.string('idempotency_key', 255).notNullable();
    // SHA-256 (hex) of method, path with query and canonical JSON body.
    t.string('fingerprint', 64).notNullable();
    // The request that holds the row; only it may store or release the response.
    t.uuid('lease_token').notNullable();
    // Status, replayed headers and body of the first response, sealed (AES-256-GCM); null while
    // the request runs.
    t.text('response').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['scope', 'idempotency_key']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('idempotency_keys');
}
