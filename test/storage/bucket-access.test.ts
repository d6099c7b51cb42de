/**
 * The S3 client of customer buckets connects only through the guarded agents: a host that is or
 * resolves to a non-public address is refused where the socket is opened (after any check at the
 * API, so DNS rebinding and redirects are covered), and nothing reaches the listener. With
 * private URLs allowed the same client reaches it.
 */
import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HeadBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { isNonPublicAddressRefusal } from '../../src/net/outbound-url';
import { BucketSettings, checkBucketAccess, checkObjectPresence, createBucketClient } from '../../src/storage/bucket-access';

describe('Bucket clients connect through the outbound guard', () => {
  let server: http.Server;
  let port: number;
  let connections = 0;
  const deny = { allowPrivateUrls: false };
  const allow = { allowPrivateUrls: true };
  const settings = (endpoint: string): BucketSettings => ({
    bucket: 'media',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKey: 'AKTEST', secretAccessKey: 'secret' },
  });

  before(async () => {
    // Answers every request 200 with no body: enough for HeadBucket and PutObject.
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end());
    });
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    connections = 0;
  });

  it('a name that resolves to loopback is refused at connect time (ERR_NON_PUBLIC_ADDRESS), no connection made', async () => {
    const client = createBucketClient(settings(`http://localhost:${port}`), deny, { maxAttempts: 1 });
    try {
      await assert.rejects(client.send(new HeadBucketCommand({ Bucket: 'media' })), (e: unknown) => isNonPublicAddressRefusal(e));
    } finally {
      client.destroy();
    }
    assert.equal(connections, 0);
  });

  it('an IP literal (which Node connects to without a lookup) is refused at connect time too', async () => {
    for (const host of ['127.0.0.1', '[::ffff:7f00:1]', '0.0.0.0']) {
      const client = createBucketClient(settings(`http://${host}:${port}`), deny, { maxAttempts: 1 });
      try {
        await assert.rejects(client.send(new HeadBucketCommand({ Bucket: 'media' })), (e: unknown) => isNonPublicAddressRefusal(e), host);
      } finally {
        client.destroy();
      }
    }
    assert.equal(connections, 0);
  });

  it('uploads sent with Expect: 100-continue use the guarded agents as well', async () => {
    const client = createBucketClient(settings(`http://localhost:${port}`), deny, { maxAttempts: 1, checksums: 'WHEN_REQUIRED' });
    try {
      const body = Buffer.alloc(3 * 1024 * 1024); // large enough for the SDK to ask Expect: 100-continue
      await assert.rejects(client.send(new PutObjectCommand({ Bucket: 'media', Key: 'k', Body: body })), (e: unknown) => isNonPublicAddressRefusal(e));
    } finally {
      client.destroy();
    }
    assert.equal(connections, 0);
  });

  it('HeadBucket and HeadObject classify a refusal at connect time as endpoint-not-allowed, never as a network error', async () => {
    const access = await checkBucketAccess(settings(`http://localhost:${port}`), deny);
    assert.equal(access.outcome, 'endpoint-not-allowed');
    const presence = await checkObjectPresence(settings(`http://localhost:${port}`), 'k', deny);
    assert.equal(presence.outcome, 'endpoint-not-allowed');
    assert.equal(connections, 0);
  });

  it('with private URLs allowed the same client reaches the listener', async () => {
    assert.deepEqual(await checkBucketAccess(settings(`http://localhost:${port}`), allow), { outcome: 'accessible' });
    assert.ok(connections > 0);
  });

  it('keeps the connection and request timeouts, with the guarded agents installed', async () => {
    const client = createBucketClient(settings(`http://127.0.0.1:${port}`), allow, { connectionTimeoutMs: 1234, requestTimeoutMs: 5678, maxAttempts: 1 });
    try {
      await client.send(new HeadBucketCommand({ Bucket: 'media' }));
      const config = (client.config.requestHandler as any).httpHandlerConfigs();
      assert.equal(config.connectionTimeout, 1234);
      assert.equal(config.requestTimeout, 5678);
      assert.equal(config.socketTimeout, 5678, 'a silent endpoint fails after that long without a byte');
      assert.equal(config.httpAgent.constructor.name, 'GuardedHttpAgent');
      assert.equal(config.httpsAgent.constructor.name, 'GuardedHttpsAgent');
    } finally {
      client.destroy();
    }
  });

  it('every failure without an answer gives one message: a closed port and a silent listener read the same', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const silent = http.createServer(() => undefined); // accepts, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const silentPort = (silent.address() as AddressInfo).port;
    try {
      const refused = await checkBucketAccess(settings(`http://127.0.0.1:${closedPort}`), allow);
      const timedOut = await checkBucketAccess(settings(`http://127.0.0.1:${silentPort}`), allow, { connectionTimeoutMs: 500, requestTimeoutMs: 500, maxAttempts: 1 });
      assert.equal(refused.outcome, 'refused');
      assert.equal(timedOut.outcome, 'refused');
      const strip = (m: string) => m.replace(/127\.0\.0\.1:\d+/, '<endpoint>');
      assert.equal(strip((refused as any).message), strip((timedOut as any).message));
      assert.doesNotMatch((refused as any).message, /ECONN|ETIMEDOUT|timed out|refused/i);
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});
