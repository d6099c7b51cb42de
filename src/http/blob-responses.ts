/**
 * Sends a stored object over HTTP with single-range support (`Range: bytes=a-b`, `bytes=a-`,
 * `bytes=-n`): 206 with Content-Range, 416 for a range outside the object, 200 otherwise.
 * Multi-range requests get the whole object (allowed by RFC 9110).
 */
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

export async function sendBlob(
  req: Request,
  res: Response,
  blobs: BlobStore,
  object: { key: string; size: number; contentType: string; fileName?: string; etag?: string },
): Promise<void> {
  const range = parseRange(req.headers.range, object.size);
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Content-Type', object.contentType);
  res.setHeader('Cache-Control', 'private, max-age=300');
  if (object.etag) res.setHeader('ETag', object.etag);
  if (object.fileName) res.setHeader('Content-Disposition', `inline; filename="${object.fileName.replace(/["\\\r\n]/g, '_')}"`);
  if (range === 'unsatisfiable') {
    res.setHeader('Content-Range', `bytes */${object.size}`);
    res.status(416).end();
    return;
  }
  const partial = range !== undefined && !(range.start === 0 && range.end === object.size - 1);
  const start = range?.start ?? 0;
  const end = range?.end ?? object.size - 1;
  res.setHeader('Content-Length', String(Math.max(0, end - start + 1)));
  if (partial) res.setHeader('Content-Range', `bytes ${start}-${end}/${object.size}`);
  res.status(partial ? 206 : 200);
  if (req.method === 'HEAD' || object.size === 0) {
    res.end();
    return;
  }
  await pipeline(await blobs.read(object.key, { start, end }), res);
}
