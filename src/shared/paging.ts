/** Paging and sorting shared by every list: 0-based pages, createdAt/updatedAt sorting. */
import type { Knex } from 'knex';
import { Db, isPostgres, readBatchSqlite, readTuples } from '../db/database';

export interface PageRequest {
  pageNumber: number;
  pageSize: number;
  sortDirection: 'ASC' | 'DESC';
  sortBy: 'createdAt' | 'updatedAt';
}

export interface Page<T> {
  pageNumber: number;
  pageSize: number;
  numberOfElements: number;
  totalPages: number;
  totalElements: number;
  items: T[];
}

/**
 * The page asked for, with the contract's defaults. Its numbers were read strictly at the
 * boundary (src/http/integer-parameters.ts): integers within the contract's bounds.
 */
export function pageRequest(q: { pageNumber?: number; pageSize?: number; sortDirection?: 'ASC' | 'DESC'; sortBy?: 'createdAt' | 'updatedAt' }): PageRequest {
  return {
    pageNumber: q.pageNumber ?? 0,
    pageSize: q.pageSize ?? 10,
    sortDirection: q.sortDirection ?? 'ASC',
    sortBy: q.sortBy ?? 'createdAt',
  };
}

const SORT_COLUMNS: Record<PageRequest['sortBy'], string> = { createdAt: 'created_at', updatedAt: 'updated_at' };

/**
 * Runs one query for a page and the total (a window count), plus a plain count only when the
 * page lies past the end. `base` must be a query without select, order or limit. `sortColumns`
 * names the column of `table` each `sortBy` orders by, for a table whose columns are named
 * otherwise (default: created_at, updated_at).
 */
export async function fetchPage<Row, T>(
  base: Knex.QueryBuilder,
  req: PageRequest,
  map: (row: Row) => T,
  table: string,
  sortColumns: Record<PageRequest['sortBy'], string> = SORT_COLUMNS,
): Promise<Page<T>> {
  const dir = req.sortDirection === 'DESC' ? 'desc' : 'asc';
  const rows = (await base
    .clone()
    .select(`${table}.*`, base.client.raw('count(*) over () as total_count'))
    .orderBy([
      { column: `${table}.${sortColumns[req.sortBy]}`, order: dir },
      { column: `${table}.id`, order: dir },
    ])
    .limit(req.pageSize)
    .offset(req.pageNumber * req.pageSize)) as (Row & { total_count: unknown })[]; // Knex types rows as any
  let total: number;
  if (rows.length > 0) {
    total = Number(rows[0]!.total_count);
  } else {
    const [{ n }] = (await base.clone().count({ n: '*' })) as [{ n: number | string }];
    total = Number(n);
  }
  return {
    pageNumber: req.pageNumber,
    pageSize: req.pageSize,
    numberOfElements: rows.length,
    totalPages: Math.ceil(total / req.pageSize),
    totalElements: total,
    items: rows.map((r) => map(r)),
  };
}

/**
 * `fetchPage` for hot lists, with hand-written SQL read as tuples (no query builder). `columns`
 * of `table` are selected in that order and `map` receives them as an array; `where` is an SQL
 * condition on `table` with `?` placeholders for `bindings`.
 *
 * PostgreSQL: one statement for the page and its total (a window count, one round trip), a
 * plain count only when the page lies past the end. SQLite: the page and a plain count, back to
 * back on the one connection (`readBatchSqlite`, so both see one state): measured, that costs
 * less there than the window count, which makes SQLite collect and sort every row in a
 * temporary B-tree before the first one is returned.
 */
export async function readPage<T>(
  db: Db,
  table: string,
  columns: readonly string[],
  where: string,
  bindings: readonly Knex.RawBinding[],
  req: PageRequest,
  map: (row: unknown[]) => T,
): Promise<Page<T>> {
  const dir = req.sortDirection === 'DESC' ? 'desc' : 'asc';
  const sort = SORT_COLUMNS[req.sortBy];
  const select = columns.map((c) => `${table}.${c}`).join(', ');
  const order = `order by ${table}.${sort} ${dir}, ${table}.id ${dir} limit ? offset ?`;
  const pageBindings = [...bindings, req.pageSize, req.pageNumber * req.pageSize];
  const countSql = `select count(*) from ${table} where ${where}`;
  let rows: unknown[][];
  let total: number;
  if (isPostgres(db)) {
    rows = await readTuples(db, `select ${select}, count(*) over () as total_count from ${table} where ${where} ${order}`, pageBindings);
    total = Number(rows.length > 0 ? rows[0]![columns.length] : (await readTuples(db, countSql, bindings))[0]![0]); // count(*) returns one row
  } else {
    [rows, total] = await readBatchSqlite(db, (_read, tuples) => [tuples(`select ${select} from ${table} where ${where} ${order}`, pageBindings), Number(tuples(countSql, bindings)[0]![0])]);
  }
  const items = new Array<T>(rows.length);
  for (let i = 0; i < rows.length; i++) items[i] = map(rows[i]!);
  return {
    pageNumber: req.pageNumber,
    pageSize: req.pageSize,
    numberOfElements: rows.length,
    totalPages: Math.ceil(total / req.pageSize),
    totalElements: total,
    items,
  };
}

export function mapPage<A, B>(page: Page<A>, fn: (a: A) => B): Page<B> {
  return { ...page, items: page.items.map(fn) };
}
