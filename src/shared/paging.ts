/** Paging and sorting shared by every list: 0-based pages, createdAt/updatedAt sorting. */
import type { Knex } from 'knex';
import { Db, readRows } from '../db/database';

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

export function pageRequest(q: {
  pageNumber?: number;
  pageSize?: number;
  sortDirection?: 'ASC' | 'DESC';
  sortBy?: 'createdAt' | 'updatedAt';
}): PageRequest {
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
 * page lies past the end. `base` must be a query without select, order or limit.
 */
export async function fetchPage<Row, T>(
  base: Knex.QueryBuilder,
  req: PageRequest,
  map: (row: Row) => T,
  table: string,
): Promise<Page<T>> {
  const dir = req.sortDirection === 'DESC' ? 'desc' : 'asc';
  const rows: any[] = await base
    .clone()
    .select(`${table}.*`, base.client.raw('count(*) over () as total_count'))
    .orderBy([
      { column: `${table}.${SORT_COLUMNS[req.sortBy]}`, order: dir },
      { column: `${table}.id`, order: dir },
    ])
    .limit(req.pageSize)
    .offset(req.pageNumber * req.pageSize);
  let total: number;
  if (rows.length > 0) {
    total = Number(rows[0].total_count);
  } else {
    const [{ n }] = await base.clone().count({ n: '*' });
    total = Number(n);
  }
  return {
    pageNumber: req.pageNumber,
    pageSize: req.pageSize,
    numberOfElements: rows.length,
    totalPages: Math.ceil(total / req.pageSize),
    totalElements: total,
    items: rows.map((r) => map(r as Row)),
  };
}

/**
 * `fetchPage` for hot lists, with hand-written SQL run through `readRows` (on SQLite a cached
 * prepared statement, no query builder): one statement for the page and its total (a window
 * count), a plain count only when the page lies past the end. `where` is an SQL condition on
 * `table` with `?` placeholders for `bindings`.
 */
export async function readPage<T>(
  db: Db,
  table: string,
  where: string,
  bindings: readonly Knex.RawBinding[],
  req: PageRequest,
  map: (row: any) => T,
): Promise<Page<T>> {
  const dir = req.sortDirection === 'DESC' ? 'desc' : 'asc';
  const sort = SORT_COLUMNS[req.sortBy];
  const rows = await readRows(
    db,
    `select ${table}.*, count(*) over () as total_count from ${table} where ${where} ` +
      `order by ${table}.${sort} ${dir}, ${table}.id ${dir} limit ? offset ?`,
    [...bindings, req.pageSize, req.pageNumber * req.pageSize],
  );
  const total =
    rows.length > 0 ? Number(rows[0].total_count) : Number((await readRows(db, `select count(*) as n from ${table} where ${where}`, bindings))[0].n);
  const items = new Array<T>(rows.length);
  for (let i = 0; i < rows.length; i++) items[i] = map(rows[i]);
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
