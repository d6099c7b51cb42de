/**
 * SQL for storage billing: the bytes a team stores (measured from its videos and their
 * ingestion assets), its meter (the open interval), the closed usage intervals, and the charges
 * that billed them. No rules here; storage-meter.ts and storage-billing.service.ts own them.
 */
import type { Knex } from 'knex';
import { asDate, isPostgres } from '../../db/database';
import type { BillingType } from '../accounts';
import { int } from './money';
import { DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export interface StorageMeter {
  teamId: string;
  bytes: number;
  /** Start of the open interval. */
  since: Date;
}

/** A closed interval of constant stored bytes within one UTC month. */
export interface StorageUsage {
  seq: number;
  teamId: string;
  monthStart: Date;
  from: Date;
  to: Date;
  bytes: number;
  chargeId?: string;
}

/** One billed batch of a team's month, with the running totals of that month and billing type. */
export interface StorageCharge {
  id: string;
  teamId: string;
  monthStart: Date;
  billingType: BillingType;
  usageGbMonths: number;
  totalGbMonths: number;
  /** Charged by this batch: micro-USD (WALLET) or credits (CLOUD_MARKETPLACE). */
  amount: number;
  totalAmount: number;
  createdAt: Date;
}

const USAGE = 'storage_usage';

/** A row as the drivers return it (see src/db/store.ts). */
interface StorageUsageRow {
  seq: DbInt;
  team_id: string;
  month_start: DbTimestamp;
  from_at: DbTimestamp;
  to_at: DbTimestamp;
  bytes: DbInt;
  charge_id: Nullable<string>;
}

function toUsage(r: StorageUsageRow): StorageUsage {
  return {
    seq: int(r.seq),
    teamId: r.team_id,
    monthStart: asDate(r.month_start),
    from: asDate(r.from_at),
    to: asDate(r.to_at),
    bytes: int(r.bytes),
    chargeId: r.charge_id ?? undefined,
  };
}
const storageUsageRows = rowMapper(toUsage);

/** A storage_meters row as the drivers return it. */
interface MeterRow {
  bytes: DbInt;
  since: DbTimestamp;
}

/** A row as the drivers return it (see src/db/store.ts). */
interface StorageChargeRow {
  id: string;
  team_id: string;
  month_start: DbTimestamp;
  billing_type: BillingType;
  usage_gb_months: DbInt;
  total_gb_months: DbInt;
  amount: DbInt;
  total_amount: DbInt;
  created_at: DbTimestamp;
}

function toCharge(r: StorageChargeRow): StorageCharge {
  return {
    id: r.id,
    teamId: r.team_id,
    monthStart: asDate(r.month_start),
    billingType: r.billing_type,
    usageGbMonths: Number(r.usage_gb_months),
    totalGbMonths: Number(r.total_gb_months),
    amount: int(r.amount),
    totalAmount: int(r.total_amount),
    createdAt: asDate(r.created_at),
  };
}
const storageChargeRows = rowMapper(toCharge);

export const storageStore = {
  /** Bytes the team stores now: the files of its videos (masters, clips, processed) and their ingestion assets. */
  async measure(db: Knex, teamId: string): Promise<number> {
    const files = db('videos').sum({ s: 'file_size' }).where('team_id', teamId).whereNotNull('blob_key');
    const assets = db('video_assets').join('videos', 'videos.id', 'video_assets.video_id').sum({ s: 'video_assets.size' }).where('videos.team_id', teamId);
    const [r] = (await db.select(db.raw('(?) as files, (?) as assets', [files, assets]))) as [{ files: Nullable<DbInt>; assets: Nullable<DbInt> }];
    return int(r.files) + int(r.assets);
  },

  /** Teams with a meter or with stored data: the ones the periodic sampler visits. */
  async teamsToSample(db: Knex): Promise<string[]> {
    const rows = (await db
      .select('team_id')
      .from('storage_meters')
      .union((u) => {
        u.select('team_id').from('videos').whereNotNull('blob_key');
      })
      .union((u) => {
        u.select('videos.team_id').from('video_assets').join('videos', 'videos.id', 'video_assets.video_id');
      })) as { team_id: string }[];
    return rows.map((r) => r.team_id);
  },

  /**
   * The team's meter, locked for the rest of the transaction (row lock on PostgreSQL; SQLite has
   * one writer). A missing meter is created first, at `bytes` 0 from `since`.
   */
  async lockMeter(db: Knex, teamId: string, since: Date): Promise<StorageMeter> {
    await db('storage_meters').insert({ team_id: teamId, bytes: 0, since }).onConflict('team_id').ignore();
    const q = db('storage_meters').where({ team_id: teamId });
    const r = (await (isPostgres(db) ? q.forUpdate() : q).first()) as MeterRow;
    return { teamId, bytes: int(r.bytes), since: asDate(r.since) };
  },

  async meter(db: Knex, teamId: string): Promise<StorageMeter | undefined> {
    const r = (await db('storage_meters').where({ team_id: teamId }).first()) as MeterRow | undefined;
    return r && { teamId, bytes: int(r.bytes), since: asDate(r.since) };
  },

  async setMeter(db: Knex, m: StorageMeter): Promise<void> {
    await db('storage_meters').where({ team_id: m.teamId }).update({ bytes: m.bytes, since: m.since });
  },

  /**
   * Appends a closed interval; when it continues the team's last unbilled interval of the same
   * month with the same bytes, that one is extended instead (a steady team keeps few rows).
   */
  async appendUsage(db: Knex, u: Omit<StorageUsage, 'seq' | 'chargeId'>): Promise<void> {
    const last = (await db(USAGE).where({ team_id: u.teamId }).orderBy('seq', 'desc').first()) as StorageUsageRow | undefined;
    if (last && !last.charge_id && int(last.bytes) === u.bytes && asDate(last.to_at).getTime() === u.from.getTime() && asDate(last.month_start).getTime() === u.monthStart.getTime()) {
      await db(USAGE).where({ seq: last.seq }).update({ to_at: u.to });
      return;
    }
    await db(USAGE).insert({ team_id: u.teamId, month_start: u.monthStart, from_at: u.from, to_at: u.to, bytes: u.bytes, charge_id: null });
  },

  /** The team's intervals not billed yet that end at or before `upTo`, oldest first. */
  async unbilled(db: Knex, teamId: string, upTo: Date): Promise<StorageUsage[]> {
    const rows = await db(USAGE).where({ team_id: teamId }).whereNull('charge_id').where('to_at', '<=', upTo).orderBy('seq');
    return storageUsageRows.many(rows);
  },

  /** Teams with unbilled intervals, with the start of their oldest one and its month. */
  async teamsWithUnbilled(db: Knex): Promise<{ teamId: string; oldestFrom: Date; oldestMonth: Date }[]> {
    const rows: { team_id: string; oldest_from: DbTimestamp; oldest_month: DbTimestamp }[] = await db(USAGE)
      .select('team_id')
      .min({ oldest_from: 'from_at', oldest_month: 'month_start' })
      .whereNull('charge_id')
      .groupBy('team_id');
    return rows.map((r) => ({ teamId: r.team_id, oldestFrom: asDate(r.oldest_from), oldestMonth: asDate(r.oldest_month) }));
  },

  async markBilled(db: Knex, seqs: number[], chargeId: string): Promise<void> {
    for (let i = 0; i < seqs.length; i += 500)
      await db(USAGE)
        .whereIn('seq', seqs.slice(i, i + 500))
        .whereNull('charge_id')
        .update({ charge_id: chargeId });
  },

  /** The latest charge of the team's month under this billing type (its running totals). */
  async latestCharge(db: Knex, teamId: string, monthStart: Date, billingType: BillingType): Promise<StorageCharge | undefined> {
    const r = (await db('storage_charges').where({ team_id: teamId, month_start: monthStart, billing_type: billingType }).orderBy('seq', 'desc').first()) as StorageChargeRow | undefined;
    return storageChargeRows.one(r);
  },

  async insertCharge(db: Knex, c: StorageCharge): Promise<void> {
    await db('storage_charges').insert({
      id: c.id,
      team_id: c.teamId,
      month_start: c.monthStart,
      billing_type: c.billingType,
      usage_gb_months: c.usageGbMonths,
      total_gb_months: c.totalGbMonths,
      amount: c.amount,
      total_amount: c.totalAmount,
      created_at: c.createdAt,
    });
  },

  async chargesOfTeam(db: Knex, teamId: string): Promise<StorageCharge[]> {
    return storageChargeRows.many(await db('storage_charges').where({ team_id: teamId }).orderBy('seq'));
  },

  async usageOfTeam(db: Knex, teamId: string): Promise<StorageUsage[]> {
    return storageUsageRows.many(await db(USAGE).where({ team_id: teamId }).orderBy('seq'));
  },
};
