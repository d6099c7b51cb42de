import type { Knex } from 'knex';

/**
 * PostgreSQL: the shared request budgets (`rate_limits`: per API key, per sign-in address and
 * e-mail, per webhook) become an UNLOGGED table. Every API request and every webhook delivery
 * updates a row there, and on a logged table each of those commits waited for a WAL flush (an
 * fdatasync): 0.23-0.29 ms per update here against 0.11-0.13 ms unlogged. The counters are
 * minute windows: after a crash PostgreSQL empties an unlogged table, and standbys do not have it,
 * so a crash or a failover starts every budget afresh, which costs at most one minute's extra
 * requests. Nothing on SQLite (its budgets are in memory).
 */
export async function up(knex: Knex): Promise<void> {
  if ((knex.client as Knex.Client).config.client !== 'pg') return;
  await knex.raw('alter table rate_limits set unlogged');
}

export async function down(knex: Knex): Promise<void> {
  if ((knex.client as Knex.Client).config.client !== 'pg') return;
  await knex.raw('alter table rate_limits set logged');
}
