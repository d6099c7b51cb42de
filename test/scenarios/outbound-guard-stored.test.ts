/**
 * URLs stored while VIDMILL_ALLOW_PRIVATE_URLS was on are refused once it is off, wherever they
 * are used again: queued copies, restarts (at the API, and a restart accepted while the setting
 * was on that runs after it changed), webhook retries and new deliveries. The guard reads the
 * setting as it is when a connection is made (the services' `outbound` policy follows the
 * configuration), so the test stores everything with the setting on, turns it off in the same
 * configuration the services were built from, and runs every job kind that would connect.
 *
 * Every customer-named host is a counting TCP proxy on 127.0.0.1 in front of a real server (the
 * HTTPS range server, a plain-http range server, the local S3-compatible server, a webhook
 * receiver): once the setting is off, none may accept a connection.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import pino from 'pino';
import { DeliveryWorker, recordEvent } from '../../src/features/webhooks';
import { findVideo, stageError } from '../../src/features/videos';
import type { Worker } from '../../src/jobs/worker';
import { TEST_DIALECT } from '../helpers/database';
import { assertStageError, createHarness, expectError, Harness, TestUser } from '../helpers/harness';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { LocalS3, startLocalS3 } from '../helpers/s3-server';
import { apiRequests, waitFor } from '../helpers/scenario';
import { storedVideo } from '../helpers/stored-video';
import { scaled } from '../helpers/timeouts';

interface CountingProxy {
  port: number;
  connections: number;
  close(): Promise<void>;
}

/** A TCP proxy on 127.0.0.1 to `targetPort` that counts the connections it accepts. */
async function countingProxy(targetPort: number): Promise<CountingProxy> {
  const sockets = new Set<net.Socket>();
  const proxy: CountingProxy = { port: 0, connections: 0, close: async () => undefined };
  const server = net.createServer((client) => {
    proxy.connections++;
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.port = (server.address() as AddressInfo).port;
  proxy.close = async () => {
    sockets.forEach((s) => s.destroy());
    await new Promise<void>((r) => server.close(() => r()));
  };
  return proxy;
}

/** A plain-http origin of byte ranges (the http sources only allowed with private URLs). */
async function startHttpRangeOrigin(data: Buffer): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    const headers = { ETag: '"v1"', 'Content-Type': 'video/mp4', 'Accept-Ranges': 'bytes' };
    if (!m) return void res.writeHead(200, { ...headers, 'Content-Length': data.length }).end(data);
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]), data.length - 1);
    res.writeHead(206, { ...headers, 'Content-Range': `bytes ${start}-${end}/${data.length}`, 'Content-Length': end - start + 1 }).end(data.subarray(start, end + 1));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

describe(`Outbound guard: URLs stored while private addresses were allowed are refused at connect time once they are not (${TEST_DIALECT})`, function () {
  this.timeout(scaled(120_000));
  const DATA = randomBytes(256 * 1024);
  let h: Harness;
  let u: TestUser;
  let rs: RangeServer;
  let httpOrigin: http.Server;
  let s3: LocalS3;
  let receiver: http.Server;
  let deliveries: DeliveryWorker;
  let worker: Worker;
  const proxies: Record<'https' | 'http' | 's3' | 'hook', CountingProxy> = {} as never;
  /** Connections accepted by every proxy when the setting was turned off. */
  let atTurnOff = -1;
  const accepted = () => Object.values(proxies).reduce((n, p) => n + p.connections, 0);
  const ids = { httpsVideo: '', httpVideo: '', bucketVideo: '', locationOut: '', givenOut: '', inputLocation: '', outputLocation: '', hookHttp: '', hookHttps: '' };
  /** The deliveries (one per webhook) attempted while the setting was on. */
  let hookDeliveries: string[] = [];

  const { get, post } = apiRequests(
    () => h,
    () => u,
  );
  const s3Bucket = () => ({
    bucket: 'media',
    endpoint: `http://127.0.0.1:${proxies.s3.port}`,
    region: s3.region,
    forcePathStyle: true,
    accessKey: s3.credentials.accessKey,
    secretAccessKey: s3.credentials.secretAccessKey,
  });
  const uploadStatus = async (videoId: string) => (await findVideo(h.database.db, videoId))?.upload?.status;
  const outputStatus = async (videoId: string) => (await findVideo(h.database.db, videoId))?.output?.status;
  const waitFailed = (what: string, status: () => Promise<string | undefined>) =>
    waitFor(`${what} FAILED`, async () => {
      const s = await status();
      assert.notEqual(s, 'DONE', `${what} completed: its source or bucket was reached`);
      return s === 'FAILED';
    });
  const uploadError = async (videoId: string) => (await get(`/v1/videos/${videoId}/in/status`)).body.upload.uploadState.error;
  const outputError = async (videoId: string) => (await get(`/v1/videos/${videoId}/out/status`)).body.output.state.error;
  const webhookEvent = async (id: string) => (await get(`/v1/webhooks/events/${id}`)).body;
  const pendingJobs = async () => (await h.database.db('jobs').whereIn('status', ['queued', 'running']).select('kind')).map((j: { kind: string }) => j.kind);

  before(async () => {
    rs = await startRangeServer();
    rs.serve('/a.mp4', DATA, { contentType: 'video/mp4' });
    httpOrigin = await startHttpRangeOrigin(DATA);
    s3 = await startLocalS3({ buckets: ['media'] });
    const client = s3.client();
    await client.send(new PutObjectCommand({ Bucket: 'media', Key: 'in/c.mp4', Body: DATA, ContentType: 'video/mp4' }));
    client.destroy();
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(500).end('not yet'));
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    proxies.https = await countingProxy(Number(new URL(rs.origin).port));
    proxies.http = await countingProxy((httpOrigin.address() as AddressInfo).port);
    proxies.s3 = await countingProxy(Number(new URL(s3.endpoint).port));
    proxies.hook = await countingProxy((receiver.address() as AddressInfo).port);
    h = await createHarness({ allowPrivateUrls: true, extraCa: [rs.ca] });
    u = await h.user();
    // As main.ts builds it: the services' policy, which follows the configuration.
    deliveries = new DeliveryWorker({ db: h.services.db, clock: h.clock, signingKeys: h.services.signingKeys, policy: h.services.outbound, log: pino({ level: 'silent' }) }, { random: () => 0.5 });
  });
  after(async () => {
    await deliveries?.stop();
    await h?.close();
    await Promise.all(Object.values(proxies).map((p) => p.close()));
    await rs?.close();
    await new Promise<void>((r) => httpOrigin.close(() => r()));
    await new Promise<void>((r) => receiver.close(() => r()));
    await s3?.close();
    console.log(`      connections accepted after the setting was turned off (${TEST_DIALECT}): ${atTurnOff < 0 ? 'n/a' : accepted() - atTurnOff}`);
  });

  it('with the setting on: a webhook, locations, video-in sources (https and http on loopback) and video-out targets are stored, copies queued, a delivery failed and is to be retried', async () => {
    for (const [key, url] of [
      ['hookHttp', `http://127.0.0.1:${proxies.hook.port}/hook`],
      ['hookHttps', `https://0x7f000001:${proxies.hook.port}/hook`],
    ] as const) {
      const res = await post('/v1/webhooks', { name: key, url, eventTypes: ['video_in.failed', 'video_out.failed'], active: true, maxTotalRetryDelayMinutes: 24 * 60 });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      ids[key] = res.body.id;
    }
    const input = await post('/v1/input-locations/bucket', { name: 'in', ...s3Bucket() });
    assert.equal(input.status, 201, JSON.stringify(input.body));
    ids.inputLocation = input.body.id;
    const output = await post('/v1/output-locations/bucket', { name: 'out', ...s3Bucket() });
    assert.equal(output.status, 201, JSON.stringify(output.body));
    ids.outputLocation = output.body.id;

    const created = async (res: { status: number; body: any }) => {
      assert.equal(res.status, 202, JSON.stringify(res.body));
      return res.body.videoId ?? res.body.id;
    };
    ids.httpsVideo = await created(await post('/v1/videos/in/https', { name: 'https', url: `https://127.0.0.1:${proxies.https.port}/a.mp4` }));
    ids.httpVideo = await created(await post('/v1/videos/in/https', { name: 'http', url: `http://127.0.0.1:${proxies.http.port}/a.mp4` }));
    ids.bucketVideo = await created(await post(`/v1/videos/in/bucket/${ids.inputLocation}`, { name: 'bucket', objectKey: 'in/c.mp4' }));
    ids.locationOut = await storedVideo(h, u);
    assert.equal((await post(`/v1/videos/${ids.locationOut}/out/bucket/${ids.outputLocation}`, { objectKeyPrefix: 'out/location' })).status, 202);
    ids.givenOut = await storedVideo(h, u);
    assert.equal((await post(`/v1/videos/${ids.givenOut}/out/bucket`, { s3Bucket: s3Bucket(), objectKeyPrefix: 'out/given' })).status, 202);
    assert.deepEqual((await pendingJobs()).sort(), ['video-in.copy', 'video-in.copy', 'video-in.copy', 'video-out.copy', 'video-out.copy']);

    // A delivery attempted while allowed: the receiver answers 500, a retry is scheduled.
    const recorded = await h.services.db.transaction((trx) =>
      recordEvent(trx, { teamId: u.teamId, eventType: 'video_in.failed', videoId: ids.httpsVideo, occurredAt: h.clock.now(), error: stageError('videoIn', 'COPY_FAILED') }),
    );
    hookDeliveries = recorded.map((d) => d.id);
    assert.equal(hookDeliveries.length, 2, 'one delivery per webhook');
    await deliveries.drain();
    for (const id of hookDeliveries) {
      const first = await webhookEvent(id);
      assert.equal(first.responses.length, 1, JSON.stringify(first));
      assert.equal(first.successful, null, 'to be retried');
    }

    assert.ok(proxies.https.connections > 0 && proxies.http.connections > 0 && proxies.s3.connections > 0 && proxies.hook.connections > 0, 'with the setting on, every listener was reached');
  });

  it('turned off: the queued copies fail where they connect, with the documented codes, and nothing reaches a listener', async () => {
    h.config.allowPrivateUrls = false;
    atTurnOff = accepted();
    worker = h.startWorker();
    await waitFailed('https video in', () => uploadStatus(ids.httpsVideo));
    await waitFailed('http video in', () => uploadStatus(ids.httpVideo));
    await waitFailed('bucket video in', () => uploadStatus(ids.bucketVideo));
    await waitFailed('video out to a location', () => outputStatus(ids.locationOut));
    await waitFailed('video out to a given bucket', () => outputStatus(ids.givenOut));
    assertStageError(await uploadError(ids.httpsVideo), 'INVALID_HTTPS_URL');
    assertStageError(await uploadError(ids.httpVideo), 'INVALID_HTTPS_URL');
    assertStageError(await uploadError(ids.bucketVideo), 'INVALID_BUCKET_ENDPOINT');
    assertStageError(await outputError(ids.locationOut), 'INVALID_BUCKET_ENDPOINT');
    assertStageError(await outputError(ids.givenOut), 'INVALID_BUCKET_ENDPOINT');
    const copies = await h.database.db('jobs').whereIn('kind', ['video-in.copy', 'video-out.copy']).select('attempts');
    assert.ok(
      copies.every((j: { attempts: number }) => j.attempts === 1),
      'a refusal is final: no retry',
    );
    assert.equal(accepted() - atTurnOff, 0, 'a listener accepted a connection');
  });

  it('turned off: restarts are refused at the API with 400 INVALID_HTTPS_URL / INVALID_BUCKET_ENDPOINT, and nothing is queued', async () => {
    expectError(await post(`/v1/videos/${ids.httpsVideo}/in/restart`), 400, 'INVALID_HTTPS_URL');
    expectError(await post(`/v1/videos/${ids.httpVideo}/in/restart`), 400, 'INVALID_HTTPS_URL');
    expectError(await post(`/v1/videos/${ids.bucketVideo}/in/restart`), 400, 'INVALID_BUCKET_ENDPOINT');
    expectError(await post(`/v1/videos/${ids.locationOut}/out/restart`), 400, 'INVALID_BUCKET_ENDPOINT');
    expectError(await post(`/v1/videos/${ids.givenOut}/out/restart`), 400, 'INVALID_BUCKET_ENDPOINT');
    assert.deepEqual(await pendingJobs(), []);
    assert.equal(accepted() - atTurnOff, 0, 'a listener accepted a connection');
  });

  it('restarts accepted while the setting was on and run after it changed are refused where they connect', async () => {
    // No worker while the setting is on: the restarted copies run only after it is off again.
    await worker.stop();
    h.config.allowPrivateUrls = true;
    for (const videoId of [ids.httpsVideo, ids.httpVideo, ids.bucketVideo]) assert.equal((await post(`/v1/videos/${videoId}/in/restart`)).status, 202);
    for (const videoId of [ids.locationOut, ids.givenOut]) assert.equal((await post(`/v1/videos/${videoId}/out/restart`)).status, 202);
    h.config.allowPrivateUrls = false;
    const mark = accepted();
    assert.deepEqual((await pendingJobs()).sort(), ['video-in.copy', 'video-in.copy', 'video-in.copy', 'video-out.copy', 'video-out.copy']);
    worker = h.startWorker();
    for (const videoId of [ids.httpsVideo, ids.httpVideo, ids.bucketVideo]) await waitFailed(`restarted ${videoId}`, () => uploadStatus(videoId));
    for (const videoId of [ids.locationOut, ids.givenOut]) await waitFailed(`restarted ${videoId}`, () => outputStatus(videoId));
    assertStageError(await uploadError(ids.httpsVideo), 'INVALID_HTTPS_URL');
    assertStageError(await uploadError(ids.httpVideo), 'INVALID_HTTPS_URL');
    assertStageError(await uploadError(ids.bucketVideo), 'INVALID_BUCKET_ENDPOINT');
    assertStageError(await outputError(ids.locationOut), 'INVALID_BUCKET_ENDPOINT');
    assertStageError(await outputError(ids.givenOut), 'INVALID_BUCKET_ENDPOINT');
    assert.deepEqual(await pendingJobs(), []);
    assert.equal(accepted() - mark, 0, 'a listener accepted a connection');
    assert.equal(accepted() - atTurnOff, 0);
  });

  it('turned off: the webhook retry and the new deliveries are refused (INVALID_HTTPS_URL), the receiver gets nothing', async () => {
    h.clock.advance(2 * 60 * 60_000); // past every scheduled retry
    await deliveries.drain();
    for (const id of hookDeliveries) {
      const retried = await webhookEvent(id);
      assert.equal(retried.responses.length, 2, JSON.stringify(retried.responses));
      assert.equal(retried.responses[1].errorCode, 'INVALID_HTTPS_URL', JSON.stringify(retried.responses[1]));
      assert.equal(retried.responses[1].statusCode, 0);
    }
    // The video_in.failed and video_out.failed events of the copies refused above.
    const fresh = (await h.database.db('webhook_deliveries').whereNotIn('id', hookDeliveries).select('id')).map((d: { id: string }) => d.id);
    assert.ok(fresh.length >= 2 * 5, `deliveries of the refused copies' failures: ${fresh.length}`);
    for (const id of fresh) {
      const e = await webhookEvent(id);
      assert.ok(e.responses.length > 0, JSON.stringify(e));
      for (const r of e.responses) assert.equal(r.errorCode, 'INVALID_HTTPS_URL', JSON.stringify(r));
    }
    assert.equal(accepted() - atTurnOff, 0, 'a listener accepted a connection');
  });
});
