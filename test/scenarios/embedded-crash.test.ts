// test-databases: one
// (SQLite only: its subject is the embedded default, which is SQLite (it was pending in the PostgreSQL pass).)
/**
 * The embedded default survives SIGKILL: ONE real process (`VIDMILL_ROLE=all`, the SQLite file and
 * local-disk storage in a fresh data directory, the master key generated there) copies a video in
 * from a slow HTTPS range source and is killed with SIGKILL in the middle of the copy. Started
 * again on the same data directory, it takes its own dead claim over (the lease has ended by then:
 * `VIDMILL_JOB_LEASE_SECONDS=3`), fetches only the parts not yet stored, checks the CRC-32C,
 * ingests the video, and leaves no scratch files behind.
 *
 * SQLite only by nature (the embedded shape): it runs in the SQLite pass of `npm test` and is
 * skipped (pending) in the PostgreSQL pass (it imports test/helpers/database.ts for TEST_DIALECT,
 * so the runner counts it among the database files).
 */
import { strict as assert } from 'node:assert';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Db, openDatabase } from '../../src/db/database';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { findVideo } from '../../src/features/videos';
import { crc32c } from '../../src/net/crc32c';
import { TEST_DIALECT } from '../helpers/database';
import { fixtureBytes } from '../helpers/media-fixtures';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { waitFor } from '../helpers/scenario';
import { createApiKey, embeddedEnv, startVidmillProcess, VidmillProcess } from '../helpers/vidmill-process';
import { scaled } from '../helpers/timeouts';

const LEASE_SECONDS = 3;
const OWNER = { email: 'owner@example.com', password: 'a-long-enough-password' };

(TEST_DIALECT === 'sqlite' ? describe : describe.skip)('The embedded default killed with SIGKILL in the middle of a copy (SQLite only)', function () {
  this.timeout(scaled(240_000));
  let server: RangeServer;
  let dataDir: string;
  let db: Db | undefined;
  const processes: VidmillProcess[] = [];

  before(async () => {
    server = await startRangeServer();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-embedded-crash-'));
    writeFileSync(path.join(dataDir, 'ca.pem'), server.ca);
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.kill()));
    await db?.destroy();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** The embedded shape: nothing but the data directory (the SQLite file, blobs/, work/, master.key in it). */
  function start(): VidmillProcess {
    const p = startVidmillProcess(
      embeddedEnv(dataDir, OWNER, {
        VIDMILL_ALLOW_PRIVATE_URLS: 'true',
        VIDMILL_EXTRA_CA_FILE: path.join(dataDir, 'ca.pem'),
        VIDMILL_JOB_LEASE_SECONDS: String(LEASE_SECONDS),
        VIDMILL_LOG_LEVEL: 'info',
      }),
      { captureOutput: true },
    );
    processes.push(p);
    return p;
  }

  it('started again on the same data directory, it resumes the copy from the stored parts, with the right CRC-32C, and finishes the video', async () => {
    // A real video (raw frames in Matroska, so it is large: 5 parts of 8 MiB) the process can ingest.
    const data = fixtureBytes({ seconds: 14, width: 320, height: 240, video: ['-c:v', 'rawvideo', '-pix_fmt', 'yuv420p'], ext: 'mkv' });
    const partCount = Math.ceil(data.length / (8 * 1024 * 1024));
    assert.ok(partCount >= 4, `${data.length} bytes`);
    server.serve('/media/raw.mkv', data);
    // 2 connections of 1.5 MB/s: the copy takes about 13 s, long enough to kill it in the middle.
    server.modes.bytesPerSecondPerConnection = 1_500_000;

    const first = start();
    const base = await first.listening();
    const apiKey = await createApiKey(base, OWNER, 'crash test');
    db = openDatabase({ client: 'sqlite', filename: path.join(dataDir, 'vidmill.sqlite') });
    const team = await db<{ id: string }>('teams').first('id');
    assert.ok(team, 'the owner team');
    // Only the video's own stages: no free clip after its ingestion.
    await setFreeClipEnabled(db, team.id, false);

    const res = await fetch(`${base}/api/v1/videos/in/https?maxConcurrentConnections=2&crc32c=${crc32c(data)}`, {
      method: 'POST',
      headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Raw video', url: `${server.origin}/media/raw.mkv` }),
    });
    const body = (await res.json()) as { videoId: string };
    assert.equal(res.status, 202, JSON.stringify(body));
    const { videoId } = body;

    const parts = async () => (await db!('video_in_parts').where({ video_id: videoId })).length;
    await waitFor('two parts stored', async () => (await parts()) >= 2, { timeoutMs: 60_000 });
    await first.kill('SIGKILL');
    const killedAt = performance.now();
    const partsBefore = await parts();
    assert.ok(partsBefore < partCount, 'killed in the middle of the copy');
    assert.equal((await findVideo(db, videoId))?.upload?.status, 'IN_PROGRESS');
    const job = (await db('jobs').where({ kind: 'video-in.copy' }).first()) as { id: string; status: string; attempts: number };
    assert.equal(job.status, 'running', 'the killed process still holds the lease');

    server.modes.bytesPerSecondPerConnection = undefined;
    const ranged = () => server.requests.filter((r) => r.path === '/media/raw.mkv' && r.range && r.range !== 'bytes=0-0').length;
    const rangedBefore = ranged();

    const second = start();
    await second.listening();
    await waitFor('copy done', async () => (await findVideo(db!, videoId))?.upload?.status === 'DONE', { timeoutMs: 60_000 });
    const resumedIn = Math.round(performance.now() - killedAt);
    const refetched = ranged() - rangedBefore;
    assert.ok(refetched <= partCount - partsBefore, `only the missing parts are fetched again (${refetched} requests; ${partsBefore} of ${partCount} parts were stored)`);
    // The copy records the upload DONE, then its job is marked done (another statement): wait for both.
    await waitFor('the copy job done', async () => ((await db!('jobs').where({ id: job.id }).first()) as { status: string }).status !== 'running', { timeoutMs: 30_000 });
    const taken = (await db('jobs').where({ id: job.id }).first()) as { status: string; attempts: number };
    assert.equal(taken.status, 'done');
    assert.equal(taken.attempts, 2, 'the same job, taken over once');

    await waitFor('ingested', async () => ['DONE', 'FAILED'].includes((await findVideo(db!, videoId))?.ingestion?.status ?? ''), { timeoutMs: 120_000 });
    const video = await findVideo(db, videoId);
    assert.equal(video?.ingestion?.status, 'DONE', JSON.stringify(video?.ingestion));
    assert.equal(video?.crc32c, crc32c(data));
    assert.ok(readFileSync(path.join(dataDir, 'blobs', video.blobKey!)).equals(data), 'the stored file is the source, byte for byte');

    await waitFor('every job ended', async () => (await db!('jobs').whereIn('status', ['queued', 'running'])).length === 0, { timeoutMs: 30_000 });
    await waitFor('no scratch files', () => readdirSync(path.join(dataDir, 'work')).length === 0);
    console.log(`      killed with ${partsBefore} of ${partCount} parts stored; after the restart ${refetched} ranged requests; copy done ${resumedIn} ms after the kill`);
  });
});
