/**
 * The description of a source file shown in `upload.file` before anything has been copied:
 * name, size, MIME type and container, from the file name's extension and what the source
 * says. Ingestion later reads the real container with ffprobe (`ingestion.metadata`).
 */
import path from 'node:path';
import type { SourceInfo } from '../../net/https-range-source';
import type { VideoFileInfo } from '../videos';

const BY_EXTENSION: Record<string, { type: string; container: string }> = {
  mp4: { type: 'video/mp4', container: 'MPEG-4' },
  m4v: { type: 'video/x-m4v', container: 'MPEG-4' },
  mov: { type: 'video/quicktime', container: 'QuickTime' },
  qt: { type: 'video/quicktime', container: 'QuickTime' },
  mxf: { type: 'application/mxf', container: 'MXF' },
  mkv: { type: 'video/x-matroska', container: 'Matroska' },
  webm: { type: 'video/webm', container: 'WebM' },
  ts: { type: 'video/mp2t', container: 'MPEG-TS' },
  m2ts: { type: 'video/mp2t', container: 'MPEG-TS' },
  mts: { type: 'video/mp2t', container: 'MPEG-TS' },
  mpg: { type: 'video/mpeg', container: 'MPEG-PS' },
  mpeg: { type: 'video/mpeg', container: 'MPEG-PS' },
  avi: { type: 'video/x-msvideo', container: 'AVI' },
  y4m: { type: 'video/x-yuv4mpeg', container: 'YUV4MPEG2' },
};

const GENERIC_TYPES = /^(application\/octet-stream|binary\/octet-stream|application\/x-download)\b/i;

export function videoFileFromSource(fileName: string, source: SourceInfo, now: Date): VideoFileInfo {
  const known = BY_EXTENSION[path.extname(fileName).slice(1).toLowerCase()];
  const sent = source.contentType?.split(';')[0]!.trim().toLowerCase();
  const type = sent && !GENERIC_TYPES.test(sent) ? sent : (known?.type ?? 'application/octet-stream');
  const lastModified = source.lastModified ? new Date(source.lastModified) : undefined;
  return {
    name: fileName,
    size: source.size,
    type,
    containerName: known?.container ?? 'unknown',
    lastModified: lastModified && !Number.isNaN(lastModified.getTime()) ? lastModified : now,
  };
}
