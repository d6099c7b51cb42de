/**
 * Leased rows: the claim and lease code shared by every table of durable work (the `jobs` queue
 * and the webhook deliveries). A row of such a table is due at a time of its own, and a claimer
 * takes it by writing a lease (`lease_owner`, `lease_expires_at`) on it:
 *
 * - `claimLeasedRows()` is ONE guarded `UPDATE ... WHERE id IN (SELECT ... LIMIT n) RETURNING *`
 *   (`id = ANY(ARRAY(SELECT ...))` on PostgreSQL): the candidate rows are locked with `FOR UPDATE SKIP LOCKED` on PostgreSQL, so concurrent
 *   claimers take disjoint rows; on SQLite the statement takes the database's write lock. The
 *   outer WHERE repeats the table's claimable condition, so a row claimed meanwhile is not taken.
 * - Every lease token is unique per claim (`<owner>#<uuid>`, `leaseToken()`), so a holder whose
 *   lease ran out and was taken again, even by the same process, is told apart from the new one.
 * - `whereLeaseHeld()` guards each later write by the holder: same row, same token, still in the
 *   claimed state and, when asked, with the lease not yet expired.
 *
 * Time comes from the caller (its injected clock), never from the database server.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { isPostgres } from '../db/database';

/** How one table of leased work is laid out. */
export interface LeasedTable {
  table: string;
  /** Width of the `lease_owner` column: lease tokens are cut to fit. */
  leaseOwnerLength: number;
  /** When a row is due: a claim takes rows with `dueColumn <= now`, earliest first. */
  dueColumn: string;
  /** Claim order (the due column first; a tie-breaker after it if the table wants one). */
  orderBy: readonly string[];
  /** Rows a claim may take besides being due (for example `status = 'queued'`). */
  claimable(q: Knex.QueryBuilder, now: Date): void;
  /** Columns a claim sets besides the lease (for example the status and the attempt count). */
  claimedColumns?(db: Knex, now: Date): Record<string, unknown>;
  /** Rows whose lease holder may still write them (for example `status = 'running'`). */
  held?(q: Knex.QueryBuilder): void;
}

export const LEASE_OWNER = 'lease_owner';
export const LEASE_EXPIRES_AT = 'lease_expires_at';

/** A lease token for one claim by `owner` (a worker id): `<owner>#<uuid>`, unique, the owner cut to fit the column. */
export function leaseToken(t: LeasedTable, owner: string): string {
  const id = randomUUID();
  return `${owner.slice(0, Math.max(0, t.leaseOwnerLength - id.length - 1))}#${id}`;
}

export interface ClaimRequest {
  /** The lease token written on the claimed rows (`leaseToken`): one per claim. */
  token: string;
  now: Date;
  leaseMs: number;
  /** Most rows to take. */
  limit: number;
  /** Narrows the candidates (kinds a worker handles, webhooks to skip). */
  filter?(q: Knex.QueryBuilder): void;
}

/** Claims up to `limit` due rows with a lease until `now + leaseMs`; returns the claimed rows as stored. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Knex's update(..., '*') returns untyped rows of whichever table; the default keeps callers that do not name their row type compiling
export async function claimLeasedRows<Row = any>(db: Knex, t: LeasedTable, req: ClaimRequest): Promise<Row[]> {
  if (req.limit < 1) return [];
  const { now } = req;
  const candidates = db(t.table).select('id').where(t.dueColumn, '<=', now);
  t.claimable(candidates, now);
  req.filter?.(candidates);
  candidates.orderBy(t.orderBy.map((column) => ({ column }))).limit(req.limit);
  if (isPostgres(db)) candidates.forUpdate().skipLocked();
  // PostgreSQL: `id = ANY(ARRAY(subquery))` runs the locking subquery once, before the update (an
  // InitPlan), then finds the rows by primary key; `id IN (subquery)` may be planned as a join that
  // runs it again and takes more rows than asked for. SQLite evaluates `IN (subquery)` once.
  const claim = isPostgres(db) ? db(t.table).whereRaw('?? = ANY(ARRAY(?))', ['id', candidates]) : db(t.table).whereIn('id', candidates);
  t.claimable(claim, now);
  const rows = await claim.update({ ...t.claimedColumns?.(db, now), [LEASE_OWNER]: req.token, [LEASE_EXPIRES_AT]: new Date(now.getTime() + req.leaseMs) }, '*');
  return rows as Row[];
}

/**
 * The row `id` while `token` holds its lease: in the held state and, with `unexpiredAt`, with the
 * lease ending after that instant. Writes through it are refused (0 rows) once the lease is lost.
 */
export function whereLeaseHeld(db: Knex, t: LeasedTable, id: string, token: string, unexpiredAt?: Date): Knex.QueryBuilder {
  const q = db(t.table).where({ id, [LEASE_OWNER]: token });
  t.held?.(q);
  if (unexpiredAt) q.andWhere(LEASE_EXPIRES_AT, '>', unexpiredAt);
  return q;
}
