/**
 * A local HTTPS server of byte ranges for copy tests, with a self-signed certificate made by
 * openssl at test time (trust it with `ca`). It serves files from memory (`serve`) or, for files
 * of gigabytes (benchmarks), from disk with `fs.createReadStream` ranges (`serveFile`, memory
 * stays flat), with strong ETags, and honours `Range` and `If-Range` like a well-behaved origin,
 * with modes a test switches on: no range support, a connection dropped in the middle of a part,
 * a file that changes during the copy, a per-connection rate limit. Every request is logged.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface RangeRequestLog {
  path: string;
  range?: string;
  ifRange?: string;
  status: number;
  /** Throttled responses (`bytesPerSecondPerConnection`): the slices sent, each followed by a 50 ms pause. */
  throttledSlices?: number;
}

interface ServedFile {
  data: Buffer;
  /** Served from this file on disk instead of `data` (which is then empty). */
  diskPath?: string;
  /** Bytes of the file: `data.length`, or the disk file's size when it was served. */
  size: number;
  etag: string;
  lastModified: string;
  contentType: string;
  /** A size claimed in Content-Range instead of the data's (a huge source, for limit tests). */
  claimedSize?: number;
}

export interface RangeServer {
  origin: string;
  /** PEM of the self-signed certificate (for `ca`). */
  ca: string;
  requests: RangeRequestLog[];
  serve(urlPath: string, data: Buffer, opts?: { contentType?: string; claimedSize?: number }): void;
  /**
   * Serves the file at `filePath` from disk, each response read with its own
   * `fs.createReadStream` range (memory stays flat for files of gigabytes). The ETag comes from
   * the file's inode, size and the server's version counter, not from its content. The file must
   * not change while served; `changeAfterRangedRequests` gives it a new ETag and date without
   * touching it.
   */
  serveFile(urlPath: string, filePath: string, opts?: { contentType?: string }): void;
  /** Answers `urlPath` with a redirect to `location`. */
  redirect(urlPath: string, location: string, status?: number): void;
  /** Replaces a file's content (new ETag and date), as a source changing mid-copy. */
  change(urlPath: string, data: Buffer): void;
  modes: {
    /** Answer 200 with the whole file to every request. */
    noRanges: boolean;
    /** Range starts whose first request is cut after half its bytes (then the socket is destroyed). */
    dropOnce: Set<number>;
    /** After this many ranged requests, change every file (append a byte). */
    changeAfterRangedRequests?: number;
    /** Bytes per second sent on each response (each connection is throttled on its own). */
    bytesPerSecondPerConnection?: number;
  };
  close(): Promise<void>;
}

export function makeSelfSignedCert(): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
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
  const redirects = new Map<string, { location: string; status: number }>();
  const make = (data: Buffer, opts: { contentType?: string; claimedSize?: number } = {}): ServedFile => ({
    data,
    size: data.length,
    contentType: opts.contentType ?? 'video/mp4',
    claimedSize: opts.claimedSize,
    etag: `"${createHash('sha256').update(data).digest('hex').slice(0, 16)}-${++version}"`,
    lastModified: new Date(Date.UTC(2026, 0, 1) + version * 1000).toUTCString(),
  });
  const makeOnDisk = (diskPath: string, opts: { contentType?: string } = {}): ServedFile => {
    const st = statSync(diskPath);
    return {
      data: Buffer.alloc(0),
      diskPath,
      size: st.size,
      contentType: opts.contentType ?? 'video/mp4',
      etag: `"file-${st.ino.toString(16)}-${st.size.toString(16)}-${++version}"`,
      lastModified: new Date(Date.UTC(2026, 0, 1) + version * 1000).toUTCString(),
    };
  };

  /** The same answers as for a file in memory, with bodies streamed from disk. */
  const answerFromDisk = (reqHeaders: IncomingHttpHeaders, file: ServedFile, log: RangeRequestLog, res: ServerResponse) => {
    const common = { ETag: file.etag, 'Last-Modified': file.lastModified, 'Content-Type': file.contentType };
    const m = /^bytes=(\d+)-(\d*)$/.exec(reqHeaders.range ?? '');
    const ifRange = reqHeaders['if-range'];
    const stale = ifRange !== undefined && ifRange !== file.etag && ifRange !== file.lastModified;
    const send = (status: number, headers: Record<string, string | number>, start: number, end: number, rate?: number) => {
      log.status = status;
      res.writeHead(status, headers);
      if (end < start) return void res.end();
      // Throttled: slices of 1/20 s worth of bytes, one every 50 ms, as for files in memory.
      const slice = rate ? Math.max(1, Math.floor(rate / 20)) : 0;
      const stream = createReadStream(file.diskPath!, { start, end, highWaterMark: slice || 256 * 1024 });
      stream.on('error', (err) => res.destroy(err));
      res.on('close', () => stream.destroy());
      if (!slice) return void stream.pipe(res);
      stream.on('data', (chunk) => {
        res.write(chunk);
        log.throttledSlices = (log.throttledSlices ?? 0) + 1;
        stream.pause();
        setTimeout(() => !res.destroyed && stream.resume(), 50);
      });
      stream.on('end', () => res.end());
    };
    if (modes.noRanges || !m || stale) return send(200, { ...common, 'Content-Length': file.size }, 0, file.size - 1);
    const start = Number(m[1]);
    const end = Math.min(m[2] ? Number(m[2]) : file.size - 1, file.size - 1);
    if (start > end) {
      log.status = 416;
      res.writeHead(416, { 'Content-Range': `bytes */${file.size}` });
      return void res.end();
    }
    const headers = { ...common, 'Accept-Ranges': 'bytes', 'Content-Range': `bytes ${start}-${end}/${file.size}`, 'Content-Length': end - start + 1 };
    if (modes.dropOnce.delete(start)) {
      // The first half of the range, then the socket is destroyed.
      log.status = 206;
      res.writeHead(206, headers);
      const half = Math.floor((end - start + 1) / 2);
      if (half === 0) return void setTimeout(() => res.socket?.destroy(), 5);
      const stream = createReadStream(file.diskPath!, { start, end: start + half - 1 });
      stream.on('error', (err) => res.destroy(err));
      stream.pipe(res, { end: false });
      stream.on('end', () => setTimeout(() => res.socket?.destroy(), 5));
      return;
    }
    send(206, headers, start, end, modes.bytesPerSecondPerConnection);
  };

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
      for (const [p, f] of files) {
        files.set(p, f.diskPath ? makeOnDisk(f.diskPath, { contentType: f.contentType }) : make(Buffer.concat([f.data, Buffer.from([0x42])]), { contentType: f.contentType }));
      }
      modes.changeAfterRangedRequests = undefined;
    }
    const redirect = redirects.get(url.pathname);
    if (redirect) return answer(redirect.status, { Location: redirect.location, 'Content-Length': 0 });
    const file = files.get(url.pathname);
    if (!file) return answer(404, { 'Content-Type': 'text/plain' }, Buffer.from('not found'));
    if (file.diskPath) return answerFromDisk(req.headers, file, log, res);
    const common = { ETag: file.etag, 'Last-Modified': file.lastModified, 'Content-Type': file.contentType };
    const total = file.claimedSize ?? file.data.length;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const ifRange = req.headers['if-range'];
    const stale = ifRange !== undefined && ifRange !== file.etag && ifRange !== file.lastModified;
    if (modes.noRanges || !m || stale) {
      return answer(200, { ...common, 'Content-Length': file.data.length }, file.data);
    }
    const start = Number(m[1]);
    const end = Math.min(m[2] ? Number(m[2]) : file.data.length - 1, file.data.length - 1);
    if (start > end) return answer(416, { 'Content-Range': `bytes */${total}` });
    const body = file.data.subarray(start, end + 1);
    const headers = { ...common, 'Accept-Ranges': 'bytes', 'Content-Range': `bytes ${start}-${end}/${total}`, 'Content-Length': body.length };
    if (modes.dropOnce.delete(start)) {
      log.status = 206;
      res.writeHead(206, headers);
      res.write(body.subarray(0, Math.floor(body.length / 2)), () => setTimeout(() => res.socket?.destroy(), 5));
      return;
    }
    const rate = modes.bytesPerSecondPerConnection;
    if (rate) {
      log.status = 206;
      res.writeHead(206, headers);
      // Slices of 1/20 s worth of bytes, one every 50 ms.
      const slice = Math.max(1, Math.floor(rate / 20));
      let offset = 0;
      const send = () => {
        if (res.destroyed) return;
        if (offset >= body.length) return void res.end();
        const chunk = body.subarray(offset, offset + slice);
        offset += chunk.length;
        res.write(chunk);
        log.throttledSlices = (log.throttledSlices ?? 0) + 1;
        setTimeout(send, 50);
      };
      return send();
    }
    answer(206, headers, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ca: cert,
    requests,
    modes,
    serve(p, data, opts) {
      files.set(p, make(data, opts));
    },
    serveFile(p, filePath, opts) {
      files.set(p, makeOnDisk(filePath, opts));
    },
    redirect(p, location, status = 302) {
      redirects.set(p, { location, status });
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
