/**
 * A plain local HTTP server whose answers a test scripts one request at a time (status,
 * headers, body, or a dropped connection), recording every request with its body. For the SDK's
 * retry rules, which need answers (429, 503, a reset) the real app does not give on demand.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Scripted {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** Close the connection without answering. */
  drop?: boolean;
}

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface LocalServer {
  baseUrl: string;
  seen: SeenRequest[];
  /** Answers for the next requests, in order; after them every request is answered 200 `{}`. */
  script(...answers: Scripted[]): void;
  close(): Promise<void>;
}

export async function startLocalServer(): Promise<LocalServer> {
  const seen: SeenRequest[] = [];
  let queue: Scripted[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const a = queue.shift() ?? { status: 200, body: {} };
      if (a.drop) {
        req.socket.destroy();
        return;
      }
      res.writeHead(a.status ?? 200, { 'Content-Type': 'application/json', 'X-Request-Id': `req-${seen.length}`, ...a.headers });
      res.end(JSON.stringify(a.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    seen,
    script(...answers) {
      queue = answers;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
