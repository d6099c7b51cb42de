/**
 * Runs a callback once the work of `db` is durable: at once on the pool, or after the
 * outermost transaction commits when `db` is a transaction (or a savepoint inside one). Nothing
 * runs when that transaction, or any savepoint between, rolls back. For effects outside the
 * database that must follow only committed work (metrics counted once per committed charge).
 */
import type { Knex } from 'knex';

/** What Knex sets on a transaction object (not in its typings): the transaction's promise and its parent. */
interface TransactionInternals {
  isTransaction?: boolean;
  executionPromise?: Promise<unknown>;
  parentTransaction?: TransactionInternals;
}

export function afterCommit(db: Knex, fn: () => void): void {
  const pending: Promise<unknown>[] = [];
  for (let t = db as unknown as TransactionInternals | undefined; t?.isTransaction; t = t.parentTransaction) {
    if (t.executionPromise) pending.push(t.executionPromise);
  }
  if (pending.length === 0) return fn();
  Promise.all(pending).then(fn, () => undefined);
}
