/**
 * The base every store is built from. A store is a thin module of SQL functions over one table
 * (or aggregate), each taking the `Db` it runs on (the pool or a transaction) first. Per table it
 * declares, once:
 *
 * - the row type: the columns as the drivers return them (see the column types below: SQLite
 *   and PostgreSQL answer timestamps, 64-bit integers and booleans differently);
 * - the mapper from that row to the domain type, made with `rowMapper`, used for one row
 *   (`one`, undefined stays undefined) and for many (`many`).
 *
 * Rows come back from Knex untyped; a store names the row type where it reads them, so the
 * mapping itself is checked column by column.
 */

/** A timestamp column: epoch milliseconds on SQLite, a Date on PostgreSQL (read with asDate). */
export type DbTimestamp = number | Date;
/** A 64-bit integer or SUM/COUNT column: a number on SQLite, often a string on PostgreSQL. */
export type DbInt = number | string;
/** A boolean column: 0 or 1 on SQLite, a boolean on PostgreSQL (read with asBool). */
export type DbBool = number | boolean;
/** A nullable column. */
export type Nullable<T> = T | null;

export interface RowMapper<Row, T> {
  /** Maps one row (for `rows.map(mapper.from)`). */
  readonly from: (row: Row) => T;
  /** Maps a row that may be missing (`.first()`); undefined stays undefined. */
  one(row: Row | undefined): T | undefined;
  /** Maps every row. */
  many(rows: readonly Row[]): T[];
}

/** Declares a table's mapper from its row type to its domain type. */
export function rowMapper<Row, T>(from: (row: Row) => T): RowMapper<Row, T> {
  return {
    from,
    one: (row) => (row === undefined || row === null ? undefined : from(row)),
    many: (rows) => rows.map((r) => from(r)),
  };
}

/** A nullable column as an optional field (SQL NULL becomes undefined). */
export function optional<T>(value: Nullable<T> | undefined): T | undefined {
  return value ?? undefined;
}
