/**
 * The one transaction style of the services (after Unleash's `withTransactional`: a service is
 * built over a `Db`, and the same service works inside a transaction).
 *
 * - A service extends `TransactionalService` and is built from one dependencies object holding
 *   its `db` (the pool).
 * - It opens its transactions with `this.transactional(fn)`: fn runs in a new transaction, or,
 *   when the service is bound to a caller's transaction, inside that one (as a savepoint, so
 *   everything commits together with the caller's work, and a failure inside fn that the caller
 *   catches rolls back only fn's part).
 * - A caller that holds a transaction and needs another service's work to commit with it binds
 *   that service: `other.within(trx).method(...)`. Binding is transitive: the services it
 *   depends on are bound to the same transaction.
 * - Hooks and listeners that run inside a transaction receive it (`(trx, ...) => ...`) and bind
 *   what they call with `within(trx)`. Stores, and private helpers of a service that work in
 *   an open transaction, take the `Db` they run on as their first argument.
 */
import type { Knex } from 'knex';
import type { Db } from './database';

/** Runs fn in a transaction of `db`: a new one on the pool, or a savepoint of `db` when it is already a transaction. */
export function transactional<T>(db: Db, fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return db.transaction((trx) => fn(trx));
}

export abstract class TransactionalService {
  protected constructor(protected readonly db: Db) {}

  /** Runs fn in a transaction: a new one, or a savepoint of the transaction this service is bound to. */
  protected transactional<T>(fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return transactional(this.db, fn);
  }

  /**
   * This service working inside the caller's transaction `trx`: every query and transaction of
   * it (and of the services it depends on) joins `trx`. The bound copy shares everything else
   * with this one (listeners, caches, configuration).
   */
  within(trx: Db): this {
    return bind(this, trx, new Map());
  }
}

function bind<S extends TransactionalService>(service: S, trx: Db, seen: Map<TransactionalService, TransactionalService>): S {
  const known = seen.get(service);
  if (known) return known as S;
  const bound = Object.create(service) as S;
  seen.set(service, bound);
  const db = (service as unknown as { db: Db }).db;
  for (const [key, value] of Object.entries(service)) {
    if (value === db) Object.defineProperty(bound, key, { value: trx, enumerable: true });
    else if (value instanceof TransactionalService) Object.defineProperty(bound, key, { value: bind(value, trx, seen), enumerable: true });
  }
  return bound;
}
