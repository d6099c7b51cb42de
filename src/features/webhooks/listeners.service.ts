/**
 * Webhook listeners: a team's events pulled by a client (the `vidmill webhooks listen` command)
 * instead of pushed to a public URL, signed exactly as a push delivery.
 *
 * - At most 5 live listeners per team (race-safe under the team's row lock). `list` and `get`
 *   show live listeners of the caller's teams only, and are reads: they neither move the expiry
 *   nor acknowledge anything (only a poll does).
 * - `recordEvent` writes one row per live, subscribed listener in the event's transaction
 *   (events.ts), so nothing recorded while a listener lives is lost.
 * - A poll, in one transaction under the listener's row lock: removes the deliveries up to
 *   `after` (acknowledged), numbers the new ones (sequences follow commit order, see migration
 *   015), moves the expiry 5 minutes ahead and hands out up to 100 after `after`, oldest first.
 *   Each is signed when handed out, with the key that signs now and the current time, so it
 *   verifies against the published keys and passes the receiver's 5-minute timestamp check.
 * - Long polling: with nothing to hand out the poll waits up to `waitSeconds` (wall time) for an
 *   in-process wake (events.ts `onListenerDeliveries`) or, every `checkIntervalMs`, a cheap look
 *   at the table (deliveries written by other processes). `stopWaiting()` (shutdown) answers
 *   every waiting poll at once, so closing the server does not wait for them.
 * - Expiry: 5 minutes after the last poll (or the creation), on the injected clock; a periodic
 *   task deletes expired listeners with their deliveries (`sweepExpired`).
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/database';
import { TransactionalService } from '../../db/transactional';
import type { Clock } from '../../shared/clock';
import { ConflictError, NotFoundError } from '../../shared/errors';
import { recordListenerHandOut } from '../../shared/metrics';
import { mapPage, Page, PageRequest } from '../../shared/paging';
import type { AccountsService } from '../accounts';
import { withAttemptCount } from './delivery-worker';
import { onListenerDeliveries } from './events';
import { ListenerDeliveryRecord, ListenerRecord, listenersStore } from './listeners.store';
import { HEADER, signRequest } from './signer';
import type { SigningKeys } from './signing-keys';

export const MAX_LISTENERS_PER_TEAM = 5;
export const LISTENER_TTL_MS = 5 * 60_000;
export const MAX_LISTENER_DELIVERIES_PER_POLL = 100;
export const MAX_LISTENER_WAIT_SECONDS = 25;
export const DEFAULT_LISTENER_WAIT_SECONDS = 20;
/** How often a waiting poll looks at the table for deliveries written by other processes. */
export const DEFAULT_LISTENER_CHECK_INTERVAL_MS = 1_000;

export type WebhookListener = Omit<ListenerRecord, 'lastSequence'>;

/** One delivery as a push would send it: forward `headers` and `body` unchanged. */
export interface ListenerDelivery {
  sequence: number;
  eventId: string;
  eventType: string;
  headers: Record<string, string>;
  body: string;
}

export interface ListenerPoll {
  listenerId: string;
  expiresAt: Date;
  items: ListenerDelivery[];
}

export interface WebhookListenersServiceDeps {
  db: Db;
  clock: Clock;
  accounts: AccountsService;
  signingKeys: SigningKeys;
  checkIntervalMs?: number;
}

/** The headers of a push delivery that a listener hands out (the sender's own User-Agent aside). */
const FORWARDED_HEADERS = ['Content-Type', HEADER.signature, HEADER.publicKeyId, HEADER.timestamp, HEADER.algorithm];

export class WebhookListenersService extends TransactionalService {
  private readonly clock: Clock;
  private readonly accounts: AccountsService;
  private readonly signingKeys: SigningKeys;
  private readonly checkIntervalMs: number;
  /** Wakes of the polls waiting in this process; `stopWaiting` calls them all. */
  private readonly waiting = new Set<() => void>();
  private stopped = false;

  constructor(deps: WebhookListenersServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.accounts = deps.accounts;
    this.signingKeys = deps.signingKeys;
    this.checkIntervalMs = deps.checkIntervalMs ?? DEFAULT_LISTENER_CHECK_INTERVAL_MS;
  }

  async create(userId: string, selectTeamId: string | undefined, eventTypes: string[]): Promise<WebhookListener> {
    const team = await this.accounts.selectTeam(userId, selectTeamId);
    const now = this.clock.now();
    const listener: ListenerRecord = { id: randomUUID(), teamId: team.id, eventTypes: [...new Set(eventTypes)], lastSequence: 0, createdAt: now, expiresAt: new Date(now.getTime() + LISTENER_TTL_MS) };
    await this.transactional(async (trx) => {
      await listenersStore.lockTeam(trx, team.id);
      if ((await listenersStore.countLive(trx, team.id, now)) >= MAX_LISTENERS_PER_TEAM) {
        throw new ConflictError('MAXIMUM_AMOUNT_OF_WEBHOOK_LISTENERS_REACHED', `A team may have at most ${MAX_LISTENERS_PER_TEAM} webhook listeners`);
      }
      await listenersStore.insert(trx, listener);
    });
    return view(listener);
  }

  /** The live listeners of the user's teams, or of one team (`teamId`). Reading does not poll: no expiry moves, nothing is acknowledged. */
  async list(userId: string, teamId: string | undefined, req: PageRequest): Promise<Page<WebhookListener>> {
    return mapPage(await listenersStore.page(this.db, await this.accounts.listScope(userId, teamId), this.clock.now(), req), view);
  }

  /** A live listener of one of the user's teams; 404 when it expired, was deleted or is another team's. Does not poll. */
  async get(userId: string, id: string): Promise<WebhookListener> {
    const listener = await listenersStore.findLiveInScope(this.db, id, { memberUserId: userId }, this.clock.now());
    if (!listener) throw notFound();
    return view(listener);
  }

  async delete(userId: string, id: string): Promise<void> {
    if (!(await this.transactional((trx) => listenersStore.deleteLiveInScope(trx, id, { memberUserId: userId }, this.clock.now())))) throw notFound();
  }

  /**
   * Acknowledges up to `after`, then answers what the listener holds after it, waiting up to
   * `waitSeconds` for a delivery when it holds none. 404 for a listener that is not live.
   */
  async poll(userId: string, id: string, after: number, waitSeconds: number): Promise<ListenerPoll> {
    const deadline = Date.now() + Math.min(Math.max(waitSeconds, 0), MAX_LISTENER_WAIT_SECONDS) * 1000;
    for (;;) {
      const taken = await this.take(userId, id, after);
      if (taken.items.length || this.stopped || Date.now() >= deadline) return this.signed(taken);
      if (!(await this.waitForDelivery(id, deadline))) return this.signed(taken);
    }
  }

  /** Answers every waiting poll now and stops later polls from waiting (shutdown). */
  stopWaiting(): void {
    this.stopped = true;
    for (const wake of [...this.waiting]) wake();
  }

  /** Deletes listeners not polled for 5 minutes, with their deliveries. Returns how many. */
  sweepExpired(): Promise<number> {
    return listenersStore.deleteExpired(this.db, this.clock.now());
  }

  private async take(userId: string, id: string, after: number): Promise<{ listener: ListenerRecord; items: ListenerDeliveryRecord[] }> {
    return this.transactional(async (trx) => {
      const now = this.clock.now();
      const listener = await listenersStore.lockLiveInScope(trx, id, { memberUserId: userId }, now);
      if (!listener) throw notFound();
      // Nothing past the last sequence handed out can have been handled.
      const acknowledged = Math.min(after, listener.lastSequence);
      await listenersStore.acknowledge(trx, id, acknowledged);
      const lastSequence = await listenersStore.assignSequences(trx, id, listener.lastSequence, MAX_LISTENER_DELIVERIES_PER_POLL);
      const expiresAt = new Date(now.getTime() + LISTENER_TTL_MS);
      await listenersStore.update(trx, id, { lastSequence, expiresAt });
      const items = await listenersStore.handOut(trx, id, acknowledged, MAX_LISTENER_DELIVERIES_PER_POLL);
      return { listener: { ...listener, lastSequence, expiresAt }, items };
    });
  }

  private async signed(taken: { listener: ListenerRecord; items: ListenerDeliveryRecord[] }): Promise<ListenerPoll> {
    const { listener, items } = taken;
    if (!items.length) return { listenerId: listener.id, expiresAt: listener.expiresAt, items: [] };
    const signedAt = this.clock.now();
    const key = await this.signingKeys.current(signedAt);
    const unixSeconds = Math.floor(signedAt.getTime() / 1000);
    recordListenerHandOut(items.length, items.filter((d) => d.attemptCount > 1).length);
    return {
      listenerId: listener.id,
      expiresAt: listener.expiresAt,
      items: items.map((d) => {
        const body = withAttemptCount(d.payload, d.attemptCount);
        const all = signRequest(key, body, unixSeconds);
        return { sequence: d.sequence, eventId: d.id, eventType: d.eventType, headers: Object.fromEntries(FORWARDED_HEADERS.map((h) => [h, all[h]!])), body };
      }),
    };
  }

  /**
   * Waits until a delivery for the listener may be there: an in-process wake, a row found by the
   * periodic look at the table, or `stopWaiting`. False when the deadline came first.
   */
  private async waitForDelivery(listenerId: string, deadline: number): Promise<boolean> {
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0 || this.stopped) return false;
      const woken = await new Promise<boolean>((resolve) => {
        let settled = false;
        const finish = (value: boolean) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          unsubscribe();
          this.waiting.delete(stop);
          resolve(value);
        };
        const stop = () => finish(false);
        const timer = setTimeout(() => finish(false), Math.min(left, this.checkIntervalMs));
        const unsubscribe = onListenerDeliveries((ids) => {
          if (ids.includes(listenerId)) finish(true);
        });
        this.waiting.add(stop);
      });
      if (woken) return true;
      if (this.stopped || Date.now() >= deadline) return false;
      if (await listenersStore.hasNew(this.db, listenerId)) return true;
    }
  }
}

function view(l: ListenerRecord): WebhookListener {
  return { id: l.id, teamId: l.teamId, eventTypes: l.eventTypes, createdAt: l.createdAt, expiresAt: l.expiresAt };
}

function notFound(): NotFoundError {
  return new NotFoundError('Webhook listener not found');
}
