/**
 * Scratch folders of running jobs under `<data dir>/work` (media downloads, thumbnails, web
 * videos, processing output). Several worker processes may share one data directory, so every
 * claim of a job gets a folder of its own, named after the job and the claim's lease token:
 *
 *   <root>/job-<job id>.<claim id>      (claim id: the part of the lease token after '#')
 *
 * A folder belongs to a live claim exactly while its job is `running` with that lease token in
 * the database. Who removes what:
 * - the worker running the claim, when the handler returns (whatever the outcome);
 * - a worker taking a job over (it claims a job that was requeued after a lost lease, or its
 *   lease sweep requeues or fails the job): every folder of earlier claims of that job;
 * - a worker at start: every entry that belongs to no live claim (`sweep`). It lists the folders
 *   before it reads the leases, and a worker creates a claim's folder only after the claim has
 *   committed, so a live claim's folder is never taken for an orphan.
 */
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';

const PREFIX = 'job-';

/** The claim id of a lease token `<owner>#<uuid>`: the uuid (file-name safe). */
export function claimIdOf(leaseToken: string): string {
  const id = leaseToken.slice(leaseToken.lastIndexOf('#') + 1);
  if (!/^[0-9a-f-]{1,64}$/i.test(id)) throw new Error(`unexpected lease token ${leaseToken}`);
  return id;
}

export class JobScratch {
  constructor(readonly root: string) {}

  /** The folder of one claim (not created). */
  folderOf(jobId: string, leaseToken: string): string {
    return path.join(this.root, `${PREFIX}${jobId}.${claimIdOf(leaseToken)}`);
  }

  /** Creates (if needed) and returns the folder of one claim. */
  async create(jobId: string, leaseToken: string): Promise<string> {
    const dir = this.folderOf(jobId, leaseToken);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /** Removes the folder of one claim. */
  async remove(jobId: string, leaseToken: string): Promise<void> {
    await rm(this.folderOf(jobId, leaseToken), { recursive: true, force: true });
  }

  /**
   * Removes the folders of earlier claims of `jobIds` (a takeover), all but the one of
   * `keepToken` when given. Returns how many were removed.
   */
  async removeEarlierClaims(jobIds: readonly string[], keepToken?: string): Promise<number> {
    if (!jobIds.length) return 0;
    const ids = new Set(jobIds);
    const keep = keepToken === undefined ? undefined : path.basename(this.folderOf(jobIds[0]!, keepToken));
    let removed = 0;
    for (const name of await this.entries()) {
      const parsed = parse(name);
      if (!parsed || !ids.has(parsed.jobId) || name === keep) continue;
      await rm(path.join(this.root, name), { recursive: true, force: true });
      removed++;
    }
    return removed;
  }

  /**
   * Removes every entry of the root that belongs to no live claim: `liveLeases` maps the ids of
   * running jobs to their lease tokens. Returns the names removed.
   */
  async sweep(liveLeases: (jobIds: string[]) => Promise<Map<string, string>>): Promise<string[]> {
    // List first, then read the leases (see the file comment).
    const names = await this.entries();
    if (!names.length) return [];
    const ids = [...new Set(names.map((n) => parse(n)?.jobId).filter((id): id is string => id !== undefined))];
    const leases = await liveLeases(ids);
    const removed: string[] = [];
    for (const name of names) {
      const parsed = parse(name);
      const token = parsed && leases.get(parsed.jobId);
      if (token !== undefined && claimIdOf(token) === parsed!.claimId) continue;
      await rm(path.join(this.root, name), { recursive: true, force: true });
      removed.push(name);
    }
    return removed;
  }

  private async entries(): Promise<string[]> {
    try {
      return await readdir(this.root);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }
}

function parse(name: string): { jobId: string; claimId: string } | undefined {
  if (!name.startsWith(PREFIX)) return undefined;
  const dot = name.lastIndexOf('.');
  if (dot <= PREFIX.length) return undefined;
  return { jobId: name.slice(PREFIX.length, dot), claimId: name.slice(dot + 1) };
}
