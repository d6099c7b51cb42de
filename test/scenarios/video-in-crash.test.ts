/**
 * Nothing is lost when a worker dies: a separate worker process (`VIDMILL_ROLE=worker`, the
 * `npm run worker` entry) is killed with SIGKILL in the middle of a copy; once its lease has
 * expired, another worker takes the job over and finishes the copy from the parts already
 * stored, with the right checksum.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32c } from '../../src/net/crc32c';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { findVideo } from '../../src/features/videos';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { waitFor } from '../helpers/scenario';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { startVidmillProcess, VidmillProcess } from '../helpers/vidmill-process';
import { scaled } from '../helpers/timeouts';

const MIB = 1024 * 1024;

describe(`A worker killed in the middle of a copy (${TEST_DIALECT})`, function () {
  this.timeout(scaled(120_000));
  let server: RangeServer;
  let h: Harness;
  let u: TestUser;
  let dataDir: string;
  let child: VidmillProcess | undefined;

  before(async () => {
    server = await startRangeServer();
    h = await createHarness({ allowPrivateUrls: true, extraCa: [server.ca] });
    u = await h.user();
    await setFreeClipEnabled(h.database.db, u.teamId, false);
    // The worker process shares the database and the platform storage of the harness.
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-crash-'));
    symlinkSync(h.blobDir, path.join(dataDir, 'blobs'));
    writeFileSync(path.join(dataDir, 'ca.pem'), server.ca);
  });
  after(async () => {
    await child?.kill();
    await server.close();
    await h.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  function startWorkerProcess(): VidmillProcess {
    const db = h.database.config;
    return startVidmillProcess({
      VIDMILL_ROLE: 'worker',
      VIDMILL_DATA_DIR: dataDir,
      VIDMILL_DATABASE_URL: db.client === 'pg' ? db.connectionString : `sqlite:${db.filename}`,
      VIDMILL_MASTER_KEY: randomBytes(32).toString('base64'),
      VIDMILL_ALLOW_PRIVATE_URLS: 'true',
      VIDMILL_EXTRA_CA_FILE: path.join(dataDir, 'ca.pem'),
      VIDMILL_LOG_LEVEL: process.env.VIDMILL_TEST_LOG ?? 'warn',
    });
  }

  it('another worker finishes the copy from the stored parts with the right CRC-32C', async () => {
    const data = randomBytes(48 * MIB);
    server.serve('/media/long.bin', data);
    // 2 connections of 3 MB/s: the copy takes about 8 s, long enough to kill it in the middle.
    server.modes.bytesPerSecondPerConnection = 3_000_000;
    const res = await h.request
      .post(`/api/v1/videos/in/https?maxConcurrentConnections=2&crc32c=${crc32c(data)}`)
      .set('X-API-Key', u.apiKey)
      .send({ name: 'Long copy', url: `${server.origin}/media/long.bin` });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const videoId = res.body.videoId;

    child = startWorkerProcess();
    await waitFor('two parts stored', async () => (await h.database.db('video_in_parts').where({ video_id: videoId })).length >= 2, { timeoutMs: 60_000 });
    await child.kill('SIGKILL');
    const partsBefore = (await h.database.db('video_in_parts').where({ video_id: videoId })).length;
    assert.equal((await findVideo(h.database.db, videoId))?.upload?.status, 'IN_PROGRESS');
    const job = await h.database.db('jobs').where({ kind: 'video-in.copy' }).first();
    assert.equal(job.status, 'running', 'the dead worker still holds the lease');

    server.modes.bytesPerSecondPerConnection = undefined;
    const rangedBefore = server.requests.filter((r) => r.range && r.range !== 'bytes=0-0').length;
    // Time passes beyond the dead worker's lease; a new worker sweeps it and takes the job.
    h.clock.advance(5 * 60_000);
    h.startWorker();
    await waitFor('copy done', async () => (await findVideo(h.database.db, videoId))?.upload?.status === 'DONE', { timeoutMs: 60_000 });
    const video = await findVideo(h.database.db, videoId);
    assert.equal(video?.crc32c, crc32c(data));
    const chunks: Buffer[] = [];
    for await (const c of await h.services.blobs.read(`videos/${videoId}/file`)) chunks.push(Buffer.from(c));
    assert.ok(Buffer.concat(chunks).equals(data));
    const refetched = server.requests.filter((r) => r.range && r.range !== 'bytes=0-0').length - rangedBefore;
    assert.ok(refetched <= 6 - partsBefore, `only the missing parts are fetched again (${refetched} requests, ${partsBefore} parts were stored)`);
  });
});
