/**
 * The one after-commit (src/db/after-commit.ts) and the two places that wake listeners with it:
 * the job queue's onEnqueue and the webhook events' onEventsRecorded. A callback registered in a
 * savepoint runs once the OUTERMOST transaction commits, never at the savepoint's release when the
 * outer transaction then rolls back.
 */
import { strict as assert } from 'node:assert';
import { afterCommit } from '../../src/db/after-commit';
import { JobQueue } from '../../src/jobs/job-queue';
import { ManualClock } from '../../src/shared/clock';
import { createTestDatabase, TEST_DIALECT, TestDatabase } from '../helpers/database';

const settle = () => new Promise((r) => setImmediate(r));

describe(`afterCommit (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    await database.drop();
  });

  it('on the pool: at once', () => {
    let ran = 0;
    afterCommit(database.db, () => ran++);
    assert.equal(ran, 1);
  });

  it('in a transaction: after the commit, not before; never after a rollback', async () => {
    const ran: string[] = [];
    await database.db.transaction(async (trx) => {
      afterCommit(trx, () => ran.push('committed'));
      await settle();
      assert.deepEqual(ran, [], 'not before the commit');
    });
    await database.db
      .transaction(async (trx) => {
        afterCommit(trx, () => ran.push('rolled back'));
        throw new Error('rollback');
      })
      .catch(() => undefined);
    await settle();
    assert.deepEqual(ran, ['committed']);
  });

  it('in a savepoint released, then the outer transaction rolls back: never', async () => {
    const ran: string[] = [];
    await database.db
      .transaction(async (trx) => {
        await trx.transaction(async (savepoint) => {
          afterCommit(savepoint, () => ran.push('savepoint'));
        });
        await settle();
        assert.deepEqual(ran, [], 'not at the release of the savepoint');
        throw new Error('outer rollback');
      })
      .catch(() => undefined);
    await settle();
    assert.deepEqual(ran, []);
  });

  it('in a savepoint released, then the outer transaction commits: once, after the commit', async () => {
    const ran: string[] = [];
    await database.db.transaction(async (trx) => {
      await trx.transaction(async (savepoint) => {
        afterCommit(savepoint, () => ran.push('savepoint'));
      });
      await settle();
      assert.deepEqual(ran, []);
    });
    await settle();
    assert.deepEqual(ran, ['savepoint']);
  });

  it('in a savepoint rolled back, the outer transaction committed: never', async () => {
    const ran: string[] = [];
    await database.db.transaction(async (trx) => {
      await trx
        .transaction(async (savepoint) => {
          afterCommit(savepoint, () => ran.push('savepoint'));
          throw new Error('savepoint rollback');
        })
        .catch(() => undefined);
    });
    await settle();
    assert.deepEqual(ran, []);
  });

  it('the job queue announces a job enqueued in a savepoint only when the outer transaction commits', async () => {
    const queue = new JobQueue(database.db, new ManualClock('2026-03-01T12:00:00Z'));
    const heard: string[] = [];
    queue.onEnqueue((kind) => heard.push(kind));
    await database.db
      .transaction(async (trx) => {
        await trx.transaction((savepoint) => queue.enqueue(savepoint, { kind: 'after-commit.rolled-back', payload: {} }));
        await settle();
        throw new Error('outer rollback');
      })
      .catch(() => undefined);
    await database.db.transaction(async (trx) => {
      await trx.transaction((savepoint) => queue.enqueue(savepoint, { kind: 'after-commit.committed', payload: {} }));
      await settle();
      assert.deepEqual(heard, []);
    });
    await settle();
    assert.deepEqual(heard, ['after-commit.committed']);
    await database.db('jobs').where('kind', 'like', 'after-commit.%').delete();
  });
});
