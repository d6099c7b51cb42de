import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const pg = (knex.client as Knex.Client).config.client === 'pg';

  await knex.schema.createTable('users', (t) => {
    t.uuid('id').primary();
    t.string('email', 320).notNullable().unique();
    t.string('name', 200).notNullable();
    t.string('password_hash', 300).notNullable();
    t.boolean('has_confirmed_email').notNullable().defaultTo(false);
    t.integer('failed_logins').notNullable().defaultTo(0);
    t.timestamp('locked_until', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });

  await knex.schema.createTable('teams', (t) => {
    t.uuid('id').primary();
    t.string('name', 47).notNullable();
    t.boolean('api_enabled').notNullable().defaultTo(true);
    t.string('billing_type', 32).notNullable().defaultTo('WALLET');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });

  await knex.schema.createTable('memberships', (t) => {
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('role', 16).notNullable().defaultTo('member');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.primary(['team_id', 'user_id']);
    t.index(['user_id']);
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('name', 100).notNullable();
    t.string('description', 500).nullable();
    t.boolean('active').notNullable();
    // SHA-256 of the full key (hex). The key itself is never stored.
    t.string('digest', 64).notNullable().unique();
    t.string('last_chars', 3).notNullable();
    t.integer('key_length').notNullable();
    // Last successful authentication, kept at day precision (written at most once a day).
    t.timestamp('last_used_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['user_id', 'created_at']);
  });

  await knex.schema.createTable('projects', (t) => {
    t.uuid('id').primary();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('name', 47).notNullable();
    t.boolean('is_sample').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['team_id', 'created_at']);
  });

  await knex.schema.createTable('bucket_locations', (t) => {
    t.uuid('id').primary();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('direction', 6).notNullable(); // 'input' | 'output'
    t.string('name', 100).notNullable();
    t.string('bucket', 63).notNullable();
    t.string('endpoint', 2048).nullable();
    t.string('region', 64).nullable();
    t.boolean('force_path_style').notNullable().defaultTo(false);
    // AES-256-GCM sealed credentials and their last three characters for display.
    t.text('access_key_sealed').notNullable();
    t.text('secret_key_sealed').notNullable();
    t.string('access_key_last_chars', 3).notNullable();
    t.integer('access_key_length').notNullable();
    t.string('secret_key_last_chars', 3).notNullable();
    t.integer('secret_key_length').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['direction', 'team_id', 'created_at']);
  });

  // Videos are filled in by the video-in work; projects need the table to refuse deleting
  // a project that still holds videos.
  await knex.schema.createTable('videos', (t) => {
    t.uuid('id').primary();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().references('projects.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.string('name', 255).notNullable();
    t.string('description', 511).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['team_id', 'created_at']);
    t.index(['project_id']);
  });

  if (pg) {
    // Shared request budget of every API process (rate-limiter-flexible's Postgres store).
    await knex.schema.createTable('rate_limits', (t) => {
      t.string('key', 255).primary();
      t.integer('points').notNullable().defaultTo(0);
      t.bigInteger('expire').nullable();
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['rate_limits', 'videos', 'bucket_locations', 'projects', 'api_keys', 'memberships', 'teams', 'users']) {
    await knex.schema.dropTableIfExists(table);
  }
}
