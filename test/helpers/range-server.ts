/**
 * A local HTTPS server of byte ranges for copy tests, with a self-signed certificate made by
 * openssl at test time (trust it with `ca`). It serves files from memory with strong ETags and
 * honours `Range` and `If-Range` like a well-behaved origin, with modes a test switches on:
 * no range support, a connection dropped in the middle of a part, a file that changes during
 * the copy. Every request is logged.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface RangeRequestLog {
  path: string;
  range?: string;
  ifRange?: string;
  status: number;
}

interface ServedFile {
  data: Buffer;
  etag: string;
  lastModified: string;
}

export interface RangeServer {
  origin: string;
  /** PEM of the self-signed certificate (for `ca`). */
  ca: string;
  requests: RangeRequestLog[];
  serve(urlPath: string, data: Buffer): void;
  /** Replaces a file's content (new ETag and date), as a source changing mid-copy. */
  change(urlPath: string, data: Buffer): void;
  modes: {
    /** Answer 200 with the whole file to every request. */
    noRanges: boolean;
    /** Range starts whose first request is cut after half its bytes (then the socket is destroyed). */
    dropOnce: Set<number>;
    /** After this many ranged requests, change every file (append a byte). */
    changeAfterRangedRequests?: number;
  };
  close(): Promise<void>;
}

export function makeSelfSignedCert(): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-cert-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
    ], { stdio: 'ignore' });
    return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startRangeServer(): Promise<RangeServer> {
  const { key, cert } = makeSelfSignedCert();
  const files = new Map<string, ServedFile>();
  const requests: RangeRequestLog[] = [];
  const modes: RangeServer['modes'] = { noRanges: false, dropOnce: new Set() };
  let version = 0;
  let ranged = 0;
  const make = (data: Buffer): ServedFile => ({
    data,
    etag: `"${createHash('sha256').update(data).digest('hex').slice(0, 16)}-${++version}"`,
    lastModified: new Date(Date.UTC(2026, 0, 1) + version * 1000).toUTCString(),
  });

  const server = https.createServer({ key, cert }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    const log: RangeRequestLog = { path: url.pathname, range: req.headers.range, ifRange: req.headers['if-range'] as string | undefined, status: 0 };
    requests.push(log);
    const answer = (status: number, headers: Record<string, string | number>, body?: Buffer) => {
      log.status = status;
      res.writeHead(status, headers);
      res.end(body);
    };
    if (req.headers.range && modes.changeAfterRangedRequests !== undefined && ++ranged > modes.changeAfterRangedRequests) {
      for (const [p, f] of files) files.set(p, make(Buffer.concat([f.data, Buffer.from([0x42])])));
      modes.changeAfterRangedRequests = undefined;
    }
    let file = files.get(url.pathname);
    if (!file) return answer(404, { 'Content-Type': 'text/plain' }, Buffer.from('not found'));
    const common = { ETag: file.etag, 'Last-Modified': file.lastModified, 'Content-Type': 'video/mp4' };
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const ifRange = req.headers['if-range'];
    const stale = ifRange !== undefined && ifRange !== file.etag && ifRange !== file.lastModified;
    if (modes.noRanges || !m || stale) {
      return answer(200, { ...common, 'Content-Length': file.data.length }, file.data);
    }
    const start = Number(m[1]);
    const end = Math.min(m[2] ? Number(m[2]) : file.data.length - 1, file.data.length - 1);
    if (start > end) return answer(416, { 'Content-Range': `bytes */${file.data.length}` });
    const body = file.data.subarray(start, end + 1);
    const headers = { ...common, 'Accept-Ranges': 'bytes', 'Content-Range': `bytes ${start}-${end}/${file.data.length}`, 'Content-Length': body.length };
    if (modes.dropOnce.delete(start)) {
      log.status = 206;
      res.writeHead(206, headers);
      res.write(body.subarray(0, Math.floor(body.length / 2)), () => setTimeout(() => res.socket?.destroy(), 5));
      return;
    }
    answer(206, headers, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ca: cert,
    requests,
    modes,
    serve(p, data) {
      files.set(p, make(data));
    },
    change(p, data) {
      files.set(p, make(data));
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
