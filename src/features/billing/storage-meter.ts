/**
 * The storage meter: a team's stored bytes over time. Sample it inside the transaction of every
 * change of what a team stores (a video file stored, ingestion assets written, videos deleted),
 * after the change, with `new StorageMeters(trx).sample(teamId, now)`: the interval since the
 * last sample is closed with the bytes it had (split at UTC month boundaries) and the meter
 * restarts with the bytes stored now. The periodic storage-billing task samples every team too
 * (over the pool: a transaction of its own per team), so a change made elsewhere is picked up
 * within the task's interval.
 *
 * Lock order (PostgreSQL): the team row before the meter. A storage charge locks the team, then
 * the meter; a change samples last in its transaction and takes no team lock after the meter
 * (the storage tables have no foreign key to teams for that reason).
 */
import type { Db } from '../../db/database';
import { TransactionalService } from '../../db/transactional';
import { monthStart } from './ledger.service';
import { nextMonthStart } from './storage-pricing';
import { storageStore } from './storage.store';

/**
 * The teams' storage meters over the `Db` they are built on: a caller's transaction (the sample
 * is then a savepoint of it) or the pool (a transaction of its own).
 */
export class StorageMeters extends TransactionalService {
  constructor(db: Db) {
    super(db);
  }

  /**
   * Closes the team's open interval at `now` and restarts the meter with the bytes stored now.
   * Call it as the last write of the change's transaction (see the lock order above).
   */
  async sample(teamId: string, now: Date): Promise<void> {
    await this.transactional(async (trx) => {
      const meter = await storageStore.lockMeter(trx, teamId, now);
      const bytes = await storageStore.measure(trx, teamId);
      if (meter.bytes > 0) {
        for (let from = meter.since; from < now;) {
          const month = monthStart(from);
          const to = new Date(Math.min(nextMonthStart(month).getTime(), now.getTime()));
          await storageStore.appendUsage(trx, { teamId, monthStart: month, from, to, bytes: meter.bytes });
          from = to;
        }
      }
      // A clock that went back (another process) never reopens a closed interval.
      const since = now > meter.since ? now : meter.since;
      if (since !== meter.since || bytes !== meter.bytes) await storageStore.setMeter(trx, { teamId, bytes, since });
    });
  }
}
