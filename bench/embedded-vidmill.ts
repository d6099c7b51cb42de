/**
 * The embedded Vidmill the processing, video-out and split benchmarks drive: by default SQLite and
 * local-disk platform storage in a temp directory (or the database and blob folder given, e.g. a
 * PostgreSQL database and the blob folder that Vidmill processes share), one user with a funded
 * wallet, a stored master video, and a Worker running only the job kinds the benchmark times.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import pino from 'pino';
import { Config, loadConfig } from '../src/config';
import { createServices, jobDefinitions, Services } from '../src/composition';
import { DatabaseConfig, Db, migrateToLatest, openDatabase } from '../src/db/database';
import { insertVideo, recordVideoFile, videoStageWrites } from '../src/features/videos/testing';
import { type ProbeResult, storedProbeFacts } from '../src/media';
import { Worker } from '../src/jobs/worker';
import { systemClock } from '../src/shared/clock';
import { storeFile } from '../src/storage/blob-files';
import { LocalDiskStore } from '../src/storage/local-disk-store';

export interface EmbeddedVidmill {
  db: Db;
  s: Services;
  blobs: LocalDiskStore;
  /** The services' master key (processes sharing the database need the same: VIDMILL_MASTER_KEY). */
  masterKey: Buffer;
  /** Services on the same database, storage and key with other settings (e.g. `processing`). */
  servicesWith(overrides: Partial<Config>): Services;
  userId: string;
  teamId: string;
  projectId: string;
}

export interface EmbeddedOptions {
  /** Default: SQLite in `dir`. */
  database?: DatabaseConfig;
  /** Platform storage's folder; default `<dir>/blobs`. */
  blobDir?: string;
  /** Configuration on top of the defaults (e.g. `processing`). */
  config?: Partial<Config>;
}

export async function embeddedVidmill(dir: string, opts: EmbeddedOptions = {}): Promise<EmbeddedVidmill> {
  const db = openDatabase(opts.database ?? { client: 'sqlite', filename: path.join(dir, 'vidmill.sqlite') });
  await migrateToLatest(db);
  // The benchmarks' sources and buckets are local servers (127.0.0.1): private addresses allowed.
  const config = { ...loadConfig({}), workDir: path.join(dir, 'work'), allowPrivateUrls: true, ...opts.config };
  const blobs = new LocalDiskStore(opts.blobDir ?? path.join(dir, 'blobs'));
  const masterKey = randomBytes(32);
  const servicesWith = (overrides: Partial<Config>) => createServices({ db, clock: systemClock, masterKey, blobs, config: { ...config, ...overrides } });
  const s = servicesWith({});
  const { user, team } = await s.accounts.createUserWithTeam({ email: 'bench@example.com', password: 'bench-password-1', name: 'Bench', teamName: 'Bench' });
  await s.ledger.topUp(team.id, 1_000_000_000);
  const projectId = (await db('projects').where({ team_id: team.id }).first()).id as string;
  return { db, s, blobs, masterKey, servicesWith, userId: user.id, teamId: team.id, projectId };
}

/** Stores `source` in platform storage as a master video whose copy is DONE; returns its id and stored facts. */
export async function storedMaster(v: EmbeddedVidmill, source: string, file: { name: string; type: string; containerName: string }) {
  const videoId = randomUUID();
  const blobKey = `videos/${videoId}/file`;
  const stored = await storeFile(v.blobs, blobKey, source);
  const now = new Date();
  await insertVideo(v.db, {
    id: videoId,
    kind: 'MASTER',
    teamId: v.teamId,
    projectId: v.projectId,
    userId: v.userId,
    name: 'Bench source',
    createdAt: now,
    file: { ...file, size: stored.size, lastModified: now },
    uploadStatus: 'DONE',
  });
  await recordVideoFile(v.db, videoId, { blobKey, crc32c: stored.crc32c, size: stored.size }, now);
  return { videoId, blobKey, stored };
}

/**
 * `storedMaster` whose ingestion is DONE with `probe`'s metadata and the facts ingestion records
 * (storedProbeFacts: without them a source is planned as one of before they were recorded, one
 * job, never split).
 */
export async function ingestedMaster(v: EmbeddedVidmill, source: string, probe: ProbeResult, file: { name: string; type: string; containerName: string }): Promise<string> {
  const { videoId } = await storedMaster(v, source, file);
  await videoStageWrites.updateIngestion(v.db, videoId, { status: 'DONE', progress: 100, metadataAvailable: true, metadata: probe.metadata as never, probe: storedProbeFacts(probe) }, new Date());
  return videoId;
}

/** A started Worker (one job at a time) with the handlers and give-ups of `kinds` only. */
export function benchWorker(s: Services, kinds: readonly string[]): Worker {
  const worker = new Worker(s.jobs, { workerId: 'bench', log: pino({ level: 'silent' }), pollMs: 50, concurrency: 1 });
  for (const job of jobDefinitions(s)) if (kinds.includes(job.kind)) worker.define(job);
  s.jobs.onEnqueue(() => worker.notify());
  worker.start();
  return worker;
}
