/** SQL of wallet billing periods (`billing_periods`). */
import type { Knex } from 'knex';
import { asDate, asOptionalDate } from '../../db/database';
import type { Page, PageRequest } from '../../shared/paging';
import { TeamScope, whereTeamInScope } from '../accounts';
import { FilterMode, pageOf } from './billing-records';
import { int } from './money';
import { DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';
import type { Category } from './pricing';

export interface BillingPeriod {
  id: string;
  teamId: string;
  createdAt: Date;
  updatedAt: Date;
  endedAt?: Date;
}

/** A period by id, or "the team's latest period" as a subquery (so dependent reads run in parallel). */
export type PeriodRef = { id: string } | { latestOfTeam: string };

export function periodIdOf(db: Knex, ref: PeriodRef): string | Knex.QueryBuilder {
  if ('id' in ref) return ref.id;
  return db('billing_periods')
    .select('id')
    .where('team_id', ref.latestOfTeam)
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(1);
}

/** A row as the drivers return it (see src/db/store.ts). */
export interface BillingPeriodRow {
  id: string;
  team_id: string;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
  ended_at: Nullable<DbTimestamp>;
}

export function toPeriod(r: BillingPeriodRow): BillingPeriod {
  return {
    id: r.id,
    teamId: r.team_id,
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
    endedAt: asOptionalDate(r.ended_at),
  };
}
const billingPeriodRows = rowMapper(toPeriod);

export const periodsStore = {
  async insert(db: Knex, p: BillingPeriod): Promise<void> {
    await db('billing_periods').insert({ id: p.id, team_id: p.teamId, created_at: p.createdAt, updated_at: p.updatedAt, ended_at: p.endedAt ?? null });
  },
  async end(db: Knex, id: string, at: Date): Promise<void> {
    await db('billing_periods').where({ id }).whereNull('ended_at').update({ ended_at: at, updated_at: at });
  },
  async open(db: Knex, teamId: string): Promise<BillingPeriod | undefined> {
    const r = (await db('billing_periods').where({ team_id: teamId }).whereNull('ended_at').orderBy('created_at', 'desc').first()) as BillingPeriodRow | undefined;
    return billingPeriodRows.one(r);
  },
  async latest(db: Knex, teamId: string): Promise<BillingPeriod | undefined> {
    const r = (await db('billing_periods')
      .where({ team_id: teamId })
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .first()) as BillingPeriodRow | undefined;
    return billingPeriodRows.one(r);
  },
  async byId(db: Knex, id: string): Promise<BillingPeriod | undefined> {
    const r = (await db('billing_periods').where({ id }).first()) as BillingPeriodRow | undefined;
    return billingPeriodRows.one(r);
  },
  async byIdInScope(db: Knex, id: string, scope: TeamScope): Promise<BillingPeriod | undefined> {
    const r = (await whereTeamInScope(db, db('billing_periods').where('billing_periods.id', id), 'billing_periods.team_id', scope).first()) as BillingPeriodRow | undefined;
    return billingPeriodRows.one(r);
  },
  /** Periods of the scope's wallet teams created in [from, to], by ended state. */
  async page(db: Knex, scope: TeamScope, f: { from?: Date; to: Date; ended: FilterMode }, req: PageRequest): Promise<Page<BillingPeriod>> {
    let q = whereTeamInScope(db, db('billing_periods'), 'billing_periods.team_id', scope);
    if (!('teamId' in scope)) q = q.whereIn('billing_periods.team_id', db('teams').select('id').where('billing_type', 'WALLET'));
    if (f.from) q = q.where('billing_periods.created_at', '>=', f.from);
    q = q.where('billing_periods.created_at', '<=', f.to);
    if (f.ended === 'EXCLUDE') q = q.whereNull('billing_periods.ended_at');
    if (f.ended === 'ONLY') q = q.whereNotNull('billing_periods.ended_at');
    const dir = req.sortDirection === 'DESC' ? 'desc' : 'asc';
    const col = req.sortBy === 'updatedAt' ? 'updated_at' : 'created_at';
    const rows = (await q
      .clone()
      .select('billing_periods.*')
      .orderBy([
        { column: `billing_periods.${col}`, order: dir },
        { column: 'billing_periods.id', order: dir },
      ])
      .limit(req.pageSize)
      .offset(req.pageNumber * req.pageSize)) as BillingPeriodRow[];
    const [{ n }] = (await q.clone().count({ n: '*' })) as [{ n: DbInt }];
    return pageOf(req, int(n), billingPeriodRows.many(rows));
  },
  /** Open periods created before `before` (to be closed by the period job). */
  async openBefore(db: Knex, before: Date): Promise<BillingPeriod[]> {
    const rows = await db('billing_periods').whereNull('ended_at').where('created_at', '<', before);
    return billingPeriodRows.many(rows);
  },
  /** Wallet teams without an open period. */
  async walletTeamsWithoutOpenPeriod(db: Knex): Promise<string[]> {
    const rows = (await db('teams')
      .select('id')
      .where('billing_type', 'WALLET')
      .whereNotExists(db('billing_periods').select(db.raw('1')).whereRaw('billing_periods.team_id = teams.id').whereNull('ended_at'))) as { id: string }[];
    return rows.map((r) => r.id);
  },
  /** Storage and download debits of each period, from the maintained aggregates. */
  async utilityCosts(db: Knex, periodIds: string[]): Promise<Map<string, { storage: number; download: number }>> {
    const out = new Map<string, { storage: number; download: number }>();
    if (!periodIds.length) return out;
    const rows = await db('ledger_period_totals')
      .select('period_id', 'category')
      .sum({ debit: 'debit_micros', credit: 'credit_micros' })
      .whereIn('period_id', periodIds)
      .whereIn('category', ['STORAGE', 'DOWNLOAD_S3', 'DOWNLOAD_HTTPS'])
      .groupBy('period_id', 'category');
    for (const id of periodIds) out.set(id, { storage: 0, download: 0 });
    for (const r of rows as { period_id: string; category: Category; debit: DbInt; credit: DbInt }[]) {
      const c = out.get(r.period_id)!;
      const net = int(r.debit) - int(r.credit);
      if (r.category === 'STORAGE') c.storage += net;
      else c.download += net;
    }
    return out;
  },
};
