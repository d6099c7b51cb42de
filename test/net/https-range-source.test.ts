/**
 * HttpsRangeSource on kept-alive connections: a request that meets a connection the origin has
 * closed meanwhile is sent again on a fresh one. The crash soak found the failure: a probe
 * 6 s after the previous one reused a connection the origin's 5 s idle timeout was closing, and
 * video in answered 400 INVALID_HTTPS_URL "not reachable (ECONNRESET)" for a healthy source.
 */
import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { HttpsRangeSource } from '../../src/net/https-range-source';

describe('HttpsRangeSource on kept-alive connections', () => {
  let server: http.Server;
  let agent: http.Agent;
  let origin: string;
  /** Requests seen, with the connection each came on. */
  const seen: Array<{ socket: number; range?: string }> = [];
  /** Drop the next request that arrives on a connection already used (as an idle timeout firing as it arrives would). */
  let dropReused = 0;
  const DATA = Buffer.from('0123456789abcdef');

  before(async () => {
    const sockets = new Map<Socket, number>();
    const used = new Set<Socket>();
    server = http.createServer((req, res) => {
      const socket = req.socket;
      if (!sockets.has(socket)) sockets.set(socket, sockets.size + 1);
      seen.push({ socket: sockets.get(socket)!, range: req.headers.range });
      if (used.has(socket) && dropReused > 0) {
        dropReused--;
        socket.destroy();
        return;
      }
      used.add(socket);
      const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '')!;
      const [start, end] = [Number(m[1]), Number(m[2])];
      res.writeHead(206, { 'Content-Range': `bytes ${start}-${end}/${DATA.length}`, 'Content-Length': end - start + 1, ETag: '"v1"', 'Content-Type': 'video/mp4' });
      res.end(DATA.subarray(start, end + 1));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  });
  after(async () => {
    agent.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('a request on a connection the origin dropped is sent again on a fresh connection', async () => {
    const source = new HttpsRangeSource(`${origin}/video.mp4`, { httpAgent: agent });
    const first = await source.probe();
    assert.equal(first.size, DATA.length);
    dropReused = 1;
    const second = await source.probe();
    assert.equal(second.size, DATA.length);
    assert.deepEqual(
      seen.map((s) => s.socket),
      [1, 1, 2],
      'the second probe went on the kept-alive connection, was dropped, and was sent again on a new one',
    );
    const range = await source.openRange(4, 7, second);
    const chunks: Buffer[] = [];
    for await (const c of range) chunks.push(c);
    assert.equal(Buffer.concat(chunks).toString(), '4567');
  });

  it('a fresh connection that fails is not retried', async () => {
    const closed = http.createServer((req) => req.socket.destroy());
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    let requests = 0;
    closed.on('request', () => requests++);
    try {
      const source = new HttpsRangeSource(`http://127.0.0.1:${(closed.address() as AddressInfo).port}/x.mp4`, { httpAgent: new http.Agent({ keepAlive: true }) });
      await assert.rejects(source.probe(), (err: NodeJS.ErrnoException) => err.code === 'ECONNRESET');
      assert.equal(requests, 1);
    } finally {
      closed.closeAllConnections();
      await new Promise((resolve) => closed.close(resolve));
    }
  });
});
