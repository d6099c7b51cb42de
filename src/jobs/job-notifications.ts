/**
 * Job pickup across processes on PostgreSQL: LISTEN/NOTIFY. `JobQueue.enqueue` runs
 * `pg_notify('vidmill_jobs', kind)` in the enqueuing transaction, which PostgreSQL delivers at
 * commit (and never after a rollback); every worker process holds one connection outside the
 * pool that LISTENs and wakes its loop (`Worker.wakeOn`). Polling stays the fallback: a
 * notification lost while the listening connection was down (it reconnects with the one
 * back-off) is found by the next poll. SQLite has one process, so nothing listens there.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { isPostgres } from '../db/database';
import { backoffMs } from './backoff';

export const JOBS_CHANNEL = 'vidmill_jobs';

/**
 * Tells every listening process `payload` (a job kind, or another notice such as recorded webhook
 * deliveries) when `trx` commits: PostgreSQL delivers a notification at commit, never after a
 * rollback. Nothing on SQLite (one process).
 */
export async function announceAtCommit(trx: Knex, payload: string): Promise<void> {
  if (isPostgres(trx)) await trx.raw('select pg_notify(?, ?)', [JOBS_CHANNEL, payload]);
}

/** The part of a pg client this module uses. */
interface ListeningClient {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', fn: (msg: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error' | 'end', fn: (err?: Error) => void): unknown;
  removeAllListeners(): unknown;
}

/** What Knex's pg client offers besides the pool (not in its typings). */
interface RawConnections {
  acquireRawConnection(): Promise<ListeningClient>;
  destroyRawConnection(c: ListeningClient): Promise<void>;
}

export interface JobNotifications {
  /** Calls `wake` with the kind of every job committed by any process; returns the unsubscribe. */
  subscribe(this: void, wake: (kind: string) => void): () => void;
  /** Resolves once the connection listens (tests). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** Listens on `db`'s server with a connection of its own (reconnecting), until `close()`. */
export function listenForJobs(db: Knex, log: Logger): JobNotifications {
  const raw = db.client as unknown as RawConnections;
  const wakes = new Set<(kind: string) => void>();
  let client: ListeningClient | undefined;
  let closed = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let listening!: () => void;
  const ready = new Promise<void>((resolve) => (listening = resolve));

  const connect = async (): Promise<void> => {
    if (closed) return;
    let c: ListeningClient | undefined;
    try {
      c = await raw.acquireRawConnection();
      c.on('notification', (msg) => {
        if (msg.channel === JOBS_CHANNEL) wakes.forEach((w) => w(msg.payload ?? ''));
      });
      c.on('error', (err) => lost(c!, err));
      c.on('end', () => lost(c!));
      await c.query(`LISTEN ${JOBS_CHANNEL}`);
      if (closed) return void (await raw.destroyRawConnection(c).catch(() => undefined));
      client = c;
      failures = 0;
      listening();
      // Jobs committed while no connection listened: a wake makes the workers look now.
      wakes.forEach((w) => w(''));
    } catch (err) {
      if (c) await raw.destroyRawConnection(c).catch(() => undefined);
      retry(err);
    }
  };
  const retry = (err?: unknown): void => {
    if (closed) return;
    failures++;
    const delay = backoffMs(failures, { baseMs: 500, maxMs: 30_000 });
    log.warn({ err, retryInMs: delay }, 'job notifications: not listening; workers poll meanwhile');
    timer = setTimeout(() => void connect(), delay);
    timer.unref();
  };
  const lost = (c: ListeningClient, err?: Error): void => {
    if (client !== c) return;
    client = undefined;
    c.removeAllListeners();
    c.on('error', () => undefined);
    void raw.destroyRawConnection(c).catch(() => undefined);
    retry(err);
  };

  void connect();
  return {
    subscribe(wake) {
      wakes.add(wake);
      return () => wakes.delete(wake);
    },
    ready: () => ready,
    async close() {
      closed = true;
      clearTimeout(timer);
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners();
        c.on('error', () => undefined);
        await raw.destroyRawConnection(c).catch(() => undefined);
      }
    },
  };
}
