/**
 * A video whose file is already in platform storage, written directly (row through the store,
 * file through `services.blobs`) as video in and processing leave it: for tests of what comes
 * after (video out, download URLs).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { crc32c } from '../../src/net/crc32c';
import type { OperationStatus } from '../../src/features/videos';
import { insertVideo, recordVideoFile, videoStageWrites } from '../../src/features/videos/testing';
import type { Harness, TestUser } from './harness';

export interface StoredVideoOptions {
  /** The file's bytes; default 1000 random bytes. */
  data?: Buffer;
  fileName?: string;
  /** A master copied in (default), or a clip of a new master. */
  kind?: 'MASTER' | 'CLIP';
  /** Stage of the copy (master) or processing (clip); the file is stored only when DONE (default). */
  stage?: OperationStatus;
  /** The CRC-32C recorded for the file; default its real one. */
  crc?: number;
}

/** Inserts a video of `owner` in their default project; returns its id. */
export async function storedVideo(h: Harness, owner: TestUser, opts: StoredVideoOptions = {}): Promise<string> {
  const db = h.database.db;
  const data = opts.data ?? randomBytes(1000);
  const kind = opts.kind ?? 'MASTER';
  const id = randomUUID();
  const now = h.clock.now();
  const projectId = (await h.request.get('/api/v1/projects/default').set('X-API-Key', owner.apiKey)).body.id;
  const masterVideoId = kind === 'CLIP' ? await storedVideo(h, owner, { data }) : undefined;
  await insertVideo(db, {
    id,
    kind,
    teamId: owner.teamId,
    projectId,
    userId: owner.userId,
    name: `${kind.toLowerCase()} ${id.slice(0, 8)}`,
    masterVideoId,
    sourceVideoId: masterVideoId,
    clipId: kind === 'CLIP' ? id : undefined,
    file: { name: opts.fileName ?? 'beach.mp4', size: data.length, type: 'video/mp4', containerName: 'MPEG-4', lastModified: now },
    uploadStatus: kind === 'MASTER' ? 'INITIAL' : undefined,
    processing: kind === 'CLIP' ? { startMs: 0, endMs: 10_000 } : undefined,
    createdAt: now,
  });
  const stage = opts.stage ?? 'DONE';
  if (stage === 'DONE') {
    await h.services.blobs.put(`videos/${id}/file`, data);
    await recordVideoFile(db, id, { blobKey: `videos/${id}/file`, crc32c: opts.crc ?? crc32c(data), size: data.length }, now);
  }
  if (kind === 'MASTER') await videoStageWrites.updateUpload(db, id, { status: stage, progress: stage === 'DONE' ? 100 : 40 }, now);
  else await videoStageWrites.updateProcessing(db, id, { status: stage, progress: stage === 'DONE' ? 100 : 40 }, now);
  return id;
}
