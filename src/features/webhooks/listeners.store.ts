/** SQL for webhook listeners and the deliveries they hold. No rules here; the service owns them. */
import type { Knex } from 'knex';
import { asDate, lockRowForUpdate } from '../../db/database';
import { DbInt, DbTimestamp, rowMapper } from '../../db/store';
import { fetchPage, Page, PageRequest } from '../../shared/paging';
import { TeamScope, whereTeamInScope } from '../accounts';

export interface ListenerRecord {
  id: string;
  teamId: string;
  eventTypes: string[];
  /** The last sequence handed out (0 before the first). */
  lastSequence: number;
  createdAt: Date;
  expiresAt: Date;
}

export interface ListenerDeliveryRecord {
  /** The payload's `id`. */
  id: string;
  listenerId: string;
  sequence: number;
  eventType: string;
  /** The frozen WebhookEventPayload, as JSON text. */
  payload: string;
  /** How many polls handed the delivery out, this one included. */
  attemptCount: number;
}

export interface NewListenerDelivery {
  id: string;
  listenerId: string;
  eventType: string;
  payload: string;
  createdAt: Date;
}

const LISTENERS = 'webhook_listeners';
const DELIVERIES = 'webhook_listener_deliveries';

/** A row as the drivers return it (see src/db/store.ts). */
interface ListenerRow {
  id: string;
  team_id: string;
  event_types: string;
  last_sequence: DbInt;
  created_at: DbTimestamp;
  expires_at: DbTimestamp;
}

const listenerRows = rowMapper((r: ListenerRow): ListenerRecord => ({
  id: r.id,
  teamId: r.team_id,
  eventTypes: JSON.parse(r.event_types) as string[],
  lastSequence: Number(r.last_sequence),
  createdAt: asDate(r.created_at),
  expiresAt: asDate(r.expires_at),
}));

/** A row as the drivers return it (see src/db/store.ts). */
interface DeliveryRow {
  id: string;
  listener_id: string;
  sequence: DbInt;
  event_type: string;
  payload: string;
  attempt_count: DbInt;
}

const deliveryRows = rowMapper((r: DeliveryRow): ListenerDeliveryRecord => ({
  id: r.id,
  listenerId: r.listener_id,
  sequence: Number(r.sequence),
  eventType: r.event_type,
  payload: r.payload,
  attemptCount: Number(r.attempt_count),
}));

/** Listeners not past their expiry at `now`. */
const live = (db: Knex, now: Date) => db(LISTENERS).where(`${LISTENERS}.expires_at`, '>', now);

export const listenersStore = {
  /** Serialises listener creation of a team (the limit of 5). */
  async lockTeam(db: Knex, teamId: string): Promise<void> {
    await lockRowForUpdate(db, 'teams', teamId);
  },
  async insert(db: Knex, l: ListenerRecord): Promise<void> {
    await db(LISTENERS).insert({
      id: l.id,
      team_id: l.teamId,
      event_types: JSON.stringify(l.eventTypes),
      last_sequence: l.lastSequence,
      created_at: l.createdAt,
      expires_at: l.expiresAt,
    });
  },
  async countLive(db: Knex, teamId: string, now: Date): Promise<number> {
    const [{ n }] = (await live(db, now).where({ team_id: teamId }).count({ n: '*' })) as [{ n: DbInt }];
    return Number(n);
  },
  /** The team's live listeners (recordEvent's fan-out). */
  async liveOfTeam(db: Knex, teamId: string, now: Date): Promise<ListenerRecord[]> {
    return listenerRows.many(await live(db, now).where({ team_id: teamId }));
  },
  /**
   * A page of the live listeners of the teams in scope. A listener has no `updated_at`: what
   * changes it is a poll, which moves `expires_at`, so `updatedAt` orders by that.
   */
  page(db: Knex, scope: TeamScope, now: Date, req: PageRequest): Promise<Page<ListenerRecord>> {
    return fetchPage(whereTeamInScope(db, live(db, now), `${LISTENERS}.team_id`, scope), req, listenerRows.from, LISTENERS, { createdAt: 'created_at', updatedAt: 'expires_at' });
  },
  /** A live listener of a team in scope (no lock: a read). */
  async findLiveInScope(db: Knex, id: string, scope: TeamScope, now: Date): Promise<ListenerRecord | undefined> {
    const r = (await whereTeamInScope(db, live(db, now), `${LISTENERS}.team_id`, scope).where(`${LISTENERS}.id`, id).first()) as ListenerRow | undefined;
    return listenerRows.one(r);
  },
  /** A live listener of a team in scope, its row locked for the rest of the transaction (PostgreSQL). */
  async lockLiveInScope(db: Knex, id: string, scope: TeamScope, now: Date): Promise<ListenerRecord | undefined> {
    const r = (await whereTeamInScope(db, live(db, now), `${LISTENERS}.team_id`, scope).where(`${LISTENERS}.id`, id).first()) as ListenerRow | undefined;
    if (!r) return undefined;
    await lockRowForUpdate(db, LISTENERS, id);
    // Read again under the lock: a concurrent poll may have moved last_sequence.
    return listenerRows.one((await live(db, now).where({ id }).first()) as ListenerRow | undefined);
  },
  /** Deletes a live listener of a team in scope and its deliveries (two statements: run it in a transaction). */
  async deleteLiveInScope(db: Knex, id: string, scope: TeamScope, now: Date): Promise<boolean> {
    const ids = whereTeamInScope(db, live(db, now), `${LISTENERS}.team_id`, scope).where(`${LISTENERS}.id`, id).select(`${LISTENERS}.id`);
    if (!(await db(LISTENERS).whereIn('id', ids).delete())) return false;
    await db(DELIVERIES).where({ listener_id: id }).delete();
    return true;
  },
  async update(db: Knex, id: string, u: { lastSequence: number; expiresAt: Date }): Promise<void> {
    await db(LISTENERS).where({ id }).update({ last_sequence: u.lastSequence, expires_at: u.expiresAt });
  },
  /**
   * Deletes listeners whose expiry has come, then every delivery of a listener that is gone
   * (theirs, and any written by an event that raced a delete). Returns how many listeners.
   */
  async deleteExpired(db: Knex, now: Date): Promise<number> {
    const deleted = await db(LISTENERS).where('expires_at', '<=', now).delete();
    await db(DELIVERIES)
      .whereNotExists(db(LISTENERS).select(db.raw('1')).whereRaw(`${LISTENERS}.id = ${DELIVERIES}.listener_id`))
      .delete();
    return deleted;
  },
  async insertDeliveries(db: Knex, deliveries: NewListenerDelivery[]): Promise<void> {
    if (!deliveries.length) return;
    await db(DELIVERIES).insert(
      deliveries.map((d) => ({ id: d.id, listener_id: d.listenerId, sequence: null, event_type: d.eventType, payload: d.payload, attempt_count: 0, created_at: d.createdAt })),
    );
  },
  /** Removes the deliveries acknowledged: those with a sequence up to `after`. */
  async acknowledge(db: Knex, listenerId: string, after: number): Promise<void> {
    if (after > 0) await db(DELIVERIES).where({ listener_id: listenerId }).whereNotNull('sequence').where('sequence', '<=', after).delete();
  },
  /**
   * Numbers up to `limit` deliveries not handed out yet, in the order they were written, from
   * `lastSequence + 1` on. Call it holding the listener's lock. Returns the new last sequence.
   */
  async assignSequences(db: Knex, listenerId: string, lastSequence: number, limit: number): Promise<number> {
    const rows: { row_id: DbInt }[] = await db(DELIVERIES).where({ listener_id: listenerId }).whereNull('sequence').orderBy('row_id').limit(limit).select('row_id');
    if (!rows.length) return lastSequence;
    const ids = rows.map((r) => Number(r.row_id));
    const cases = ids.map(() => 'when ? then cast(? as bigint)').join(' ');
    const bindings = ids.flatMap((id, i) => [id, lastSequence + i + 1]);
    await db(DELIVERIES)
      .whereIn('row_id', ids)
      .update({ sequence: db.raw(`case row_id ${cases} end`, bindings) });
    return lastSequence + ids.length;
  },
  /** Hands out up to `limit` numbered deliveries after `after`, oldest first, counting the hand-out. */
  async handOut(db: Knex, listenerId: string, after: number, limit: number): Promise<ListenerDeliveryRecord[]> {
    const rows = (await db(DELIVERIES).where({ listener_id: listenerId }).where('sequence', '>', after).orderBy('sequence').limit(limit)) as DeliveryRow[];
    if (!rows.length) return [];
    await db(DELIVERIES)
      .whereIn(
        'id',
        rows.map((r) => r.id),
      )
      .increment('attempt_count', 1);
    return deliveryRows.many(rows).map((d) => ({ ...d, attemptCount: d.attemptCount + 1 }));
  },
  /** Whether the listener holds a delivery not handed out yet (the long poll's check across processes). */
  async hasNew(db: Knex, listenerId: string): Promise<boolean> {
    return (await db(DELIVERIES).where({ listener_id: listenerId }).whereNull('sequence').first('row_id')) !== undefined;
  },
};
