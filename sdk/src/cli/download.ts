/**
 * `vidmill download <videoId> [-o file]`: a download link (`generateVideoDownloadUrl`), then the
 * file streamed to disk with progress, its CRC-32C checked when the server gives one.
 * `vidmill compare <a> <b>`: the comparison page's link.
 */
import { createWriteStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Command } from 'commander';
import { unwrap } from '../client';
import { action, checkInterrupted, CliError, EXIT, formatBytes, positiveInt, type Context } from './context';
import { createProgress } from './progress';

/** CRC-32C (Castagnoli, reflected 0x82F63B78), as the API reports it (unsigned 32-bit). */
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32cUpdate(crc: number, data: Uint8Array): number {
  let c = ~crc >>> 0;
  for (const byte of data) c = (CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8)) >>> 0;
  return ~c >>> 0;
}

async function downloadCommand(ctx: Context, videoId: string, o: { output?: string; durationMinutes?: number; force?: boolean }) {
  const link = unwrap(await ctx.client.api.POST('/v1/videos/{videoId}/out/https', { params: { path: { videoId }, query: { durationMinutes: o.durationMinutes } } }));
  const target = path.resolve(o.output ?? link.suggestedFileName);
  if (!o.force) {
    const exists = await fs.stat(target).then(
      () => true,
      () => false,
    );
    if (exists) throw new CliError(EXIT.USAGE, `${target} exists; pass --force to overwrite it`, 'USAGE');
  }
  const res = await fetch(link.presignedUrl, { signal: ctx.signal });
  if (!res.ok || !res.body) throw new CliError(EXIT.API_ERROR, `The download answered HTTP ${res.status}`, `HTTP_${res.status}`);
  const total = Number(res.headers.get('content-length') ?? link.fileSize);
  const bar = createProgress({ label: 'download', total, unit: 'bytes' });
  let received = 0;
  let crc = 0;
  const partial = `${target}.part`;
  try {
    await pipeline(
      Readable.fromWeb(res.body as WebReadableStream<Uint8Array>),
      new Transform({
        transform(chunk: Buffer, _enc, done) {
          received += chunk.length;
          crc = crc32cUpdate(crc, chunk);
          bar.update(received);
          done(null, chunk);
        },
      }),
      createWriteStream(partial),
      { signal: ctx.signal },
    );
  } catch (err) {
    bar.stop();
    await fs.rm(partial, { force: true });
    checkInterrupted(ctx.signal);
    throw err;
  }
  bar.stop();
  if (received !== link.fileSize) {
    await fs.rm(partial, { force: true });
    throw new CliError(EXIT.FAILED, `Received ${received} bytes, expected ${link.fileSize}`, 'SIZE_MISMATCH');
  }
  if (link.crc32cChecksum !== undefined && crc !== link.crc32cChecksum) {
    await fs.rm(partial, { force: true });
    throw new CliError(EXIT.FAILED, `CRC-32C of the download is ${crc}, the server recorded ${link.crc32cChecksum}`, 'CHECKSUM_MISMATCH');
  }
  await fs.rename(partial, target);
  const doc = { videoId, file: target, size: received, crc32c: crc, checksumVerified: link.crc32cChecksum !== undefined, mimeType: link.mimeType };
  ctx.result(doc, () => `${target}\t${formatBytes(received)}${doc.checksumVerified ? '\tCRC-32C verified' : ''}`);
}

async function compareCommand(ctx: Context, a: string, b: string) {
  const link = unwrap(await ctx.client.api.GET('/v1/videos/{videoId}/compare-with/{targetVideoId}', { params: { path: { videoId: a, targetVideoId: b } } }));
  ctx.result(link, () => link.link);
}

export function registerDownload(program: Command): void {
  program
    .command('download <videoId>')
    .description('Download a video’s file, with progress and its CRC-32C checked')
    .option('-o, --output <file>', 'where to write it (default: the suggested file name, in the current folder)')
    .option('--duration-minutes <n>', 'validity of the download link (1..60)', positiveInt('--duration-minutes'))
    .option('-f, --force', 'overwrite the output file when it exists')
    .action(action(downloadCommand));
  program.command('compare <videoId> <targetVideoId>').description('Print the link of the page that compares two versions of a video (valid 24 hours)').action(action(compareCommand));
}
