/**
 * Counts the SQL statements a piece of work sends, from Knex's `query` event (one per statement,
 * BEGIN, COMMIT and savepoints included). A statement is counted for the work it was started
 * from (AsyncLocalStorage), so a worker polling on the same database, or a test waiting on a
 * row, is not counted with a request. On SQLite the hand-written hot reads of `readRows` /
 * `readTuples` (src/db/database.ts) run on the connection without Knex and are not seen; on
 * PostgreSQL they are.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from 'knex';

export interface RecordedStatement {
  sql: string;
  /** The rows the statement answered (for `returning` and selects), once it has answered. */
  rows?: number;
}

interface QueryEvent {
  sql: string;
  __knexQueryUid?: string;
}

export interface StatementRecorder {
  /** Runs fn and returns what it returned with the statements it sent. */
  during<T>(fn: () => Promise<T>): Promise<{ result: T; statements: RecordedStatement[] }>;
  /** Every statement sent from outside any `during` (a worker's, say) since the recorder started. */
  readonly outside: RecordedStatement[];
  /** Runs fn with its statements counted nowhere (a test polling for a state). */
  unrecorded<T>(fn: () => Promise<T>): Promise<T>;
  stop(): void;
}

export function recordStatements(db: Knex): StatementRecorder {
  const context = new AsyncLocalStorage<RecordedStatement[] | null>();
  const outside: RecordedStatement[] = [];
  const byUid = new Map<string, RecordedStatement>();
  const onQuery = (q: QueryEvent) => {
    const into = context.getStore();
    if (into === null) return;
    const statement: RecordedStatement = { sql: q.sql };
    (into ?? outside).push(statement);
    if (q.__knexQueryUid) byUid.set(q.__knexQueryUid, statement);
  };
  const onResponse = (response: unknown, q: QueryEvent) => {
    const statement = q.__knexQueryUid ? byUid.get(q.__knexQueryUid) : undefined;
    if (!statement) return;
    byUid.delete(q.__knexQueryUid!);
    statement.rows = Array.isArray(response) ? response.length : undefined;
  };
  db.on('query', onQuery);
  db.on('query-response', onResponse);
  return {
    outside,
    async during(fn) {
      const statements: RecordedStatement[] = [];
      const result = await context.run(statements, fn);
      return { result, statements };
    },
    unrecorded: (fn) => context.run(null, fn),
    stop() {
      db.off('query', onQuery);
      db.off('query-response', onResponse);
    },
  };
}
