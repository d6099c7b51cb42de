import { strict as assert } from 'node:assert';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { defineJob } from '../../src/jobs/job-definition';
import { ClaimedJob, JobQueue } from '../../src/jobs/job-queue';
import { JobScratch } from '../../src/jobs/job-scratch';
import { DEFAULT_LEASE_MS, JobContext, LeaseLostError, PermanentJobError, Worker, WorkerStoppingError } from '../../src/jobs/worker';
import { ManualClock } from '../../src/shared/clock';
import { createTestDatabase, TEST_DIALECT, TestDatabase } from '../helpers/database';
import { waitFor as waitUntil } from '../helpers/scenario';

const log = pino({ level: process.env.VIDMILL_TEST_LOG ?? 'silent' });
const LEASE = 30_000;

/** Polls as this file always has: every 5 ms, for at most 5 s. */
const waitFor = <T>(what: string, check: Parameters<typeof waitUntil<T>>[1]) => waitUntil(what, check, { intervalMs: 5, timeoutMs: 5_000 });

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe(`Worker loop (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let clock: ManualClock;
  let queue: JobQueue;
  let workers: Worker[];

  const worker = (opts: Partial<ConstructorParameters<typeof Worker>[1]> = {}, q = queue) => {
    const w = new Worker(q, { workerId: `w${workers.length}`, log, leaseMs: LEASE, heartbeatMs: 10, pollMs: 60_000, sweepLeases: false, ...opts });
    workers.push(w);
    return w;
  };
  const status = async (id: string) => (await queue.get(id))?.status;

  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    await database.drop();
  });
  beforeEach(async () => {
    await database.db('jobs').delete();
    clock = new ManualClock('2026-03-01T12:00:00Z');
    queue = new JobQueue(database.db, clock, { defaultMaxAttempts: 3, retry: { baseMs: 1_000, maxMs: 10_000 }, random: () => 1 - Number.EPSILON });
    workers = [];
  });
  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop({ graceMs: 0 })));
  });

  it('moves idle -> starting -> running -> stopping -> stopped', async () => {
    const w = worker().define({ kind: 'noop', run: async () => undefined });
    assert.equal(w.status, 'idle');
    w.start();
    assert.equal(w.status, 'starting');
    await waitFor('running', () => w.status === 'running');
    const stopping = w.stop();
    assert.equal(w.status, 'stopping');
    await stopping;
    assert.equal(w.status, 'stopped');
  });

  it('runs jobs by kind through their handlers; notify() wakes the loop at once on enqueue', async () => {
    const seen: Array<{ kind: string; payload: unknown }> = [];
    const w = worker()
      .define({ kind: 'fake.a', run: async (payload) => void seen.push({ kind: 'fake.a', payload }) })
      .define({ kind: 'fake.b', run: async (payload) => void seen.push({ kind: 'fake.b', payload }) });
    queue.onEnqueue(() => w.notify());
    w.start();
    await waitFor('running', () => w.status === 'running');
    // pollMs is a minute: only notify() can make these run within the test.
    const a = await queue.enqueue(database.db, { kind: 'fake.a', payload: { n: 1 } });
    const b = await database.db.transaction((trx) => queue.enqueue(trx, { kind: 'fake.b', payload: { n: 2 } }));
    const other = await queue.enqueue(database.db, { kind: 'not-mine', payload: {} });
    await waitFor('both done', async () => (await status(a)) === 'done' && (await status(b)) === 'done');
    assert.deepEqual(
      seen.sort((x, y) => x.kind.localeCompare(y.kind)),
      [
        { kind: 'fake.a', payload: { n: 1 } },
        { kind: 'fake.b', payload: { n: 2 } },
      ],
    );
    assert.equal(await status(other), 'queued', 'a kind without a handler is left for another worker');
  });

  it('takes job definitions: the handler and the give-up handler of a kind', async () => {
    const seen: unknown[] = [];
    const gaveUp: unknown[] = [];
    const definition = defineJob<{ n: number }>({
      kind: 'defined',
      attempts: 1,
      run: () => async (payload) => void seen.push(payload),
      onGiveUp: () => async (_trx, payload) => void gaveUp.push(payload),
    });
    const w = worker({ sweepLeases: true, pollMs: 10 }).define(definition.bind());
    assert.throws(() => w.define({ kind: 'defined', run: async () => undefined }), /already registered/);
    const lost = await queue.enqueue(database.db, { kind: 'defined', payload: { n: 1 }, maxAttempts: 1 });
    assert.ok(await queue.claim('dead-worker', ['defined'], LEASE));
    clock.advance(LEASE);
    const ok = await queue.enqueue(database.db, { kind: 'defined', payload: { n: 2 } });
    w.start();
    await waitFor('done', async () => (await status(ok)) === 'done');
    assert.equal(await status(lost), 'failed');
    assert.deepEqual(seen, [{ n: 2 }]);
    assert.deepEqual(gaveUp, [{ n: 1 }]);
  });

  it('default lease 30 s (claimed with it), heartbeat every third of the lease; the heartbeat must be shorter than the lease', async () => {
    assert.equal(DEFAULT_LEASE_MS, 30_000);
    const release = deferred();
    const w = new Worker(queue, { workerId: 'defaults', log, pollMs: 60_000, sweepLeases: false }).define({ kind: 'long', run: () => release.promise });
    workers.push(w);
    assert.deepEqual(w.lease, { leaseMs: 30_000, heartbeatMs: 10_000 });
    assert.deepEqual(new Worker(queue, { workerId: 'x', log, leaseMs: 3_000 }).lease, { leaseMs: 3_000, heartbeatMs: 1_000 });
    const id = await queue.enqueue(database.db, { kind: 'long', payload: {} });
    const claimedAt = clock.now().getTime();
    w.start();
    await waitFor('running', async () => (await status(id)) === 'running');
    assert.equal((await queue.get(id))!.leaseExpiresAt!.getTime(), claimedAt + 30_000, 'claimed with a 30 s lease');
    assert.throws(() => new Worker(queue, { workerId: 'x', log, leaseMs: 3_000, heartbeatMs: 3_000 }), /heartbeatMs must be shorter than leaseMs/);
    release.resolve();
    await waitFor('done', async () => (await status(id)) === 'done');
  });

  it('a kind has exactly one handler', () => {
    const w = worker().define({ kind: 'x', run: async () => undefined });
    assert.throws(() => w.define({ kind: 'x', run: async () => undefined }), /already registered/);
  });

  it('runs at most `concurrency` jobs at once and fills freed slots', async () => {
    let active = 0;
    let peak = 0;
    const w = worker({ concurrency: 3 }).define({
      kind: 'slow',
      run: async () => {
        active++;
        peak = Math.max(peak, active);
        // Long enough for the loop to fill the other slots on a loaded machine (a claim can take tens of ms).
        await new Promise((r) => setTimeout(r, 100));
        active--;
      },
    });
    const ids = [];
    for (let i = 0; i < 10; i++) ids.push(await queue.enqueue(database.db, { kind: 'slow', payload: i }));
    w.start();
    await waitFor('all done', async () => (await database.db('jobs').where({ status: 'done' }).count({ n: '*' }))[0]!.n == 10);
    assert.equal(peak, 3);
  });

  it('a failing handler is retried after the back-off and ends failed; a PermanentJobError is not retried', async () => {
    let calls = 0;
    const w = worker()
      .define({
        kind: 'flaky',
        run: async () => {
          calls++;
          throw new Error(`attempt ${calls} broke`);
        },
      })
      .define({
        kind: 'hopeless',
        run: async () => {
          throw new PermanentJobError('checksum mismatch');
        },
      });
    queue.onEnqueue(() => w.notify());
    w.start();
    const id = await queue.enqueue(database.db, { kind: 'flaky', payload: {} });
    const hopeless = await queue.enqueue(database.db, { kind: 'hopeless', payload: {} });
    await waitFor('hopeless failed', async () => (await status(hopeless)) === 'failed');
    assert.match((await queue.get(hopeless))?.lastError ?? '', /PermanentJobError: checksum mismatch/);
    assert.equal((await queue.get(hopeless))?.attempts, 1);

    for (let attempt = 1; attempt <= 3; attempt++) {
      await waitFor(`attempt ${attempt}`, async () => calls === attempt && (await status(id)) !== 'running' && (await queue.get(id)));
      const row = await queue.get(id);
      if (attempt < 3) {
        assert.equal(row?.status, 'queued');
        assert.ok(row.runAt > clock.now(), 'the retry waits for its back-off');
        clock.advance(row.runAt.getTime() - clock.now().getTime());
        w.notify();
      }
    }
    const row = await queue.get(id);
    assert.equal(row?.status, 'failed');
    assert.equal(row?.attempts, 3);
    assert.equal(row?.lastError, 'Error: attempt 3 broke');
  });

  it('the heartbeat keeps a long job leased past its initial lease; the sweeper leaves it alone', async () => {
    const release = deferred();
    const w = worker().define({ kind: 'long', run: () => release.promise });
    const id = await queue.enqueue(database.db, { kind: 'long', payload: {} });
    w.start();
    await waitFor('running', async () => (await status(id)) === 'running');
    for (let i = 0; i < 4; i++) {
      const before = (await queue.get(id))!.leaseExpiresAt!.getTime();
      clock.advance(LEASE / 2);
      await waitFor('a heartbeat', async () => (await queue.get(id))!.leaseExpiresAt!.getTime() > before);
      assert.deepEqual(await queue.sweepExpiredLeases(), { requeued: 0, failed: 0, jobIds: [] });
    }
    release.resolve();
    await waitFor('done', async () => (await status(id)) === 'done');
  });

  it('a lost lease aborts the handler with LeaseLostError and its late result is not recorded', async () => {
    const started = deferred<JobContext>();
    const finished = deferred<unknown>();
    // One slot, and no heartbeat timer between the sweep and the rescuer's claim (the default
    // period, a third of the lease): a refused timer beat would free the slot, and this worker could
    // take the requeued job before the rescuer. The test makes the next beat itself, below.
    const w = worker({ concurrency: 1, heartbeatMs: LEASE / 3 }).define({
      kind: 'stalls',
      run: async (_p, ctx) => {
        started.resolve(ctx);
        // The handler ignores nothing: it waits for the abort, then "finishes" anyway.
        await new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }));
        finished.resolve(ctx.signal.reason);
      },
    });
    const id = await queue.enqueue(database.db, { kind: 'stalls', payload: {} });
    w.start();
    const ctx = await started.promise;
    // A stall: the clock passes the lease end before a heartbeat lands (the next one is refused),
    // the sweeper requeues the job and another worker claims it.
    clock.advance(LEASE);
    await queue.sweepExpiredLeases();
    const rescuer: ClaimedJob = (await queue.claim('rescuer', ['stalls'], LEASE))!;
    assert.equal(rescuer.id, id);
    assert.equal(await ctx.heartbeat(), false, 'the next heartbeat is refused');
    const reason = await finished.promise;
    assert.ok(reason instanceof LeaseLostError, String(reason));
    assert.equal(ctx.signal.aborted, true);
    await waitFor('slot freed', () => w.inFlight.length === 0);
    const row = await queue.get(id);
    assert.equal(row?.status, 'running', 'still running under the rescuer');
    assert.equal(row?.leaseOwner, rescuer.leaseOwner);
    assert.equal(await queue.complete(rescuer), true);
  });

  it('stop() waits for the job in flight to finish', async () => {
    const release = deferred();
    const w = worker().define({ kind: 'busy', run: () => release.promise });
    const id = await queue.enqueue(database.db, { kind: 'busy', payload: {} });
    w.start();
    await waitFor('running', async () => (await status(id)) === 'running');
    let stopped = false;
    const stopping = w.stop({ graceMs: 10_000 }).then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(stopped, false);
    assert.equal(w.status, 'stopping');
    release.resolve();
    await stopping;
    assert.equal(w.status, 'stopped');
    assert.equal(await status(id), 'done');
  });

  it('stop() past its grace aborts the handler with WorkerStoppingError and hands the job back', async () => {
    let reason: unknown;
    const w = worker().define({
      kind: 'endless',
      run: (_p, ctx) => {
        return new Promise((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- hands the abort reason on as is; the test asserts what it is
            reject(ctx.signal.reason);
          }),
        );
      },
    });
    const id = await queue.enqueue(database.db, { kind: 'endless', payload: {} });
    w.start();
    await waitFor('running', async () => (await status(id)) === 'running');
    await w.stop({ graceMs: 20 });
    assert.ok(reason instanceof WorkerStoppingError);
    const row = await queue.get(id);
    assert.equal(row?.status, 'queued');
    assert.equal(row?.attempts, 0, 'a handed-back attempt does not count');
    assert.equal(row?.leaseOwner, undefined);
  });

  it('backs off exponentially while claiming fails, and recovers', async () => {
    class BrokenQueue extends JobQueue {
      calls = 0;
      broken = true;
      override async claim<P>(workerId: string, kinds: readonly string[], leaseMs: number) {
        this.calls++;
        if (this.broken) throw new Error('database unavailable');
        return super.claim<P>(workerId, kinds, leaseMs);
      }
    }
    const broken = new BrokenQueue(database.db, clock);
    const id = await broken.enqueue(database.db, { kind: 'ok', payload: {} });
    const w = worker({ pollMs: 10, maxBackoffMs: 10_000 }, broken).define({ kind: 'ok', run: async () => undefined });
    w.start();
    await new Promise((r) => setTimeout(r, 400));
    // Without back-off 10 ms polls would make ~40 calls; doubling from 10 ms makes about 6.
    assert.ok(broken.calls >= 3 && broken.calls <= 8, `claim called ${broken.calls} times`);
    broken.broken = false;
    w.notify();
    await waitFor('done after recovery', async () => (await status(id)) === 'done');
  });

  it('sweeps expired leases of dead workers and runs their jobs', async () => {
    const id = await queue.enqueue(database.db, { kind: 'orphan', payload: {} });
    assert.ok(await queue.claim('dead-worker', ['orphan'], LEASE));
    clock.advance(LEASE);
    const w = worker({ sweepLeases: true, pollMs: 10 }).define({ kind: 'orphan', run: async () => undefined });
    w.start();
    await waitFor('done', async () => (await status(id)) === 'done');
    assert.equal((await queue.get(id))?.attempts, 2);
  });

  for (const lease of [30_000, 3_000]) {
    it(`a dead worker's job is taken over when its lease ends, within 1.2 x the lease of its last heartbeat (lease ${lease / 1000} s)`, async () => {
      class WatchedQueue extends JobQueue {
        expiryReads = 0;
        override async nextLeaseExpiry() {
          this.expiryReads++;
          return super.nextLeaseExpiry();
        }
      }
      const watched = new WatchedQueue(database.db, clock, { defaultMaxAttempts: 3 });
      const started: Array<{ payload: unknown; at: number }> = [];
      const gaveUp: unknown[] = [];
      // The dead worker: claims two jobs (one on its last attempt), beats every third of the lease, then dies.
      const retried = await queue.enqueue(database.db, { kind: 'copy', payload: 'retried' });
      const last = await queue.enqueue(database.db, { kind: 'copy', payload: 'last', maxAttempts: 1 });
      const held = [(await queue.claim('dead', ['copy'], lease))!, (await queue.claim('dead', ['copy'], lease))!];
      for (let beat = 1; beat <= 2; beat++) {
        clock.advance(lease / 3);
        for (const job of held) assert.equal(await queue.heartbeat(job, lease), true);
      }
      const lastHeartbeat = clock.now().getTime();
      const leaseEnd = lastHeartbeat + lease;
      assert.equal((await queue.nextLeaseExpiry())?.getTime(), leaseEnd);
      // The rescuer is idle and polls once a minute: only the lease end can wake it in this test.
      clock.set(new Date(leaseEnd - 30));
      const rescuer = worker({ sweepLeases: true, pollMs: 60_000, leaseMs: lease, heartbeatMs: lease / 3 }, watched).define({
        kind: 'copy',
        run: async (payload) => void started.push({ payload, at: clock.now().getTime() }),
        onGiveUp: async (_trx, payload) => void gaveUp.push(payload),
      });
      rescuer.start();
      // It wakes every 30 ms (what is left of the lease on the stopped test clock), and takes nothing early.
      await waitFor('three looks at the lease end', () => watched.expiryReads >= 4);
      assert.equal((await queue.get(retried))?.leaseOwner, held.find((j) => j.id === retried)!.leaseOwner);
      assert.equal(await status(last), 'running');
      assert.equal(started.length, 0);
      clock.advance(30);
      await waitFor('taken over', async () => (await status(retried)) === 'done');
      assert.deepEqual(started, [{ payload: 'retried', at: leaseEnd }]);
      assert.ok(started[0]!.at - lastHeartbeat <= 1.2 * lease, 'within 1.2 x the lease of the last heartbeat');
      assert.equal((await queue.get(retried))?.attempts, 2);
      const lost = await queue.get(last);
      assert.equal(lost?.status, 'failed', 'lost on its last attempt: failed, not run again');
      assert.match(lost?.lastError ?? '', /last attempt/);
      assert.deepEqual(gaveUp, ['last']);
    });
  }

  it("a busy worker takes over too: it requeues the dead worker's job and an idle worker claims it", async () => {
    const release = deferred();
    const busy = worker({ sweepLeases: true, concurrency: 1, pollMs: 10 }).define({ kind: 'long', run: () => release.promise });
    const idle = worker({ pollMs: 10 }).define({ kind: 'orphan', run: async () => undefined });
    const long = await queue.enqueue(database.db, { kind: 'long', payload: {} });
    busy.start();
    await waitFor('busy', async () => (await status(long)) === 'running');
    const orphan = await queue.enqueue(database.db, { kind: 'orphan', payload: {} });
    assert.ok(await queue.claim('dead', ['orphan'], LEASE));
    idle.start();
    try {
      // Half a lease on: the busy worker's own job is renewed by its heartbeat (every 10 ms here).
      clock.advance(LEASE / 2);
      const renewed = clock.now().getTime() + LEASE;
      await waitFor('a heartbeat', async () => (await queue.get(long))!.leaseExpiresAt!.getTime() >= renewed);
      clock.advance(LEASE / 2);
      await waitFor('taken over', async () => (await status(orphan)) === 'done');
      assert.equal((await queue.get(orphan))?.attempts, 2);
      assert.equal(await status(long), 'running', 'the busy worker kept its own job');
    } finally {
      release.resolve();
    }
  });

  describe('scratch folders under <data dir>/work', () => {
    let root: string;
    beforeEach(() => {
      root = mkdtempSync(path.join(os.tmpdir(), 'vidmill-work-test-'));
    });
    afterEach(() => rmSync(root, { recursive: true, force: true }));

    /** What a killed worker leaves: its claim's folder with a half-written file. */
    const leftBehind = (job: ClaimedJob) => {
      const dir = new JobScratch(root).folderOf(job.id, job.leaseOwner);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'download-1.mp4'), 'half a video');
      return dir;
    };

    it('each claim works in a folder of its own, removed when the handler returns (done or failed)', async () => {
      const seen: string[] = [];
      const w = worker({ scratchRoot: root, pollMs: 10 })
        .define({
          kind: 'ok',
          run: async (_p, ctx) => {
            const dir = await ctx.scratchDir();
            assert.equal(await ctx.scratchDir(), dir, 'one folder per claim');
            writeFileSync(path.join(dir, 'out.mp4'), 'x');
            seen.push(dir);
          },
        })
        .define({
          kind: 'broken',
          run: async (_p, ctx) => {
            const dir = await ctx.scratchDir();
            writeFileSync(path.join(dir, 'out.mp4'), 'x');
            seen.push(dir);
            throw new PermanentJobError('no');
          },
        });
      const ok = await queue.enqueue(database.db, { kind: 'ok', payload: {} });
      const broken = await queue.enqueue(database.db, { kind: 'broken', payload: {} });
      w.start();
      await waitFor('both ended', async () => (await status(ok)) === 'done' && (await status(broken)) === 'failed');
      assert.equal(seen.length, 2);
      for (const dir of seen) assert.equal(path.dirname(dir), root);
      assert.match(path.basename(seen[0]!), /^job-[0-9a-f-]{36}\.[0-9a-f-]{36}$/);
      assert.notEqual(seen[0], seen[1]);
      await waitFor('folders removed', () => readdirSync(root).length === 0);
    });

    it('a worker at start removes the folders of dead claims, and leaves those of claims that live in other processes', async () => {
      for (let i = 0; i < 3; i++) await queue.enqueue(database.db, { kind: 'k', payload: i });
      const live = (await queue.claim('another-process', ['k'], LEASE))!;
      const reclaimed = (await queue.claim('killed', ['k'], LEASE))!;
      const done = (await queue.claim('finished', ['k'], LEASE))!;
      const liveDir = leftBehind(live);
      const deadDir = leftBehind(reclaimed);
      const doneDir = leftBehind(done);
      assert.equal(await queue.complete(done), true);
      // The killed worker's job was requeued and claimed again on another machine: its old claim is dead.
      await database.db('jobs').where({ id: reclaimed.id }).update({ status: 'queued', lease_owner: null, lease_expires_at: null });
      assert.equal((await queue.claim('other-machine', ['k'], LEASE))?.id, reclaimed.id);
      mkdirSync(path.join(root, 'ingest-legacy-1234'));
      writeFileSync(path.join(root, 'download-stray.mp4'), 'x');
      mkdirSync(path.join(root, 'job-00000000-0000-0000-0000-000000000000.11111111-1111-1111-1111-111111111111'));

      const w = worker({ scratchRoot: root }).define({ kind: 'mine', run: async () => undefined });
      w.start();
      await waitFor('running', () => w.status === 'running');
      assert.deepEqual(readdirSync(root), [path.basename(liveDir)]);
      for (const dir of [deadDir, doneDir]) assert.equal(existsSync(dir), false, dir);
    });

    it("the worker that claims a taken-over job removes the dead claim's folder before its handler runs", async () => {
      const id = await queue.enqueue(database.db, { kind: 'copy', payload: {} });
      const deadDir = leftBehind((await queue.claim('killed', ['copy'], LEASE))!);
      const during: Array<{ deadDirExists: boolean; own: string }> = [];
      // No lease sweep of its own: another machine's worker requeues the job below.
      const w = worker({ scratchRoot: root, pollMs: 10 }).define({
        kind: 'copy',
        run: async (_p, ctx) => {
          during.push({ deadDirExists: existsSync(deadDir), own: await ctx.scratchDir() });
        },
      });
      w.start();
      await waitFor('running', () => w.status === 'running');
      assert.equal(existsSync(deadDir), true, 'the lease is live at start: kept');
      clock.advance(LEASE);
      assert.equal((await queue.sweepExpiredLeases()).requeued, 1);
      assert.equal(existsSync(deadDir), true);
      await waitFor('done', async () => (await status(id)) === 'done');
      assert.equal((await queue.get(id))?.attempts, 2);
      assert.equal(during.length, 1);
      assert.equal(during[0]!.deadDirExists, false, 'removed before the handler ran');
      assert.notEqual(during[0]!.own, deadDir);
      await waitFor('nothing left', () => readdirSync(root).length === 0);
    });

    it("a restarted worker removes, within a lease length, the folder its predecessor's claim left once that job was taken over on another machine", async () => {
      const id = await queue.enqueue(database.db, { kind: 'elsewhere', payload: {} });
      const deadDir = leftBehind((await queue.claim('killed', ['elsewhere'], LEASE))!);
      // Restarted while the dead claim's lease still runs: its folder is kept at start.
      const w = worker({ scratchRoot: root, pollMs: 10, sweepLeases: false }).define({ kind: 'mine', run: async () => undefined });
      w.start();
      await waitFor('running', () => w.status === 'running');
      assert.equal(existsSync(deadDir), true, 'the lease is live at start: kept');
      // A worker on another machine (another data dir) takes the job over.
      clock.advance(LEASE);
      assert.equal((await queue.sweepExpiredLeases()).requeued, 1);
      assert.equal((await queue.claim('other-machine', ['elsewhere'], LEASE * 10))?.id, id);
      // Within a lease length of the takeover: the worker's loop may have swept its folders between
      // the clock's step and the claim above (the dead claim still counted then), and sweeps once a lease.
      clock.advance(LEASE);
      await waitFor("the ended claim's folder removed", () => !existsSync(deadDir));
      assert.deepEqual(readdirSync(root), []);
    });

    it("the worker whose lease sweep takes jobs over removes the dead claims' folders (requeued for anyone, or failed on the last attempt)", async () => {
      const last = await queue.enqueue(database.db, { kind: 'copy', payload: {}, maxAttempts: 1 });
      const lastDir = leftBehind((await queue.claim('killed', ['copy'], LEASE))!);
      const other = await queue.enqueue(database.db, { kind: 'not-mine', payload: {} });
      const otherDir = leftBehind((await queue.claim('killed', ['not-mine'], LEASE))!);
      const w = worker({ scratchRoot: root, pollMs: 10, sweepLeases: true }).define({ kind: 'copy', run: async () => undefined });
      w.start();
      await waitFor('running', () => w.status === 'running');
      assert.equal(existsSync(lastDir) && existsSync(otherDir), true, 'live leases at start: kept');
      clock.advance(LEASE);
      await waitFor('swept', async () => (await status(last)) === 'failed' && (await status(other)) === 'queued');
      await waitFor('folders removed', () => !existsSync(lastDir) && !existsSync(otherDir));
      assert.deepEqual(readdirSync(root), []);
    });
  });
});
