/** SQL of the wallet ledger: transactions, their per-category lines and the period aggregates. */
import type { Knex } from 'knex';
import { asDate, asOptionalDate, isPostgres, lockRowForUpdate, readBatchSqlite, readRows, SyncRead } from '../../db/database';
import { BillingType, chosenTeamQuery, Team, TeamChoice, teamFromRow } from '../accounts';
import type { TeamRow } from '../accounts';
import { AdjustmentType, BalanceKind, CategoryTotal, Line, RecordFilter, TransactionType, typesOf } from './billing-records';
import { int } from './money';
import { BillingPeriod, BillingPeriodRow, PeriodRef, periodIdOf, toPeriod } from './periods.store';
import type { Category, PricedProduct } from './pricing';
import { DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export interface LedgerTransaction {
  seq: number;
  teamId: string;
  periodId: string;
  balanceKind: BalanceKind;
  type: TransactionType;
  category: Category;
  amountMicros: number;
  balanceMicros: number;
  adjustmentType?: AdjustmentType;
  reason?: string;
  videoId?: string;
  sourceVideoId?: string;
  products?: PricedProduct[];
  discountPercentage?: number;
  jobId?: string;
  createdAt: Date;
}

/**
 * Where `pageWithPeriod` finds its period: a PeriodRef, or the latest period of the team chosen
 * for a user (`chosenTeamQuery`), resolved in the same read as the page.
 */
export type PagePeriodRef = PeriodRef | { latestOfChosenTeam: TeamChoice };

/** A RecordFilter whose lower bound may be left to the chosen team's creation time. */
export type PageFilter = Omit<RecordFilter, 'from'> & { from?: Date };

export interface PeriodPage {
  /** The chosen team (only for `latestOfChosenTeam`; undefined when there is none). */
  team?: Team;
  period?: BillingPeriod;
  aggregates: PeriodAggregates;
  items: LedgerTransaction[];
}

const TX_COLUMNS =
  'seq, team_id, period_id, balance_kind, type, category, amount_micros, balance_micros, adjustment_type, reason, video_id, source_video_id, products, discount_percentage, job_id, created_at';
const PERIOD_COLUMNS = 'id, team_id, created_at, updated_at, ended_at';
const LATEST_PERIOD = `select ${PERIOD_COLUMNS} from billing_periods where team_id = ? order by created_at desc, id desc limit 1`;

/** SQL and bindings of a page of a period's transactions (`period` and `from` are SQL expressions). */
function itemsSql(period: string, from: string, f: PageFilter, req: { pageSize: number; pageNumber: number; sortDirection: 'ASC' | 'DESC' }) {
  const dir = req.sortDirection === 'DESC' ? 'desc' : 'asc';
  let where = `period_id = ${period} and created_at >= ${from} and created_at <= ?`;
  const bindings: Knex.RawBinding[] = [f.to];
  if (f.mode !== 'INCLUDE') {
    where += ' and type = ?';
    bindings.push(typesOf(f.mode)[0]!);
  }
  if (f.videoId) {
    where += ' and video_id = ?';
    bindings.push(f.videoId);
  }
  bindings.push(req.pageSize, req.pageNumber * req.pageSize);
  return { sql: `select ${TX_COLUMNS} from ledger_transactions where ${where} order by created_at ${dir}, seq ${dir} limit ? offset ?`, bindings };
}

/** A `ledger_period_counts` row. */
interface PeriodCountRow {
  type: TransactionType;
  row_count: DbInt;
  first_at: DbTimestamp;
  last_at: DbTimestamp;
}

/** A `ledger_period_totals` row. */
interface PeriodTotalRow {
  type: TransactionType;
  category: Category;
  credit_micros: DbInt;
  debit_micros: DbInt;
}

/**
 * A row of the PostgreSQL page union (`pageWithPeriodPostgres`): the columns of every branch,
 * told apart by `kind` (`i` transaction, `p` period, `c` count, `t` total, `m` chosen team).
 */
type PageUnionRow = LedgerTransactionRow & PeriodCountRow & PeriodTotalRow & { kind: 'i' | 'p' | 'c' | 't' | 'm'; updated_at: DbTimestamp; ended_at: Nullable<DbTimestamp> };

/** A row of `periodWithAggregates`' union: the period (`p`, its team id in `type`), its counts (`c`) and totals (`t`). */
type AggregatesUnionRow = PeriodCountRow & PeriodTotalRow & { kind: 'p' | 'c' | 't'; period_id: string; ended_at: Nullable<DbTimestamp> };

function toAggregates(periodId: string | undefined, counts: PeriodCountRow[], totals: PeriodTotalRow[]): PeriodAggregates {
  return {
    periodId,
    counts: counts.map((r) => ({ type: r.type, count: int(r.row_count), firstAt: asDate(r.first_at), lastAt: asDate(r.last_at) })),
    totals: totals.map((r) => ({ type: r.type, category: r.category, credit: int(r.credit_micros), debit: int(r.debit_micros) })),
  };
}

/** SQLite: the team, the period, the page and the aggregate rows as narrow reads on one connection. */
function pageWithPeriodSqlite(read: SyncRead, ref: PagePeriodRef, f: PageFilter, req: ListPage): PeriodPage {
  let team: Team | undefined;
  let p: BillingPeriodRow | undefined;
  if ('latestOfChosenTeam' in ref) {
    const q = chosenTeamQuery(ref.latestOfChosenTeam);
    const [t] = read(q.sql, q.bindings) as TeamRow[];
    if (!t) return { aggregates: toAggregates(undefined, [], []), items: [] };
    team = teamFromRow(t);
    [p] = read(LATEST_PERIOD, [team.id]) as BillingPeriodRow[];
  } else if ('latestOfTeam' in ref) {
    [p] = read(LATEST_PERIOD, [ref.latestOfTeam]) as BillingPeriodRow[];
  } else {
    [p] = read(`select ${PERIOD_COLUMNS} from billing_periods where id = ?`, [ref.id]) as BillingPeriodRow[];
  }
  if (!p) return { team, aggregates: toAggregates(undefined, [], []), items: [] };
  const from = f.from ?? team?.createdAt;
  if (!from) throw new Error('pageWithPeriod: a lower bound is required unless the team is chosen');
  const items = itemsSql('?', '?', f, req);
  return {
    team,
    period: toPeriod(p),
    items: ledgerTransactionRows.many(read(items.sql, [p.id, from, ...items.bindings]) as LedgerTransactionRow[]),
    aggregates: toAggregates(
      p.id,
      read('select type, row_count, first_at, last_at from ledger_period_counts where period_id = ?', [p.id]) as PeriodCountRow[],
      read('select type, category, credit_micros, debit_micros from ledger_period_totals where period_id = ?', [p.id]) as PeriodTotalRow[],
    ),
  };
}

/**
 * PostgreSQL: the same in one statement (one round trip): the chosen team (`tm`), the period
 * (`p`), the page and the aggregate rows as one UNION ALL, told apart by `kind`.
 */
async function pageWithPeriodPostgres(db: Knex, ref: PagePeriodRef, f: PageFilter, req: ListPage): Promise<PeriodPage> {
  const bindings: Knex.RawBinding[] = [];
  let ctes = '';
  let periodWhere: string;
  let from: string;
  const chosen = 'latestOfChosenTeam' in ref;
  if ('latestOfChosenTeam' in ref) {
    const q = chosenTeamQuery(ref.latestOfChosenTeam);
    ctes = `tm as (${q.sql}), `;
    bindings.push(...q.bindings);
    periodWhere = 'team_id = (select id from tm) order by created_at desc, id desc limit 1';
  } else if ('latestOfTeam' in ref) {
    periodWhere = 'team_id = ? order by created_at desc, id desc limit 1';
    bindings.push(ref.latestOfTeam);
  } else {
    periodWhere = 'id = ?';
    bindings.push(ref.id);
  }
  if (f.from) {
    from = '?';
    bindings.push(f.from);
  } else if (chosen) {
    from = '(select created_at from tm)';
  } else {
    throw new Error('pageWithPeriod: a lower bound is required unless the team is chosen');
  }
  const items = itemsSql('(select id from p)', from, f, req);
  bindings.push(...items.bindings);
  // Columns of the union: the transaction's, then the period's, the counts' and the totals'
  // (typed NULLs in the first branch, so PostgreSQL resolves the union's column types). The
  // chosen team's row reuses some: id -> team_id, name -> reason, billing_type -> category,
  // api_enabled -> row_count, created_at, updated_at.
  const ts = 'cast(null as timestamptz)';
  const big = 'cast(null as bigint)';
  const txCols = Object.fromEntries(TX_COLUMNS.split(', ').map((c) => [c, c]));
  const branches = [
    `select ${unionRow({ kind: "'i'", ...txCols, updated_at: ts, ended_at: ts, row_count: big, first_at: ts, last_at: ts, credit_micros: big, debit_micros: big })} from (${items.sql}) i`,
    `select ${unionRow({ kind: "'p'", team_id: 'team_id', period_id: 'id', created_at: 'created_at', updated_at: 'updated_at', ended_at: 'ended_at' })} from p`,
    `select ${unionRow({ kind: "'c'", period_id: 'period_id', type: 'type', row_count: 'row_count', first_at: 'first_at', last_at: 'last_at' })} from ledger_period_counts where period_id = (select id from p)`,
    `select ${unionRow({ kind: "'t'", period_id: 'period_id', type: 'type', category: 'category', credit_micros: 'credit_micros', debit_micros: 'debit_micros' })} from ledger_period_totals where period_id = (select id from p)`,
  ];
  if (chosen) {
    branches.push(
      `select ${unionRow({ kind: "'m'", team_id: 'id', reason: 'name', category: 'billing_type', row_count: 'case when api_enabled then 1 else 0 end', created_at: 'created_at', updated_at: 'updated_at' })} from tm`,
    );
  }
  const sql = `with ${ctes}p as (select ${PERIOD_COLUMNS} from billing_periods where ${periodWhere}) ${branches.join(' union all ')}`;
  const rows = (await readRows(db, sql, bindings)) as PageUnionRow[];
  let team: Team | undefined;
  let p: PageUnionRow | undefined;
  const items_: LedgerTransaction[] = [];
  const counts: PeriodCountRow[] = [];
  const totals: PeriodTotalRow[] = [];
  for (const r of rows) {
    if (r.kind === 'i') items_.push(toTransaction(r));
    else if (r.kind === 'c') counts.push(r);
    else if (r.kind === 't') totals.push(r);
    else if (r.kind === 'p') p = r;
    else if (r.kind === 'm') {
      team = teamFromRow({
        id: r.team_id,
        name: r.reason as string,
        api_enabled: int(r.row_count) === 1,
        billing_type: r.category as string as BillingType,
        created_at: r.created_at,
        updated_at: r.updated_at,
      });
    }
  }
  // A UNION ALL keeps no order: sort the page again.
  const sign = req.sortDirection === 'DESC' ? -1 : 1;
  items_.sort((a, b) => sign * (a.createdAt.getTime() - b.createdAt.getTime() || a.seq - b.seq));
  return {
    team,
    period: p && { id: p.period_id, teamId: p.team_id, createdAt: asDate(p.created_at), updatedAt: asDate(p.updated_at), endedAt: asOptionalDate(p.ended_at) },
    aggregates: toAggregates(p?.period_id, counts, totals),
    items: items_,
  };
}

type ListPage = { pageNumber: number; pageSize: number; sortDirection: 'ASC' | 'DESC' };

const UNION_COLUMNS = ['kind', ...TX_COLUMNS.split(', '), 'updated_at', 'ended_at', 'row_count', 'first_at', 'last_at', 'credit_micros', 'debit_micros'];
/** One branch's select list of the union: the given expressions, NULL for every other column. */
function unionRow(values: Record<string, string>): string {
  return UNION_COLUMNS.map((c) => `${values[c] ?? 'null'} as ${c}`).join(', ');
}

/** The maintained aggregate rows of one period: counts per type and totals per (type, category). */
export interface PeriodAggregates {
  periodId?: string;
  counts: { type: TransactionType; count: number; firstAt: Date; lastAt: Date }[];
  totals: { type: TransactionType; category: Category; credit: number; debit: number }[];
}

/** Count and totals of the filtered set from the aggregates, when the filter covers the whole period. */
export function summaryFromAggregates(a: PeriodAggregates, f: RecordFilter): { count: number; totals: CategoryTotal[] } | undefined {
  if (f.videoId) return undefined;
  const types = typesOf(f.mode);
  const counts = a.counts.filter((c) => types.includes(c.type));
  if (!counts.every((c) => c.firstAt >= f.from && c.lastAt <= f.to)) return undefined;
  return {
    count: counts.reduce((s, c) => s + c.count, 0),
    totals: sumTotals(a.totals.filter((t) => types.includes(t.type))),
  };
}

/** Storage and download cost (net debit) of a period from its aggregates. */
export function utilityCostsFromAggregates(a: PeriodAggregates): { storage: number; download: number } {
  let storage = 0;
  let download = 0;
  for (const t of a.totals) {
    if (t.category === 'STORAGE') storage += t.debit - t.credit;
    if (t.category === 'DOWNLOAD_S3' || t.category === 'DOWNLOAD_HTTPS') download += t.debit - t.credit;
  }
  return { storage, download };
}

/** A row as the drivers return it (see src/db/store.ts). */
interface LedgerTransactionRow {
  seq: DbInt;
  team_id: string;
  period_id: string;
  balance_kind: BalanceKind;
  type: TransactionType;
  category: Category;
  amount_micros: DbInt;
  balance_micros: DbInt;
  adjustment_type: Nullable<AdjustmentType>;
  reason: Nullable<string>;
  video_id: Nullable<string>;
  source_video_id: Nullable<string>;
  products: Nullable<string>;
  discount_percentage: Nullable<DbInt>;
  job_id: Nullable<string>;
  created_at: DbTimestamp;
}

function toTransaction(r: LedgerTransactionRow): LedgerTransaction {
  return {
    seq: int(r.seq),
    teamId: r.team_id,
    periodId: r.period_id,
    balanceKind: r.balance_kind,
    type: r.type,
    category: r.category,
    amountMicros: int(r.amount_micros),
    balanceMicros: int(r.balance_micros),
    adjustmentType: r.adjustment_type ?? undefined,
    reason: r.reason ?? undefined,
    videoId: r.video_id ?? undefined,
    sourceVideoId: r.source_video_id ?? undefined,
    products: r.products ? (JSON.parse(r.products) as PricedProduct[]) : undefined,
    discountPercentage: r.discount_percentage === null || r.discount_percentage === undefined ? undefined : Number(r.discount_percentage),
    jobId: r.job_id ?? undefined,
    createdAt: asDate(r.created_at),
  };
}
const ledgerTransactionRows = rowMapper(toTransaction);

/** Credits and debits summed per category (SUM columns). */
interface CategorySumRow {
  category: Category;
  credit: DbInt;
  debit: DbInt;
}

function sumTotals(rows: CategorySumRow[]): CategoryTotal[] {
  const by = new Map<Category, CategoryTotal>();
  for (const r of rows) {
    const t = by.get(r.category) ?? { category: r.category, credit: 0, debit: 0 };
    t.credit += int(r.credit);
    t.debit += int(r.debit);
    by.set(r.category, t);
  }
  return [...by.values()];
}

export const ledgerStore = {
  /** Serialises ledger writes of one team (row lock on PostgreSQL; SQLite has one writer). */
  async lockTeam(db: Knex, teamId: string): Promise<void> {
    await lockRowForUpdate(db, 'teams', teamId);
  },
  async balance(db: Knex, teamId: string, kind: BalanceKind): Promise<number> {
    const r = (await db('ledger_transactions').select('balance_micros').where({ team_id: teamId, balance_kind: kind }).orderBy('seq', 'desc').first()) as { balance_micros: DbInt } | undefined;
    return r ? int(r.balance_micros) : 0;
  },
  async byJobId(db: Knex, jobId: string): Promise<LedgerTransaction | undefined> {
    const r = (await db('ledger_transactions').where({ job_id: jobId }).first()) as LedgerTransactionRow | undefined;
    return ledgerTransactionRows.one(r);
  },
  /** Appends a transaction with its per-category lines and updates the period aggregates. */
  async insert(db: Knex, t: Omit<LedgerTransaction, 'seq'>, lines: Line[]): Promise<number> {
    const [row] = await db('ledger_transactions')
      .insert({
        team_id: t.teamId,
        period_id: t.periodId,
        balance_kind: t.balanceKind,
        type: t.type,
        category: t.category,
        amount_micros: t.amountMicros,
        balance_micros: t.balanceMicros,
        adjustment_type: t.adjustmentType ?? null,
        reason: t.reason ?? null,
        video_id: t.videoId ?? null,
        source_video_id: t.sourceVideoId ?? null,
        products: t.products ? JSON.stringify(t.products) : null,
        discount_percentage: t.discountPercentage ?? null,
        job_id: t.jobId ?? null,
        created_at: t.createdAt,
      })
      .returning<(DbInt | { seq: DbInt })[]>('seq');
    const seq = int(typeof row === 'object' ? row.seq : row);
    if (lines.length) {
      await db('ledger_lines').insert(
        lines.map((l) => ({
          transaction_seq: seq,
          period_id: t.periodId,
          type: t.type,
          category: l.category,
          amount_micros: l.amount,
          video_id: t.videoId ?? null,
          created_at: t.createdAt,
        })),
      );
    }
    const byCategory = new Map<Category, { credit: number; debit: number }>();
    for (const l of lines) {
      const c = byCategory.get(l.category) ?? { credit: 0, debit: 0 };
      if (l.amount >= 0) c.credit += l.amount;
      else c.debit -= l.amount;
      byCategory.set(l.category, c);
    }
    for (const [category, c] of byCategory) {
      await db('ledger_period_totals')
        .insert({ period_id: t.periodId, type: t.type, category, credit_micros: c.credit, debit_micros: c.debit })
        .onConflict(['period_id', 'type', 'category'])
        .merge({
          credit_micros: db.raw('?? + ?', ['ledger_period_totals.credit_micros', c.credit]),
          debit_micros: db.raw('?? + ?', ['ledger_period_totals.debit_micros', c.debit]),
        });
    }
    const least = isPostgres(db) ? 'least' : 'min';
    const greatest = isPostgres(db) ? 'greatest' : 'max';
    await db('ledger_period_counts')
      .insert({ period_id: t.periodId, type: t.type, row_count: 1, first_at: t.createdAt, last_at: t.createdAt })
      .onConflict(['period_id', 'type'])
      .merge({
        row_count: db.raw('?? + 1', ['ledger_period_counts.row_count']),
        first_at: db.raw(`${least}(??, ?)`, ['ledger_period_counts.first_at', t.createdAt]),
        last_at: db.raw(`${greatest}(??, ?)`, ['ledger_period_counts.last_at', t.createdAt]),
      });
    return seq;
  },
  /**
   * The hot path of the transaction lists, read as one state: the period (by id, the team's
   * latest, or the latest of the team chosen for a user, which is returned too), its maintained
   * aggregate rows, and one page of its filtered transactions. One statement on PostgreSQL;
   * narrow reads on the one connection on SQLite (see readBatchSqlite).
   */
  async pageWithPeriod(db: Knex, ref: PagePeriodRef, f: PageFilter, req: ListPage): Promise<PeriodPage> {
    if (isPostgres(db)) return pageWithPeriodPostgres(db, ref, f, req);
    return readBatchSqlite(db, (read) => pageWithPeriodSqlite(read, ref, f, req));
  },
  /** The period and both of its aggregate tables, in one round trip. */
  async periodWithAggregates(db: Knex, ref: PeriodRef): Promise<{ period?: BillingPeriod; aggregates: PeriodAggregates }> {
    const id = periodIdOf(db, ref);
    const cols = (kind: string, rest: string) => db.raw(`'${kind}' as kind, ${rest}`);
    const rows = (await db
      .with('p', db('billing_periods').select('id', 'team_id', 'created_at', 'updated_at', 'ended_at').where('id', id))
      .select(
        cols(
          'p',
          "p.id as period_id, cast(p.team_id as varchar(64)) as type, '' as category, 0 as row_count, p.created_at as first_at, p.updated_at as last_at, p.ended_at as ended_at, 0 as credit_micros, 0 as debit_micros",
        ),
      )
      .from('p')
      .unionAll((u) => {
        u.select(cols('c', "c.period_id, c.type, '' as category, c.row_count, c.first_at, c.last_at, null as ended_at, 0 as credit_micros, 0 as debit_micros"))
          .from('ledger_period_counts as c')
          .join('p', 'p.id', 'c.period_id');
      })
      .unionAll((u) => {
        u.select(cols('t', 't.period_id, t.type, t.category, 0 as row_count, null as first_at, null as last_at, null as ended_at, t.credit_micros, t.debit_micros'))
          .from('ledger_period_totals as t')
          .join('p', 'p.id', 't.period_id');
      })) as AggregatesUnionRow[];
    const p = rows.find((r) => r.kind === 'p');
    return {
      period: p && { id: p.period_id, teamId: p.type, createdAt: asDate(p.first_at), updatedAt: asDate(p.last_at), endedAt: asOptionalDate(p.ended_at) },
      aggregates: {
        periodId: p?.period_id,
        counts: rows.filter((r) => r.kind === 'c').map((r) => ({ type: r.type, count: int(r.row_count), firstAt: asDate(r.first_at), lastAt: asDate(r.last_at) })),
        totals: rows.filter((r) => r.kind === 't').map((r) => ({ type: r.type, category: r.category, credit: int(r.credit_micros), debit: int(r.debit_micros) })),
      },
    };
  },
  filtered(db: Knex, period: string | PeriodRef, f: RecordFilter, table: 'ledger_transactions' | 'ledger_lines'): Knex.QueryBuilder {
    const periodId = typeof period === 'string' ? period : periodIdOf(db, period);
    let q = db(table).where(`${table}.period_id`, periodId).whereBetween(`${table}.created_at`, [f.from, f.to]);
    if (f.mode !== 'INCLUDE') q = q.where(`${table}.type`, typesOf(f.mode)[0]);
    if (f.videoId) q = q.where(`${table}.video_id`, f.videoId);
    return q;
  },
  async items(db: Knex, periodId: string | PeriodRef, f: RecordFilter, req: { pageNumber: number; pageSize: number; sortDirection: 'ASC' | 'DESC' }): Promise<LedgerTransaction[]> {
    const dir = req.sortDirection === 'DESC' ? 'desc' : 'asc';
    const rows = (await this.filtered(db, periodId, f, 'ledger_transactions')
      .select('*')
      .orderBy([
        { column: 'created_at', order: dir },
        { column: 'seq', order: dir },
      ])
      .limit(req.pageSize)
      .offset(req.pageNumber * req.pageSize)) as LedgerTransactionRow[];
    return ledgerTransactionRows.many(rows);
  },
  /**
   * Count and per-category totals of the filtered set. When the filters cover every
   * transaction of the period (no video filter, bounds around the period's first and last
   * transaction), they come from the maintained aggregate rows; otherwise from a GROUP BY
   * over the indexed lines.
   */
  async summary(db: Knex, periodId: string, f: RecordFilter, useAggregates = true): Promise<{ count: number; totals: CategoryTotal[]; fromAggregates: boolean }> {
    const types = typesOf(f.mode);
    if (useAggregates && !f.videoId) {
      const counts = (await db('ledger_period_counts').where('period_id', periodId).whereIn('type', types)) as PeriodCountRow[];
      const covered = counts.every((c) => asDate(c.first_at) >= f.from && asDate(c.last_at) <= f.to);
      if (covered) {
        const rows = await db('ledger_period_totals')
          .select('category')
          .sum({ credit: 'credit_micros', debit: 'debit_micros' })
          .where('period_id', periodId)
          .whereIn('type', types)
          .groupBy<CategorySumRow[]>('category');
        return { count: counts.reduce((s, c) => s + int(c.row_count), 0), totals: sumTotals(rows), fromAggregates: true };
      }
    }
    const [{ n }] = (await this.filtered(db, periodId, f, 'ledger_transactions').count({ n: '*' })) as [{ n: DbInt }];
    const rows = await this.filtered(db, periodId, f, 'ledger_lines')
      .select('category')
      .sum({
        credit: db.raw('case when amount_micros > 0 then amount_micros else 0 end'),
        debit: db.raw('case when amount_micros < 0 then -amount_micros else 0 end'),
      })
      .groupBy<CategorySumRow[]>('category');
    return { count: int(n), totals: sumTotals(rows), fromAggregates: false };
  },
  /** Processing spend: charges minus refunds (job id `refund:<job>`, whatever failed), as a positive number. */
  async lifetimeProcessingSpend(db: Knex, teamId: string): Promise<number> {
    const [r] = await db('ledger_transactions')
      .sum({ s: 'amount_micros' })
      .where({ team_id: teamId, balance_kind: 'processing' })
      .where((w) => {
        w.whereNull('adjustment_type').orWhere('job_id', 'like', 'refund:%');
      });
    return -int(r?.s);
  },
  async allForTeam(db: Knex, teamId: string): Promise<LedgerTransaction[]> {
    return ledgerTransactionRows.many(await db('ledger_transactions').where({ team_id: teamId }).orderBy('seq'));
  },
};
