import { strict as assert } from 'node:assert';
import { Db, openDatabase } from '../../src/db/database';
import { ClaimedJob, JobQueue } from '../../src/jobs/job-queue';
import { ManualClock } from '../../src/shared/clock';
import { createTestDatabase, TEST_DIALECT, TestDatabase } from '../helpers/database';
import { scaled } from '../helpers/timeouts';

const LEASE = 30_000;

describe(`Durable job queue (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let clock: ManualClock;
  let queue: JobQueue;

  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    await database.drop();
  });
  beforeEach(async () => {
    await database.db('jobs').delete();
    clock = new ManualClock('2026-03-01T12:00:00Z');
    queue = new JobQueue(database.db, clock, { defaultMaxAttempts: 3, retry: { baseMs: 1_000, maxMs: 60_000 }, random: () => 0.5 });
  });

  const claimOrFail = async (worker = 'w1', kinds = ['test'], q = queue): Promise<ClaimedJob<any>> => {
    const job = await q.claim<any>(worker, kinds, LEASE);
    assert.ok(job, 'expected a job to claim');
    return job;
  };

  it('enqueue writes a queued row with the payload as JSON; claim takes it with a lease and counts the attempt', async () => {
    const id = await queue.enqueue(database.db, { kind: 'test', payload: { videoId: 'v1', n: 2 } });
    const queued = await queue.get(id);
    assert.equal(queued?.status, 'queued');
    assert.deepEqual(queued?.payload, { videoId: 'v1', n: 2 });
    assert.equal(queued?.attempts, 0);
    assert.equal(queued?.maxAttempts, 3);
    assert.equal(queued?.runAt.toISOString(), '2026-03-01T12:00:00.000Z');

    const job = await claimOrFail();
    assert.equal(job.id, id);
    assert.equal(job.status, 'running');
    assert.equal(job.attempts, 1);
    assert.match(job.leaseOwner, /^w1#/);
    assert.equal(job.leaseExpiresAt.getTime(), clock.now().getTime() + LEASE);
    assert.deepEqual(job.payload, { videoId: 'v1', n: 2 });
    assert.equal(await queue.claim('w2', ['test'], LEASE), undefined, 'a running job is not claimed twice');

    assert.equal(await queue.complete(job), true);
    const done = await queue.get(id);
    assert.equal(done?.status, 'done');
    assert.equal(done?.leaseOwner, undefined);
  });

  it('enqueue inside a transaction: visible and announced only after commit, gone on rollback', async () => {
    const heard: string[] = [];
    queue.onEnqueue((kind) => heard.push(kind));
    await database.db
      .transaction(async (trx) => {
        await queue.enqueue(trx, { kind: 'rolled-back', payload: {} });
        throw new Error('domain write failed');
      })
      .catch(() => undefined);
    assert.equal(await queue.claim('w1', ['rolled-back'], LEASE), undefined);

    await database.db.transaction(async (trx) => {
      await queue.enqueue(trx, { kind: 'committed', payload: {} });
      assert.deepEqual(heard, [], 'not announced before commit');
    });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(heard, ['committed']);
    assert.ok(await queue.claim('w1', ['committed'], LEASE));
  });

  it('claims only due jobs of the asked kinds, oldest run_at first', async () => {
    await queue.enqueue(database.db, { kind: 'later', payload: 1, runAt: new Date(clock.now().getTime() + 60_000) });
    const b = await queue.enqueue(database.db, { kind: 'test', payload: 'b', runAt: new Date(clock.now().getTime() - 1_000) });
    const a = await queue.enqueue(database.db, { kind: 'test', payload: 'a', runAt: new Date(clock.now().getTime() - 2_000) });
    await queue.enqueue(database.db, { kind: 'other', payload: 'o' });
    assert.equal((await claimOrFail()).id, a);
    assert.equal((await claimOrFail()).id, b);
    assert.equal(await queue.claim('w1', ['test', 'later'], LEASE), undefined, 'not yet due');
    assert.equal((await queue.nextRunAt(['later']))?.getTime(), clock.now().getTime() + 60_000);
    clock.advance(60_000);
    assert.equal((await claimOrFail('w1', ['test', 'later'])).kind, 'later');
    assert.equal(await queue.claim('w1', [], LEASE), undefined);
  });

  it('many concurrent claimers on several database connections never get the same job', async function () {
    this.timeout(scaled(60_000));
    const JOBS = 60;
    const expected = new Set<string>();
    for (let i = 0; i < JOBS; i++) expected.add(await queue.enqueue(database.db, { kind: 'race', payload: i }));
    // Several independent Knex instances (pools) on the same database, each with several claimers.
    const instances: Db[] = Array.from({ length: 4 }, () => openDatabase(database.config));
    try {
      const claimed: string[] = [];
      const claimer = async (q: JobQueue, name: string) => {
        for (;;) {
          const job = await q.claim(name, ['race'], LEASE);
          if (!job) return;
          claimed.push(job.id);
          await new Promise((r) => setImmediate(r));
        }
      };
      await Promise.all(
        instances.flatMap((db, i) => {
          const q = new JobQueue(db, clock);
          return Array.from({ length: 4 }, (_, j) => claimer(q, `worker-${i}-${j}`));
        }),
      );
      assert.equal(claimed.length, JOBS, 'every job claimed exactly once');
      assert.equal(new Set(claimed).size, JOBS, 'no job claimed twice');
      assert.deepEqual(new Set(claimed), expected);
      const rows = await database.db('jobs').where({ kind: 'race' }).select('status', 'attempts');
      assert.ok(rows.every((r) => r.status === 'running' && Number(r.attempts) === 1));
    } finally {
      await Promise.all(instances.map((db) => db.destroy()));
    }
  });

  it('heartbeat extends the lease only while it is held', async () => {
    await queue.enqueue(database.db, { kind: 'test', payload: {} });
    const job = await claimOrFail();
    clock.advance(LEASE - 1_000);
    assert.equal(await queue.heartbeat(job, LEASE), true);
    assert.equal(job.leaseExpiresAt.getTime(), clock.now().getTime() + LEASE);
    clock.advance(LEASE - 1_000);
    assert.equal((await queue.sweepExpiredLeases()).requeued, 0, 'an extended lease is not swept');
    clock.advance(1_000);
    assert.equal(await queue.heartbeat(job, LEASE), false, 'an expired lease cannot be extended');
  });

  it('an expired lease is requeued by the sweeper; the old owner is refused and the new one finishes', async () => {
    const id = await queue.enqueue(database.db, { kind: 'test', payload: {} });
    const first = await claimOrFail('crashed');
    clock.advance(LEASE - 1);
    assert.deepEqual(await queue.sweepExpiredLeases(), { requeued: 0, failed: 0, jobIds: [] }, 'a live lease is not swept');
    assert.equal((await queue.nextLeaseExpiry())?.getTime(), first.leaseExpiresAt.getTime(), 'the earliest lease end of a running job');
    clock.advance(1);
    assert.deepEqual(await queue.sweepExpiredLeases(), { requeued: 1, failed: 0, jobIds: [id] });
    assert.equal(await queue.nextLeaseExpiry(), undefined, 'no job runs');
    const requeued = await queue.get(id);
    assert.equal(requeued?.status, 'queued');
    assert.match(requeued?.lastError ?? '', /lease expired/);

    const second = await claimOrFail('rescuer');
    assert.equal(second.id, id);
    assert.equal(second.attempts, 2);
    assert.notEqual(second.leaseOwner, first.leaseOwner);
    assert.equal(await queue.heartbeat(first, LEASE), false, 'old owner: heartbeat refused');
    assert.equal(await queue.complete(first), false, 'old owner: complete refused');
    assert.equal(await queue.fail(first, new Error('late')), 'lease-lost', 'old owner: fail refused');
    assert.equal(await queue.release(first), false, 'old owner: release refused');
    assert.equal((await queue.get(id))?.status, 'running');

    assert.equal(await queue.complete(second), true);
    assert.equal((await queue.get(id))?.status, 'done');
  });

  it('the same worker re-claiming a swept job gets a new lease token; its stale handle is refused', async () => {
    await queue.enqueue(database.db, { kind: 'test', payload: {} });
    const stale = await claimOrFail('same-worker');
    clock.advance(LEASE);
    await queue.sweepExpiredLeases();
    const fresh = await claimOrFail('same-worker');
    assert.notEqual(fresh.leaseOwner, stale.leaseOwner);
    assert.equal(await queue.complete(stale), false);
    assert.equal(await queue.complete(fresh), true);
  });

  it('failures retry with capped exponential back-off and jitter, then the job is failed after max_attempts', async () => {
    const jitter = [0, 0.999, 0.5];
    const q = new JobQueue(database.db, clock, { retry: { baseMs: 1_000, maxMs: 3_000 }, random: () => jitter.shift() ?? 0.5 });
    const id = await q.enqueue(database.db, { kind: 'test', payload: {}, maxAttempts: 4 });
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const job = await claimOrFail('w1', ['test'], q);
      assert.equal(job.attempts, attempt);
      const failedAt = clock.now().getTime();
      assert.equal(await q.fail(job, new Error(`boom ${attempt}`)), 'queued');
      const row = await q.get(id);
      assert.equal(row?.status, 'queued');
      assert.equal(row?.lastError, `Error: boom ${attempt}`);
      const delay = row.runAt.getTime() - failedAt;
      delays.push(delay);
      assert.equal(await q.claim('w1', ['test'], LEASE), undefined, 'not before the back-off');
      clock.advance(delay);
    }
    // ceilings 1000, 2000, 3000 (capped from 4000); equal jitter puts each in [ceiling/2, ceiling].
    assert.deepEqual(delays, [500, 1999, 2250]);
    const last = await claimOrFail('w1', ['test'], q);
    assert.equal(last.attempts, 4);
    assert.equal(await q.fail(last, new Error('final')), 'failed');
    const row = await q.get(id);
    assert.equal(row?.status, 'failed');
    assert.equal(row?.lastError, 'Error: final');
    clock.advance(3_600_000);
    assert.equal(await q.claim('w1', ['test'], LEASE), undefined, 'a failed job is never claimed again');
  });

  it('back-off stays within [ceiling/2, ceiling] for any jitter', () => {
    for (const r of [0, 0.1, 0.5, 0.9, 0.999999]) {
      const q = new JobQueue(database.db, clock, { retry: { baseMs: 2_000, maxMs: 60_000 }, random: () => r });
      for (let attempts = 1; attempts <= 12; attempts++) {
        const ceiling = Math.min(60_000, 2_000 * 2 ** (attempts - 1));
        const d = q.backoffMs(attempts);
        assert.ok(d >= ceiling / 2 && d <= ceiling, `attempt ${attempts}: ${d} outside [${ceiling / 2}, ${ceiling}]`);
      }
    }
  });

  it('a permanent failure skips the remaining attempts', async () => {
    const id = await queue.enqueue(database.db, { kind: 'test', payload: {} });
    const job = await claimOrFail();
    assert.equal(await queue.fail(job, 'checksum mismatch', { permanent: true }), 'failed');
    assert.equal((await queue.get(id))?.status, 'failed');
  });

  it('a job whose worker keeps dying is failed by the sweeper once its attempts are used up', async () => {
    const id = await queue.enqueue(database.db, { kind: 'test', payload: {}, maxAttempts: 2 });
    await claimOrFail();
    clock.advance(LEASE);
    assert.deepEqual(await queue.sweepExpiredLeases(), { requeued: 1, failed: 0, jobIds: [id] });
    await claimOrFail();
    clock.advance(LEASE);
    assert.deepEqual(await queue.sweepExpiredLeases(), { requeued: 0, failed: 1, jobIds: [id] });
    const row = await queue.get(id);
    assert.equal(row?.status, 'failed');
    assert.match(row?.lastError ?? '', /last attempt/);
  });

  it('runningLeases names the lease token of each running job asked for', async () => {
    const a = await queue.enqueue(database.db, { kind: 'test', payload: 1 });
    const b = await queue.enqueue(database.db, { kind: 'test', payload: 2 });
    const c = await queue.enqueue(database.db, { kind: 'other', payload: 3 });
    const first = await claimOrFail('w1');
    const second = await claimOrFail('w2');
    assert.equal(await queue.complete(second), true);
    const leases = await queue.runningLeases([a, b, c, '00000000-0000-0000-0000-000000000000']);
    assert.deepEqual([...leases], [[first.id, first.leaseOwner]]);
    assert.ok([a, b].includes(first.id));
  });

  it('release hands a job back at once without counting the attempt', async () => {
    const id = await queue.enqueue(database.db, { kind: 'test', payload: {} });
    const job = await claimOrFail();
    assert.equal(await queue.release(job), true);
    const row = await queue.get(id);
    assert.equal(row?.status, 'queued');
    assert.equal(row?.attempts, 0);
    assert.equal(row?.leaseOwner, undefined);
    assert.equal((await claimOrFail('w2')).attempts, 1);
  });

  it('rejects invalid job definitions', async () => {
    await assert.rejects(queue.enqueue(database.db, { kind: '', payload: {} }), /kind/);
    await assert.rejects(queue.enqueue(database.db, { kind: 'x'.repeat(65), payload: {} }), /kind/);
    await assert.rejects(queue.enqueue(database.db, { kind: 'test', payload: {}, maxAttempts: 0 }), /maxAttempts/);
  });
});
