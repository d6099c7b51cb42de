/**
 * Sends a stored object over HTTP with single-range support (`Range: bytes=a-b`, `bytes=a-`,
 * `bytes=-n`): 206 with Content-Range, 416 for a range outside the object, 200 otherwise.
 * Multi-range requests get the whole object (allowed by RFC 9110).
 */
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request, Response } from 'express';
import type { BlobStore, ByteRange } from '../storage/blob-store';

export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header?.trim() ?? '');
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}

export interface SentObject {
  key: string;
  size: number;
  contentType: string;
  fileName?: string;
  etag?: string;
  /** `inline` (default: shown in the browser) or `attachment` (saved under `fileName`). */
  disposition?: 'inline' | 'attachment';
}

/**
 * The Content-Disposition of a download (RFC 6266): `filename="..."`, an ASCII fallback that
 * keeps every readable ASCII character (spaces, parentheses, dashes, dots...; accents dropped
 * from letters, anything else, `"`, `\` and `%` as `_`), plus `filename*=UTF-8''...` (RFC 8187,
 * formerly 5987) with the exact name whenever the fallback differs from it.
 */
export function contentDisposition(disposition: 'inline' | 'attachment', fileName: string): string {
  const plain = fileName
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]|["\\%]/gu, '_');
  if (plain === fileName) return `${disposition}; filename="${plain}"`;
  // attr-char (RFC 8187): letters, digits and !#$&+-.^_`|~ stay; every other byte is %-encoded.
  const extended = Array.from(Buffer.from(fileName.normalize('NFC'), 'utf8'), (b) =>
    /[A-Za-z0-9!#$&+\-.^_`|~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
  ).join('');
  return `${disposition}; filename="${plain}"; filename*=UTF-8''${extended}`;
}

/**
 * Answers the request with the object and resolves with the number of body bytes handed to the
 * connection. A response cut short (the client went away) rejects with an error whose
 * `bytesSent` says how many bytes went out before.
 */
export async function sendBlob(req: Request, res: Response, blobs: BlobStore, object: SentObject): Promise<number> {
  const range = parseRange(req.headers.range, object.size);
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Content-Type', object.contentType);
  res.setHeader('Cache-Control', 'private, max-age=300');
  if (object.etag) res.setHeader('ETag', object.etag);
  if (object.fileName) res.setHeader('Content-Disposition', contentDisposition(object.disposition ?? 'inline', object.fileName));
  if (range === 'unsatisfiable') {
    res.setHeader('Content-Range', `bytes */${object.size}`);
    res.status(416).end();
    return 0;
  }
  const partial = range !== undefined && !(range.start === 0 && range.end === object.size - 1);
  const start = range?.start ?? 0;
  const end = range?.end ?? object.size - 1;
  res.setHeader('Content-Length', String(Math.max(0, end - start + 1)));
  if (partial) res.setHeader('Content-Range', `bytes ${start}-${end}/${object.size}`);
  res.status(partial ? 206 : 200);
  if (req.method === 'HEAD' || object.size === 0) {
    res.end();
    return 0;
  }
  let sent = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      sent += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(await blobs.read(object.key, { start, end }), counter, res);
  } catch (err) {
    throw Object.assign(err as Error, { bytesSent: sent });
  }
  return sent;
}
