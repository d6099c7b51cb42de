/**
 * Domain events and their fan-out. Call `recordEvent` inside the transaction of the state
 * change that causes the event: the event row, one delivery row per active webhook of the team
 * subscribed to its type, and one row per live webhook listener of the team subscribed to it
 * (not for test events) are written together, each with its payload frozen.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { afterCommit } from '../../db/after-commit';
import { announceAtCommit } from '../../jobs/job-notifications';
import { listenersStore, NewListenerDelivery } from './listeners.store';
import { DeliveryRecord, eventsStore, webhooksStore } from './webhooks.store';

export interface NewEvent {
  teamId: string;
  eventType: string;
  videoId: string;
  occurredAt: Date;
  test?: boolean;
  /** Deliver to this webhook only (test events). */
  onlyWebhookId?: string;
  /** Why the stage failed: required on `*.failed` events, absent on others; a fixed code and message, never internal detail. */
  error?: { code: string; message: string };
}

/** WebhookEventPayload as frozen in a delivery row (`attemptCount` is set per attempt). */
export interface FrozenPayload {
  id: string;
  webhookId: string;
  eventType: string;
  occurredAt: string;
  test: boolean;
  attemptCount: number;
  data: EventData;
}

/** WebhookEventVideoData: the video, and for a failed stage why (`StageError`). */
export interface EventData {
  type: 'VIDEO';
  videoId: string;
  error?: { errorCode: string; message: string };
}

/**
 * The payload of the job channel's notification (src/jobs/job-notifications.ts) that says "webhook
 * deliveries were recorded": not a job kind, so job workers do not wake for it (src/main.ts).
 */
export const WEBHOOK_DELIVERIES_NOTICE = 'webhook.deliveries';

type Subscribe = (heard: (notice: string) => void) => () => void;
/**
 * The wake source of a delivery loop from the job channel's subscription: recorded deliveries, and
 * the empty notice a (re)connected listener sends (what was committed while nobody listened).
 */
export const deliveryNotices =
  (subscribe: Subscribe) =>
  (wake: () => void): (() => void) =>
    subscribe((notice) => (notice === WEBHOOK_DELIVERIES_NOTICE || notice === '') && wake());
/** The wake source of a job worker from the same subscription: job kinds only. */
export const jobNotices =
  (subscribe: Subscribe) =>
  (wake: () => void): (() => void) =>
    subscribe((notice) => notice !== WEBHOOK_DELIVERIES_NOTICE && wake());

type Listener = () => void;
const listeners = new Set<Listener>();

/** Called after a transaction that recorded events commits (wakes in-process delivery loops). */
export function onEventsRecorded(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

type ListenerWake = (listenerIds: readonly string[]) => void;
const listenerWakes = new Set<ListenerWake>();

/**
 * Called with the webhook listeners that got deliveries, after the transaction that wrote them
 * commits (wakes the long polls of this process; other processes find them by polling the table).
 */
export function onListenerDeliveries(wake: ListenerWake): () => void {
  listenerWakes.add(wake);
  return () => listenerWakes.delete(wake);
}

function notifyAfterCommit(trx: Knex): void {
  afterCommit(trx, () => listeners.forEach((l) => l()));
}

/** Writes the event and its deliveries; returns the deliveries created. */
export async function recordEvent(trx: Knex, e: NewEvent): Promise<DeliveryRecord[]> {
  if (e.eventType.endsWith('.failed') !== (e.error !== undefined)) {
    throw new Error(`${e.eventType}: a *.failed event carries data.error, any other event none (test events too)`);
  }
  const eventId = randomUUID();
  const now = e.occurredAt;
  const data: EventData = { type: 'VIDEO', videoId: e.videoId, ...(e.error ? { error: { errorCode: e.error.code, message: e.error.message } } : {}) };
  const test = e.test ?? false;
  await eventsStore.insertEvent(trx, { id: eventId, teamId: e.teamId, eventType: e.eventType, occurredAt: e.occurredAt, data, test, createdAt: now });
  const webhooks = (await webhooksStore.activeOfTeam(trx, e.teamId)).filter((w) => w.eventTypes.includes(e.eventType) && (e.onlyWebhookId === undefined || w.id === e.onlyWebhookId));
  const deliveries = webhooks.map((w): DeliveryRecord => {
    const id = randomUUID();
    const payload: FrozenPayload = { id, webhookId: w.id, eventType: e.eventType, occurredAt: e.occurredAt.toISOString(), test, attemptCount: 0, data };
    return {
      id,
      eventId,
      webhookId: w.id,
      teamId: e.teamId,
      eventType: e.eventType,
      occurredAt: e.occurredAt,
      test,
      payload: JSON.stringify(payload),
      status: 'pending',
      nextAttemptAt: now,
      attemptCount: 0,
      createdAt: now,
      updatedAt: now,
    };
  });
  await eventsStore.insertDeliveries(trx, deliveries);
  if (deliveries.length) {
    notifyAfterCommit(trx);
    // Delivery loops of other processes (an event recorded by an API process, delivered by a
    // worker): PostgreSQL delivers the notification at commit, never after a rollback; they poll too.
    await announceAtCommit(trx, WEBHOOK_DELIVERIES_NOTICE);
  }
  if (!test) await fanOutToListeners(trx, e, data);
  return deliveries;
}

/** One listener delivery per live listener of the team subscribed to the type (payload `webhookId` = listener id). */
async function fanOutToListeners(trx: Knex, e: NewEvent, data: EventData): Promise<void> {
  const subscribed = (await listenersStore.liveOfTeam(trx, e.teamId, e.occurredAt)).filter((l) => l.eventTypes.includes(e.eventType));
  if (!subscribed.length) return;
  const rows = subscribed.map((l): NewListenerDelivery => {
    const id = randomUUID();
    const payload: FrozenPayload = { id, webhookId: l.id, eventType: e.eventType, occurredAt: e.occurredAt.toISOString(), test: false, attemptCount: 0, data };
    return { id, listenerId: l.id, eventType: e.eventType, payload: JSON.stringify(payload), createdAt: e.occurredAt };
  });
  await listenersStore.insertDeliveries(trx, rows);
  const ids = subscribed.map((l) => l.id);
  afterCommit(trx, () => listenerWakes.forEach((w) => w(ids)));
}
