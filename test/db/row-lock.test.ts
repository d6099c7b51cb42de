/**
 * `lockRowForUpdate` (src/db/database.ts) serialises writers of one aggregate without
 * deadlocking with rows that reference it. The crash soak (test/scenarios/crash-soak.test.ts)
 * found the deadlock: two appraisals of one team accepted at once; each transaction inserted its
 * video (a foreign key to the team: KEY SHARE on the team's row) and then locked the team for its
 * ledger charge. With `FOR UPDATE` each waited for the other's KEY SHARE, PostgreSQL broke the
 * deadlock by failing one, and that accept answered 500.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import { lockRowForUpdate } from '../../src/db/database';
import { createTestDatabase, TEST_DIALECT, TestDatabase } from '../helpers/database';

const describeOnPostgres = TEST_DIALECT === 'postgres' ? describe : describe.skip;

describeOnPostgres(`lockRowForUpdate (${TEST_DIALECT === 'postgres' ? 'postgres' : 'skipped on SQLite: one writer at a time, the lock is a no-op there'})`, () => {
  let database: TestDatabase;
  const teamId = randomUUID();

  before(async () => {
    database = await createTestDatabase();
    const now = new Date();
    await database.db('teams').insert({ id: teamId, name: 'Locked team', billing_type: 'WALLET', created_at: now, updated_at: now });
  });
  after(() => database.drop());

  /** A row that references the team (what a new video or event is), inserted in `trx`. */
  const referenceTeam = (trx: Knex.Transaction) =>
    trx('webhook_events').insert({ id: randomUUID(), team_id: teamId, event_type: 'video_in.done', occurred_at: new Date(), data: '{}', test: false, created_at: new Date() });

  it('two transactions that each inserted a row referencing the team both get the lock, one after the other', async () => {
    const first = await database.db.transaction();
    const second = await database.db.transaction();
    try {
      await referenceTeam(first);
      await referenceTeam(second);
      const order: string[] = [];
      const a = lockRowForUpdate(first, 'teams', teamId).then(() => order.push('first'));
      await sleep(50);
      const b = lockRowForUpdate(second, 'teams', teamId).then(() => order.push('second'));
      await a;
      // The second waits for the first to end (PostgreSQL's deadlock check runs after 1 s).
      await sleep(1_500);
      assert.deepEqual(order, ['first'], 'the second locker waits while the first holds the row');
      await first.commit();
      await b;
      assert.deepEqual(order, ['first', 'second']);
      await second.commit();
    } finally {
      if (!first.isCompleted()) await first.rollback().catch(() => undefined);
      if (!second.isCompleted()) await second.rollback().catch(() => undefined);
    }
    assert.equal((await database.db('webhook_events').where({ team_id: teamId })).length, 2);
  });
});
