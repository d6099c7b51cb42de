/**
 * A local webhook receiver whose answers the test controls (status, body, headers such as
 * Retry-After, delay, a request held open, dropped connection). It verifies the signature of every request it
 * receives with the SDK's `verifyWebhook` (keys through the API, or the test's own key source).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook, type VerifyWebhookOptions } from '../../sdk/src/verify-webhook';
import { scaled } from './timeouts';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  verified: boolean;
  verifyError?: string;
  receivedAt: number;
  /** Which connection it came on (1, 2, ... in the order they were opened). */
  connection: number;
}

export interface Answer {
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  delayMs?: number;
  /** Answer only once this has settled (the request is held open until then). */
  until?: Promise<unknown>;
  /** Close the connection without answering. */
  drop?: boolean;
  /** Reset the connection (TCP RST) without answering, as a server does to a request on a connection it has just closed. */
  reset?: boolean;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** How to answer the next requests (default 200 "ok"). */
  answer(fn: (r: Received, index: number) => Answer): void;
  /** Resolves when `n` requests in total have been received; fails after `timeoutMs` (default 10 s, scaled: test/helpers/timeouts.ts). */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(verification: VerifyWebhookOptions, path = '/hook'): Promise<Receiver> {
  const received: Received[] = [];
  let answerFn: (r: Received, index: number) => Answer = () => ({ status: 200, body: 'ok' });
  const waiters: Array<() => void> = [];
  const connections = new WeakMap<object, number>();
  let opened = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const r: Received = { headers: req.headers, body, json: safeJson(body), verified: false, receivedAt: Date.now(), connection: connections.get(req.socket)! };
        try {
          await verifyWebhook(req.headers, body, verification);
          r.verified = true;
        } catch (err: any) {
          r.verifyError = `${err.reason ?? ''} ${err.message}`;
        }
        const index = received.length;
        received.push(r);
        waiters.forEach((w) => w());
        const a = answerFn(r, index);
        if (a.delayMs) await new Promise((x) => setTimeout(x, a.delayMs));
        if (a.until) await a.until.catch(() => undefined);
        if (a.reset) {
          req.socket.resetAndDestroy();
          return;
        }
        if (a.drop) {
          req.socket.destroy();
          return;
        }
        res.writeHead(a.status ?? 200, { 'Content-Type': 'text/plain', ...(a.headers ?? {}) });
        res.end(a.body ?? 'ok');
      })();
    });
  });
  server.on('connection', (socket) => connections.set(socket, ++opened));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    answer(fn) {
      answerFn = fn;
    },
    waitFor(n, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (received.length >= n) {
            clearTimeout(timer);
            resolve(received);
            return true;
          }
          return false;
        };
        const timer = setTimeout(() => reject(new Error(`only ${received.length} of ${n} requests received`)), scaled(timeoutMs));
        if (!check()) waiters.push(check);
      });
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function safeJson(s: string): any {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}
