/** SQL of cloud-marketplace credits usage (`credits_usage` and its lines). */
import type { Knex } from 'knex';
import { asDate } from '../../db/database';
import { AdjustmentType, Line, pageOf, RecordFilter, TransactionType, typesOf } from './billing-records';
import { int } from './money';
import type { Category, PricedProduct } from './pricing';
import { DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export interface CreditsUsage {
  seq: number;
  teamId: string;
  agreementId?: string;
  type: TransactionType;
  category: Category;
  credits: number;
  videoId?: string;
  sourceVideoId?: string;
  products?: PricedProduct[];
  adjustmentType?: AdjustmentType;
  reason?: string;
  jobId?: string;
  createdAt: Date;
}

/** A row as the drivers return it (see src/db/store.ts). */
interface CreditsUsageRow {
  seq: DbInt;
  team_id: string;
  agreement_id: Nullable<string>;
  type: TransactionType;
  category: Category;
  credits: DbInt;
  video_id: Nullable<string>;
  source_video_id: Nullable<string>;
  products: Nullable<string>;
  adjustment_type: Nullable<AdjustmentType>;
  reason: Nullable<string>;
  job_id: Nullable<string>;
  created_at: DbTimestamp;
}

function toUsage(r: CreditsUsageRow): CreditsUsage {
  return {
    seq: int(r.seq),
    teamId: r.team_id,
    agreementId: r.agreement_id ?? undefined,
    type: r.type,
    category: r.category,
    credits: int(r.credits),
    videoId: r.video_id ?? undefined,
    sourceVideoId: r.source_video_id ?? undefined,
    products: r.products ? (JSON.parse(r.products) as PricedProduct[]) : undefined,
    adjustmentType: r.adjustment_type ?? undefined,
    reason: r.reason ?? undefined,
    jobId: r.job_id ?? undefined,
    createdAt: asDate(r.created_at),
  };
}
const creditsUsageRows = rowMapper(toUsage);

export const creditsStore = {
  async byJobId(db: Knex, jobId: string): Promise<CreditsUsage | undefined> {
    const r = (await db('credits_usage').where({ job_id: jobId }).first()) as CreditsUsageRow | undefined;
    return creditsUsageRows.one(r);
  },
  async insert(db: Knex, u: Omit<CreditsUsage, 'seq'>, lines: Line[]): Promise<number> {
    const [row] = await db('credits_usage')
      .insert({
        team_id: u.teamId,
        agreement_id: u.agreementId ?? null,
        type: u.type,
        category: u.category,
        credits: u.credits,
        video_id: u.videoId ?? null,
        source_video_id: u.sourceVideoId ?? null,
        products: u.products ? JSON.stringify(u.products) : null,
        adjustment_type: u.adjustmentType ?? null,
        reason: u.reason ?? null,
        job_id: u.jobId ?? null,
        created_at: u.createdAt,
      })
      .returning<(DbInt | { seq: DbInt })[]>('seq');
    const seq = int(typeof row === 'object' ? row.seq : row);
    if (lines.length) {
      await db('credits_usage_lines').insert(
        lines.map((l) => ({ usage_seq: seq, team_id: u.teamId, type: u.type, category: l.category, credits: l.amount, video_id: u.videoId ?? null, created_at: u.createdAt })),
      );
    }
    return seq;
  },
  filtered(db: Knex, teamId: string, f: RecordFilter, table: 'credits_usage' | 'credits_usage_lines'): Knex.QueryBuilder {
    let q = db(table).where(`${table}.team_id`, teamId).whereBetween(`${table}.created_at`, [f.from, f.to]);
    if (f.mode !== 'INCLUDE') q = q.where(`${table}.type`, typesOf(f.mode)[0]);
    if (f.videoId) q = q.where(`${table}.video_id`, f.videoId);
    return q;
  },
  async page(db: Knex, teamId: string, f: RecordFilter, req: { pageNumber: number; pageSize: number; sortDirection: 'ASC' | 'DESC' }) {
    const dir = req.sortDirection === 'DESC' ? 'desc' : 'asc';
    const rows = (await this.filtered(db, teamId, f, 'credits_usage')
      .select('*')
      .orderBy([
        { column: 'created_at', order: dir },
        { column: 'seq', order: dir },
      ])
      .limit(req.pageSize)
      .offset(req.pageNumber * req.pageSize)) as CreditsUsageRow[];
    const [{ n }] = (await this.filtered(db, teamId, f, 'credits_usage').count({ n: '*' })) as [{ n: DbInt }];
    const totals = await this.filtered(db, teamId, f, 'credits_usage_lines').select('category').sum({ total: 'credits' }).groupBy<{ category: Category; total: DbInt }[]>('category');
    return {
      page: pageOf<CreditsUsage>(req, int(n), creditsUsageRows.many(rows)),
      totals: totals.map((r) => ({ category: r.category, credits: int(r.total) })),
    };
  },
  async allForTeam(db: Knex, teamId: string): Promise<CreditsUsage[]> {
    return creditsUsageRows.many(await db('credits_usage').where({ team_id: teamId }).orderBy('seq'));
  },
};
