/** SQL for webhooks, events, deliveries and delivery attempts. No rules here; services own them. */
import type { Knex } from 'knex';
import { asBool, asDate, asOptionalDate, lockRowForUpdate } from '../../db/database';
import { claimLeasedRows, LeasedTable, leaseToken, whereLeaseHeld } from '../../jobs/leased-rows';
import { fetchPage, PageRequest } from '../../shared/paging';
import { TeamScope, whereTeamInScope } from '../accounts';
import { DbBool, DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export interface WebhookRecord {
  id: string;
  teamId: string;
  active: boolean;
  name: string;
  description?: string;
  url: string;
  rateLimitPerSecond: number;
  maxTotalRetryDelayMinutes: number;
  eventTypes: string[];
  createdAt: Date;
  updatedAt: Date;
  /** Set when deleted: the row stays (hidden from the webhook operations) while its events are kept. */
  deletedAt?: Date;
}

export type WebhookUpdate = Partial<Pick<WebhookRecord, 'active' | 'name' | 'description' | 'url' | 'rateLimitPerSecond' | 'maxTotalRetryDelayMinutes' | 'eventTypes'>> & {
  updatedAt: Date;
};

export interface EventRecord {
  id: string;
  teamId: string;
  eventType: string;
  occurredAt: Date;
  data: unknown;
  test: boolean;
  createdAt: Date;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface DeliveryRecord {
  id: string;
  eventId: string;
  webhookId: string;
  teamId: string;
  eventType: string;
  occurredAt: Date;
  test: boolean;
  /** The frozen WebhookEventPayload, as JSON text. */
  payload: string;
  status: DeliveryStatus;
  nextAttemptAt?: Date;
  seriesStartedAt?: Date;
  attemptCount: number;
  leaseOwner?: string;
  leaseExpiresAt?: Date;
  successful?: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface AttemptRecord {
  id: string;
  deliveryId: string;
  attemptNumber: number;
  requestedAt: Date;
  responseTimeMillis: number;
  statusCode: number;
  responseBody?: string;
  errorCode?: string;
  errorMessage?: string;
  responseRetryAt?: Date;
  responseHeaders?: Record<string, string>;
}

export interface DeliveryFilter {
  successfulMode?: FilterMode;
  testMode?: FilterMode;
  occurredAtFrom?: Date;
  occurredAtUntil?: Date;
}
export type FilterMode = 'INCLUDE' | 'EXCLUDE' | 'ONLY';

const WEBHOOKS = 'webhooks';
const EVENTS = 'webhook_events';
const DELIVERIES = 'webhook_deliveries';
const ATTEMPTS = 'webhook_delivery_attempts';

/**
 * Deliveries as leased rows: a pending delivery is claimable once `next_attempt_at` is due and no
 * unexpired lease is on it (a lost worker's lease just runs out). The holder may finish it while
 * its token is on the row, even past the lease end (another claim replaces the token).
 */
const DELIVERY_LEASES: LeasedTable = {
  table: DELIVERIES,
  leaseOwnerLength: 64,
  dueColumn: 'next_attempt_at',
  orderBy: ['next_attempt_at'],
  claimable: (q, now) => {
    q.where('status', 'pending').where((w) => {
      w.whereNull('lease_expires_at').orWhere('lease_expires_at', '<=', now);
    });
  },
};

const optional = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);

/** A row as the drivers return it (see src/db/store.ts). */
interface WebhookRecordRow {
  id: string;
  team_id: string;
  active: DbBool;
  name: string;
  description: Nullable<string>;
  url: string;
  rate_limit_per_second: DbInt;
  max_total_retry_delay_minutes: DbInt;
  event_types: string;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
  deleted_at: Nullable<DbTimestamp>;
}

function toWebhook(r: WebhookRecordRow): WebhookRecord {
  return {
    id: r.id,
    teamId: r.team_id,
    active: asBool(r.active),
    name: r.name,
    description: optional(r.description),
    url: r.url,
    rateLimitPerSecond: Number(r.rate_limit_per_second),
    maxTotalRetryDelayMinutes: Number(r.max_total_retry_delay_minutes),
    eventTypes: JSON.parse(r.event_types) as WebhookRecord['eventTypes'],
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
    deletedAt: asOptionalDate(r.deleted_at),
  };
}
const webhookRecordRows = rowMapper(toWebhook);

/** Webhooks not deleted: what the webhook operations see. */
const live = (db: Knex) => db(WEBHOOKS).whereNull(`${WEBHOOKS}.deleted_at`);

/** A row as the drivers return it (see src/db/store.ts). */
interface DeliveryRecordRow {
  id: string;
  event_id: string;
  webhook_id: string;
  team_id: string;
  event_type: string;
  occurred_at: DbTimestamp;
  test: DbBool;
  payload: string;
  status: DeliveryStatus;
  next_attempt_at: Nullable<DbTimestamp>;
  series_started_at: Nullable<DbTimestamp>;
  attempt_count: DbInt;
  lease_owner: Nullable<string>;
  lease_expires_at: Nullable<DbTimestamp>;
  successful: Nullable<DbBool>;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

function toDelivery(r: DeliveryRecordRow): DeliveryRecord {
  return {
    id: r.id,
    eventId: r.event_id,
    webhookId: r.webhook_id,
    teamId: r.team_id,
    eventType: r.event_type,
    occurredAt: asDate(r.occurred_at),
    test: asBool(r.test),
    payload: r.payload,
    status: r.status,
    nextAttemptAt: asOptionalDate(r.next_attempt_at),
    seriesStartedAt: asOptionalDate(r.series_started_at),
    attemptCount: Number(r.attempt_count),
    leaseOwner: optional(r.lease_owner),
    leaseExpiresAt: asOptionalDate(r.lease_expires_at),
    successful: r.successful === null || r.successful === undefined ? undefined : asBool(r.successful),
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}
const deliveryRecordRows = rowMapper(toDelivery);

/** A row as the drivers return it (see src/db/store.ts). */
interface AttemptRecordRow {
  id: string;
  delivery_id: string;
  attempt_number: DbInt;
  requested_at: DbTimestamp;
  response_time_millis: DbInt;
  status_code: DbInt;
  response_body: Nullable<string>;
  error_code: Nullable<string>;
  error_message: Nullable<string>;
  response_retry_at: Nullable<DbTimestamp>;
  response_headers: Nullable<string>;
}

function toAttempt(r: AttemptRecordRow): AttemptRecord {
  return {
    id: r.id,
    deliveryId: r.delivery_id,
    attemptNumber: Number(r.attempt_number),
    requestedAt: asDate(r.requested_at),
    responseTimeMillis: Number(r.response_time_millis),
    statusCode: Number(r.status_code),
    responseBody: optional(r.response_body),
    errorCode: optional(r.error_code),
    errorMessage: optional(r.error_message),
    responseRetryAt: asOptionalDate(r.response_retry_at),
    responseHeaders: r.response_headers ? (JSON.parse(r.response_headers) as AttemptRecord['responseHeaders']) : undefined,
  };
}

function deliveryColumns(d: DeliveryRecord) {
  return {
    id: d.id,
    event_id: d.eventId,
    webhook_id: d.webhookId,
    team_id: d.teamId,
    event_type: d.eventType,
    occurred_at: d.occurredAt,
    test: d.test,
    payload: d.payload,
    status: d.status,
    next_attempt_at: d.nextAttemptAt ?? null,
    series_started_at: d.seriesStartedAt ?? null,
    attempt_count: d.attemptCount,
    lease_owner: d.leaseOwner ?? null,
    lease_expires_at: d.leaseExpiresAt ?? null,
    successful: d.successful ?? null,
    created_at: d.createdAt,
    updated_at: d.updatedAt,
  };
}

function applyMode(q: Knex.QueryBuilder, column: string, mode: FilterMode | undefined): void {
  if (mode === 'ONLY') q.where(column, true);
  else if (mode === 'EXCLUDE')
    q.where((w) => {
      w.whereNull(column).orWhere(column, false);
    });
}

function filtered(db: Knex, scope: TeamScope, f: DeliveryFilter): Knex.QueryBuilder {
  const q = whereTeamInScope(db, db(DELIVERIES), `${DELIVERIES}.team_id`, scope);
  applyMode(q, `${DELIVERIES}.successful`, f.successfulMode);
  applyMode(q, `${DELIVERIES}.test`, f.testMode);
  if (f.occurredAtFrom) q.where(`${DELIVERIES}.occurred_at`, '>=', f.occurredAtFrom);
  if (f.occurredAtUntil) q.where(`${DELIVERIES}.occurred_at`, '<', f.occurredAtUntil);
  return q;
}

export const webhooksStore = {
  async lockTeam(db: Knex, teamId: string): Promise<void> {
    await lockRowForUpdate(db, 'teams', teamId);
  },
  async insert(db: Knex, w: WebhookRecord): Promise<void> {
    await db(WEBHOOKS).insert({
      id: w.id,
      team_id: w.teamId,
      active: w.active,
      name: w.name,
      description: w.description ?? null,
      url: w.url,
      rate_limit_per_second: w.rateLimitPerSecond,
      max_total_retry_delay_minutes: w.maxTotalRetryDelayMinutes,
      event_types: JSON.stringify(w.eventTypes),
      created_at: w.createdAt,
      updated_at: w.updatedAt,
    });
  },
  /** A webhook by id, deleted ones too (`deletedAt` set): the events of a deleted webhook still name it. */
  async byId(db: Knex, id: string): Promise<WebhookRecord | undefined> {
    const r = (await db(WEBHOOKS).where({ id }).first()) as WebhookRecordRow | undefined;
    return webhookRecordRows.one(r);
  },
  /** Webhooks by id, deleted ones too. */
  async byIds(db: Knex, ids: string[]): Promise<WebhookRecord[]> {
    return webhookRecordRows.many(await db(WEBHOOKS).whereIn('id', ids));
  },
  async byIdInScope(db: Knex, id: string, scope: TeamScope): Promise<WebhookRecord | undefined> {
    const r = (await whereTeamInScope(db, live(db), `${WEBHOOKS}.team_id`, scope).where(`${WEBHOOKS}.id`, id).first()) as WebhookRecordRow | undefined;
    return webhookRecordRows.one(r);
  },
  page(db: Knex, scope: TeamScope, req: PageRequest) {
    return fetchPage(whereTeamInScope(db, live(db), `${WEBHOOKS}.team_id`, scope), req, webhookRecordRows.from, WEBHOOKS);
  },
  async countActive(db: Knex, teamId: string): Promise<number> {
    const [{ n }] = (await live(db).where({ team_id: teamId, active: true }).count({ n: '*' })) as [{ n: DbInt }];
    return Number(n);
  },
  async activeOfTeam(db: Knex, teamId: string): Promise<WebhookRecord[]> {
    return webhookRecordRows.many(await live(db).where({ team_id: teamId, active: true }));
  },
  async update(db: Knex, id: string, u: WebhookUpdate): Promise<boolean> {
    const n = await live(db)
      .where({ id })
      .update({
        ...(u.active !== undefined ? { active: u.active } : {}),
        ...(u.name !== undefined ? { name: u.name } : {}),
        ...(u.description !== undefined ? { description: u.description } : {}),
        ...(u.url !== undefined ? { url: u.url } : {}),
        ...(u.rateLimitPerSecond !== undefined ? { rate_limit_per_second: u.rateLimitPerSecond } : {}),
        ...(u.maxTotalRetryDelayMinutes !== undefined ? { max_total_retry_delay_minutes: u.maxTotalRetryDelayMinutes } : {}),
        ...(u.eventTypes !== undefined ? { event_types: JSON.stringify(u.eventTypes) } : {}),
        updated_at: u.updatedAt,
      });
    return n > 0;
  },
  /** Marks the webhook deleted (and inactive); its row goes with the last of its events (sweep). */
  async markDeleted(db: Knex, id: string, now: Date): Promise<boolean> {
    return (await live(db).where({ id }).update({ deleted_at: now, active: false, updated_at: now })) > 0;
  },
};

export const eventsStore = {
  async insertEvent(db: Knex, e: EventRecord): Promise<void> {
    await db(EVENTS).insert({
      id: e.id,
      team_id: e.teamId,
      event_type: e.eventType,
      occurred_at: e.occurredAt,
      data: JSON.stringify(e.data),
      test: e.test,
      created_at: e.createdAt,
    });
  },
  async countTestEventsSince(db: Knex, teamId: string, since: Date): Promise<number> {
    const [{ n }] = (await db(EVENTS).where({ team_id: teamId, test: true }).where('created_at', '>', since).count({ n: '*' })) as [{ n: DbInt }];
    return Number(n);
  },
  async insertDeliveries(db: Knex, deliveries: DeliveryRecord[]): Promise<void> {
    if (deliveries.length) await db(DELIVERIES).insert(deliveries.map(deliveryColumns));
  },
  async deliveryById(db: Knex, id: string): Promise<DeliveryRecord | undefined> {
    const r = (await db(DELIVERIES).where({ id }).first()) as DeliveryRecordRow | undefined;
    return deliveryRecordRows.one(r);
  },
  async deliveryInScope(db: Knex, id: string, scope: TeamScope): Promise<DeliveryRecord | undefined> {
    const r = (await whereTeamInScope(db, db(DELIVERIES), `${DELIVERIES}.team_id`, scope).where(`${DELIVERIES}.id`, id).first()) as DeliveryRecordRow | undefined;
    return deliveryRecordRows.one(r);
  },
  deliveryPage(db: Knex, scope: TeamScope, filter: DeliveryFilter, req: PageRequest) {
    return fetchPage(filtered(db, scope, filter), req, deliveryRecordRows.from, DELIVERIES);
  },
  async attemptsOf(db: Knex, deliveryIds: string[]): Promise<Map<string, AttemptRecord[]>> {
    const byDelivery = new Map<string, AttemptRecord[]>(deliveryIds.map((id) => [id, []]));
    if (!deliveryIds.length) return byDelivery;
    const rows = (await db(ATTEMPTS)
      .whereIn('delivery_id', deliveryIds)
      .orderBy([{ column: 'delivery_id' }, { column: 'attempt_number' }, { column: 'requested_at' }])) as AttemptRecordRow[];
    for (const r of rows) byDelivery.get(r.delivery_id)?.push(toAttempt(r));
    return byDelivery;
  },
  /**
   * Claims up to `limit` due deliveries for `owner` until `leaseExpiresAt` with the jobs' leased-rows
   * claim (one guarded UPDATE; rows locked by another claimer are skipped on PostgreSQL; SQLite
   * runs one writer at a time). Each claim writes a lease token of its own (`leaseOwner` of the
   * records): pass it to `finishAttempt` and `releaseLease`.
   */
  async claimDue(db: Knex, owner: string, now: Date, leaseExpiresAt: Date, limit: number, skipWebhookIds: string[] = []): Promise<DeliveryRecord[]> {
    const rows = await claimLeasedRows(db, DELIVERY_LEASES, {
      token: leaseToken(DELIVERY_LEASES, owner),
      now,
      leaseMs: leaseExpiresAt.getTime() - now.getTime(),
      limit,
      filter: (q) => {
        if (skipWebhookIds.length) q.whereNotIn('webhook_id', skipWebhookIds);
      },
    });
    return rows.map(toDelivery);
  },
  /**
   * Records an attempt and the delivery's new state, if the lease (`owner`: the claim's token) is
   * still held. Two writes: run it in a transaction (the delivery worker opens it).
   */
  async finishAttempt(
    trx: Knex.Transaction,
    owner: string,
    attempt: AttemptRecord,
    next: { status: DeliveryStatus; nextAttemptAt?: Date; seriesStartedAt: Date; successful?: boolean; updatedAt: Date },
  ): Promise<boolean> {
    const n = await whereLeaseHeld(trx, DELIVERY_LEASES, attempt.deliveryId, owner).update({
      status: next.status,
      next_attempt_at: next.nextAttemptAt ?? null,
      series_started_at: next.seriesStartedAt,
      attempt_count: attempt.attemptNumber,
      successful: next.successful ?? null,
      lease_owner: null,
      lease_expires_at: null,
      updated_at: next.updatedAt,
    });
    if (!n) return false;
    await trx(ATTEMPTS).insert({
      id: attempt.id,
      delivery_id: attempt.deliveryId,
      attempt_number: attempt.attemptNumber,
      requested_at: attempt.requestedAt,
      response_time_millis: attempt.responseTimeMillis,
      status_code: attempt.statusCode,
      response_body: attempt.responseBody ?? null,
      error_code: attempt.errorCode ?? null,
      error_message: attempt.errorMessage ?? null,
      response_retry_at: attempt.responseRetryAt ?? null,
      response_headers: attempt.responseHeaders ? JSON.stringify(attempt.responseHeaders) : null,
    });
    return true;
  },
  /** Hands a claimed delivery back without an attempt (worker stopping). */
  async releaseLease(db: Knex, id: string, owner: string): Promise<void> {
    await whereLeaseHeld(db, DELIVERY_LEASES, id, owner).update({ lease_owner: null, lease_expires_at: null });
  },
  /** Makes decided deliveries pending again as a new attempt series. Returns how many. */
  async requeue(db: Knex, ids: string[], now: Date): Promise<number> {
    if (!ids.length) return 0;
    return db(DELIVERIES)
      .whereIn('id', ids)
      .whereNot('status', 'pending')
      .update({ status: 'pending', next_attempt_at: now, series_started_at: null, successful: null, lease_owner: null, lease_expires_at: null, updated_at: now });
  },
  /** Ids of failed deliveries of active webhooks matching the filter. */
  async failedIdsForReplay(db: Knex, scope: TeamScope, filter: Omit<DeliveryFilter, 'successfulMode'>): Promise<string[]> {
    const q = filtered(db, scope, filter)
      .where(`${DELIVERIES}.status`, 'failed')
      .whereIn(`${DELIVERIES}.webhook_id`, db(WEBHOOKS).select('id').where({ active: true }))
      .select(`${DELIVERIES}.id`);
    const rows = (await q) as { id: string }[];
    return rows.map((r) => r.id);
  },
  /**
   * Deletes deliveries (and events left without any) created before the cut-offs, then deleted
   * webhooks left without deliveries.
   */
  async sweep(db: Knex, cutoff: Date, testCutoff: Date): Promise<number> {
    const removed = await db(DELIVERIES)
      .where('created_at', '<', cutoff)
      .orWhere((w) => {
        w.where('test', true).where('created_at', '<', testCutoff);
      })
      .delete();
    await db(EVENTS)
      .where((w) => {
        w.where('created_at', '<', cutoff).orWhere((t) => {
          t.where('test', true).where('created_at', '<', testCutoff);
        });
      })
      .whereNotExists(db(DELIVERIES).select(db.raw('1')).whereRaw(`${DELIVERIES}.event_id = ${EVENTS}.id`))
      .delete();
    await db(WEBHOOKS)
      .whereNotNull('deleted_at')
      .whereNotExists(db(DELIVERIES).select(db.raw('1')).whereRaw(`${DELIVERIES}.webhook_id = ${WEBHOOKS}.id`))
      .delete();
    return removed;
  },
};
