/**
 * The videos API: listing, reading, renaming and deleting videos with everything derived from
 * them. Videos are created by video in, the free clip and processing, never here.
 */
import type { Db } from '../../db/database';
import type { JobQueue } from '../../jobs/job-queue';
import type { Clock } from '../../shared/clock';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { Page, PageRequest } from '../../shared/paging';
import { recordEvent } from '../webhooks';
import { StorageMeters } from '../billing';
import type { AccountsService } from '../accounts';
import { VideoEvents } from './video-events';
import { PURGE_BLOBS_JOB, PurgeBlobsPayload } from './videos.jobs';
import { Video, VideoListFilter, videosStore } from './videos.store';
import { TransactionalService } from '../../db/transactional';

/** A video and, for a derived video, the master it comes from (the API shows its file). */
export interface VideoWithMaster {
  video: Video;
  master?: Video;
}

export interface VideoPatch {
  name?: string;
  description?: string;
}

/** Keys a video's data may sit under even when no row names them yet (a copy or ingestion cut short). */
function conventionalBlobKeys(videoId: string): string[] {
  return [`videos/${videoId}/file`, `videos/${videoId}/web.mp4`];
}

/** Cleans up another area's records of videos being removed, in the removing transaction. */
export type RemovalHook = (trx: Db, videoIds: readonly string[]) => Promise<void>;

export interface VideosServiceDeps {
  db: Db;
  clock: Clock;
  accounts: AccountsService;
  jobs: JobQueue;
}

export class VideosService extends TransactionalService {
  private readonly clock: Clock;
  private readonly accounts: AccountsService;
  private readonly jobs: JobQueue;
  private readonly removalHooks: RemovalHook[] = [];

  constructor(deps: VideosServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.accounts = deps.accounts;
    this.jobs = deps.jobs;
  }

  /** Whether a project holds any video (a project with videos cannot be deleted). */
  hasVideosInProject(db: Db, projectId: string): Promise<boolean> {
    return videosStore.existsInProject(db, projectId);
  }

  async list(userId: string, teamId: string | undefined, filter: VideoListFilter, req: PageRequest): Promise<Page<VideoWithMaster>> {
    const page = await videosStore.page(this.db, await this.accounts.listScope(userId, teamId), filter, req);
    return { ...page, items: await this.withMasters(page.items) };
  }

  async get(userId: string, id: string): Promise<VideoWithMaster> {
    const [item] = await this.withMasters([await this.visible(userId, id)]);
    return item!;
  }

  async patch(userId: string, id: string, patch: VideoPatch): Promise<VideoWithMaster> {
    const video = await this.visible(userId, id);
    const changed = (patch.name !== undefined && patch.name !== video.name) || (patch.description !== undefined && patch.description !== video.description);
    if (!changed) return this.get(userId, id);
    await videosStore.rename(this.db, id, patch, this.clock.now());
    return this.get(userId, id);
  }

  async derived(userId: string, id: string, req: PageRequest): Promise<Page<VideoWithMaster>> {
    const video = await this.visible(userId, id);
    const page = await videosStore.derivedPage(this.db, video, req);
    return { ...page, items: await this.withMasters(page.items) };
  }

  /**
   * Deletes the video and every video derived from it in one transaction, with one
   * `video.deleted` event each. `expectedDerivedIds`, when given, must equal the derived set
   * (as a set) or nothing is deleted. Stored data is removed after the commit by a
   * `video.purge-blobs` job enqueued in the same transaction, so a crash cannot lose track of it.
   * Returns the ids removed, the requested video first.
   */
  async delete(userId: string, id: string, expectedDerivedIds?: readonly string[]): Promise<string[]> {
    return this.transactional(async (trx) => {
      const visible = await videosStore.byIdInScope(trx, id, { memberUserId: userId });
      const video = visible && (await videosStore.byIdForUpdate(trx, id));
      if (!video) throw new NotFoundError('Video not found');
      const derivedIds = await videosStore.derivedIds(trx, video);
      if (expectedDerivedIds !== undefined && !sameSet(expectedDerivedIds, derivedIds)) {
        throw new ConflictError('CONFLICTING_DERIVED_VIDEO_IDS', `The derived videos of ${video.id} are [${derivedIds.join(', ')}], not the ids sent; nothing was deleted`);
      }
      return this.within(trx).removeLocked(video, derivedIds);
    });
  }

  /**
   * Removes a video locked by the caller's transaction (call it on `within(trx)`) and the given
   * derived videos: their rows, one `video.deleted` event each, and a `video.purge-blobs` job
   * for their stored data. Video in's abandon uses it too.
   */
  async removeLocked(video: Video, derivedIds: readonly string[]): Promise<string[]> {
    const removed = [video.id, ...derivedIds];
    const payload: PurgeBlobsPayload = {
      videoIds: removed,
      uploads: await videosStore.uploadsOf(this.db, removed),
      blobKeys: [...new Set([...(await videosStore.blobKeysOf(this.db, removed)), ...removed.flatMap(conventionalBlobKeys)])],
    };
    const teamOf = new Map((await videosStore.byIds(this.db, removed)).map((v) => [v.id, v.teamId]));
    for (const hook of this.removalHooks) await hook(this.db, removed);
    await videosStore.deleteWithRecords(this.db, removed);
    const now = this.clock.now();
    for (const videoId of removed) {
      await recordEvent(this.db, { teamId: teamOf.get(videoId) ?? video.teamId, eventType: VideoEvents.videoDeleted, videoId, occurredAt: now });
    }
    await PURGE_BLOBS_JOB.enqueue(this.jobs, this.db, payload);
    // Their stored bytes stop accruing now (the sample is the last write: see storage-meter.ts).
    for (const teamId of new Set([video.teamId, ...teamOf.values()])) await new StorageMeters(this.db).sample(teamId, now);
    return removed;
  }

  /** Registers a hook run by every removal before the rows go (video out releases its uploads). */
  onRemove(hook: RemovalHook): void {
    this.removalHooks.push(hook);
  }

  /** The video when it belongs to a team the user is a member of (else 404, never 403). */
  private async visible(userId: string, id: string): Promise<Video> {
    const video = await videosStore.byIdInScope(this.db, id, { memberUserId: userId });
    if (!video) throw new NotFoundError('Video not found');
    return video;
  }

  private async withMasters(videos: Video[]): Promise<VideoWithMaster[]> {
    const masterIds = [...new Set(videos.map((v) => v.masterVideoId).filter((m): m is string => m !== undefined))];
    const masters = new Map((await videosStore.byIds(this.db, masterIds)).map((m) => [m.id, m]));
    return videos.map((video) => ({ video, master: video.masterVideoId ? masters.get(video.masterVideoId) : undefined }));
  }
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a.map((x) => x.toLowerCase()));
  const right = new Set(b.map((x) => x.toLowerCase()));
  return left.size === right.size && [...left].every((x) => right.has(x));
}
