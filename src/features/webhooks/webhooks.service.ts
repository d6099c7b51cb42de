/**
 * Webhooks: team rules (at most 10 active per team, race-safe), the outbound URL guard on
 * create and change, test events (1000 per team per 24 h), and the delivery history with
 * replay and retention.
 */
import { randomInt, randomUUID } from 'node:crypto';
import type { Db } from '../../db/database';
import { checkOutboundUrl, OutboundPolicy } from '../../net/outbound-url';
import { Clock, DAY_MS } from '../../shared/clock';
import { BadRequestError, ConflictError, NotFoundError } from '../../shared/errors';
import { mapPage, Page, PageRequest } from '../../shared/paging';
import { recordEvent } from './events';
import type { AccountsService } from '../accounts';
import type { TeamScope } from '../accounts';
import { AttemptRecord, DeliveryFilter, DeliveryRecord, eventsStore, FilterMode, WebhookRecord, webhooksStore } from './webhooks.store';
import { TransactionalService } from '../../db/transactional';

export const MAX_ACTIVE_WEBHOOKS = 10;
export const MAX_TEST_EVENTS_PER_DAY = 1000;
export const RETENTION_DAYS = 10;
export const TEST_RETENTION_DAYS = 1;
export const DEFAULT_RATE_LIMIT_PER_SECOND = 10;
export const DEFAULT_MAX_TOTAL_RETRY_DELAY_MINUTES = 180;

export type Webhook = WebhookRecord;

export interface NewWebhook {
  name: string;
  description?: string;
  url: string;
  rateLimitPerSecond?: number;
  maxTotalRetryDelayMinutes?: number;
  eventTypes: string[];
  active: boolean;
}

export type WebhookChanges = Partial<Omit<NewWebhook, 'active'>>;

/** One delivery record with every attempt: what the API calls a webhook event. */
export interface WebhookEventView {
  id: string;
  teamId: string;
  createdAt: Date;
  updatedAt: Date;
  payload: Record<string, unknown>;
  nextAttemptEarliestAt?: Date;
  successful?: boolean;
  responses: AttemptRecord[];
}

export interface EventListFilter {
  teamId?: string;
  successfulMode?: FilterMode;
  testMode?: FilterMode;
  occurredAtFrom?: Date;
  occurredAtUntil?: Date;
}

export interface WebhooksServiceDeps {
  db: Db;
  clock: Clock;
  accounts: AccountsService;
  policy: OutboundPolicy;
  /** The `data.error` of a test event of this type, as a real event of the type carries it (every `*.failed` type has one). */
  testEventError: (eventType: string) => { code: string; message: string } | undefined;
}

export class WebhooksService extends TransactionalService {
  private readonly clock: Clock;
  private readonly accounts: AccountsService;
  private readonly policy: OutboundPolicy;
  private readonly testEventError: WebhooksServiceDeps['testEventError'];
  constructor(deps: WebhooksServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.accounts = deps.accounts;
    this.policy = deps.policy;
    this.testEventError = deps.testEventError;
  }

  async create(userId: string, selectTeamId: string | undefined, input: NewWebhook): Promise<Webhook> {
    const team = await this.accounts.selectTeam(userId, selectTeamId);
    await checkOutboundUrl(input.url, this.policy);
    const now = this.clock.now();
    const webhook: WebhookRecord = {
      id: randomUUID(),
      teamId: team.id,
      active: input.active,
      name: input.name,
      description: input.description,
      url: input.url,
      rateLimitPerSecond: input.rateLimitPerSecond ?? DEFAULT_RATE_LIMIT_PER_SECOND,
      maxTotalRetryDelayMinutes: input.maxTotalRetryDelayMinutes ?? DEFAULT_MAX_TOTAL_RETRY_DELAY_MINUTES,
      eventTypes: input.eventTypes,
      createdAt: now,
      updatedAt: now,
    };
    await this.transactional(async (trx) => {
      await webhooksStore.lockTeam(trx, team.id);
      if (webhook.active) await assertRoomForActiveWebhook(trx, team.id);
      await webhooksStore.insert(trx, webhook);
    });
    return webhook;
  }

  async list(userId: string, teamId: string | undefined, req: PageRequest): Promise<Page<Webhook>> {
    return webhooksStore.page(this.db, await this.accounts.listScope(userId, teamId), req);
  }

  get(userId: string, id: string): Promise<Webhook> {
    return this.find(this.db, userId, id);
  }

  async update(userId: string, id: string, changes: WebhookChanges): Promise<Webhook> {
    const current = await this.find(this.db, userId, id);
    if (changes.url !== undefined && changes.url !== current.url) await checkOutboundUrl(changes.url, this.policy);
    const update = { ...stripUndefined(changes), updatedAt: this.clock.now() };
    if (!(await webhooksStore.update(this.db, id, update))) throw notFound();
    return { ...current, ...update };
  }

  /**
   * Deletes a webhook for its owner: it is gone from the webhook operations and gets no new
   * events, while its events and attempts stay readable for their retention (10 days, test
   * events 1 day), as Svix keeps an endpoint's messages. A pending delivery is not sent; its
   * next attempt is recorded as not sent.
   */
  async delete(userId: string, id: string): Promise<void> {
    await this.find(this.db, userId, id);
    if (!(await webhooksStore.markDeleted(this.db, id, this.clock.now()))) throw notFound();
  }

  async activate(userId: string, id: string): Promise<Webhook> {
    const found = await this.find(this.db, userId, id);
    return this.transactional(async (trx) => {
      await webhooksStore.lockTeam(trx, found.teamId);
      const webhook = await this.find(trx, userId, id);
      if (webhook.active) return webhook;
      await assertRoomForActiveWebhook(trx, webhook.teamId);
      const now = this.clock.now();
      await webhooksStore.update(trx, id, { active: true, updatedAt: now });
      return { ...webhook, active: true, updatedAt: now };
    });
  }

  async deactivate(userId: string, id: string): Promise<Webhook> {
    const webhook = await this.find(this.db, userId, id);
    if (!webhook.active) return webhook;
    const now = this.clock.now();
    await webhooksStore.update(this.db, id, { active: false, updatedAt: now });
    return { ...webhook, active: false, updatedAt: now };
  }

  /** Queues a test event for one webhook and returns its (not yet delivered) record. */
  async sendTestEvent(userId: string, id: string, opts: { videoId?: string; eventType?: string }): Promise<WebhookEventView> {
    const webhook = await this.find(this.db, userId, id);
    if (!webhook.active) throw new ConflictError('WEBHOOK_NOT_ACTIVE', 'Activate the webhook before sending it test events');
    if (opts.eventType !== undefined && !webhook.eventTypes.includes(opts.eventType)) {
      throw new ConflictError('CONFLICT', `The webhook is not subscribed to ${opts.eventType}`);
    }
    const eventType = opts.eventType ?? webhook.eventTypes[randomInt(webhook.eventTypes.length)]!;
    const now = this.clock.now();
    const [delivery] = await this.transactional(async (trx) => {
      await webhooksStore.lockTeam(trx, webhook.teamId);
      if ((await eventsStore.countTestEventsSince(trx, webhook.teamId, new Date(now.getTime() - DAY_MS))) >= MAX_TEST_EVENTS_PER_DAY) {
        throw new ConflictError('TOO_MANY_WEBHOOK_TEST_EVENTS', `A team may send at most ${MAX_TEST_EVENTS_PER_DAY} test events in 24 hours`);
      }
      const error = this.testEventError(eventType);
      return recordEvent(trx, { teamId: webhook.teamId, eventType, videoId: opts.videoId ?? randomUUID(), occurredAt: now, test: true, onlyWebhookId: webhook.id, ...(error ? { error } : {}) });
    });
    return toView(delivery!, []);
  }

  async listEvents(userId: string, f: EventListFilter, req: PageRequest): Promise<Page<WebhookEventView>> {
    assertRange(f.occurredAtFrom, f.occurredAtUntil);
    const scope = await this.accounts.listScope(userId, f.teamId);
    const page = await eventsStore.deliveryPage(this.db, scope, f, req);
    const attempts = await eventsStore.attemptsOf(
      this.db,
      page.items.map((d) => d.id),
    );
    return mapPage(page, (d) => toView(d, attempts.get(d.id) ?? []));
  }

  async getEvent(userId: string, id: string): Promise<WebhookEventView> {
    const d = await this.findDelivery(userId, id);
    return toView(d, (await eventsStore.attemptsOf(this.db, [d.id])).get(d.id) ?? []);
  }

  /** Sends a decided event again as a new attempt series (409 when its webhook is inactive or deleted). */
  async replayEvent(userId: string, id: string): Promise<WebhookEventView> {
    const d = await this.findDelivery(userId, id);
    const webhook = await webhooksStore.byId(this.db, d.webhookId);
    if (!webhook || webhook.deletedAt) throw new ConflictError('WEBHOOK_NOT_ACTIVE', `Webhook ${d.webhookId} was deleted; its events cannot be sent again`);
    if (!webhook.active) throw new ConflictError('WEBHOOK_NOT_ACTIVE', 'Activate the webhook before replaying its events');
    if (!(await eventsStore.requeue(this.db, [id], this.clock.now()))) {
      throw new ConflictError('CONFLICT', 'The event is still being delivered');
    }
    return this.getEvent(userId, id);
  }

  /** Queues every failed event matching the filter again. Returns how many. */
  async replayFailed(userId: string, f: Omit<EventListFilter, 'successfulMode'>): Promise<number> {
    assertRange(f.occurredAtFrom, f.occurredAtUntil);
    const scope: TeamScope = await this.accounts.listScope(userId, f.teamId);
    const filter: DeliveryFilter = { testMode: f.testMode, occurredAtFrom: f.occurredAtFrom, occurredAtUntil: f.occurredAtUntil };
    const ids = await eventsStore.failedIdsForReplay(this.db, scope, filter);
    let queued = 0;
    for (let i = 0; i < ids.length; i += 500) queued += await eventsStore.requeue(this.db, ids.slice(i, i + 500), this.clock.now());
    return queued;
  }

  /** Retention: event records after 10 days, test events after 1 day. Returns how many went. */
  sweepHistory(): Promise<number> {
    const now = this.clock.now().getTime();
    return eventsStore.sweep(this.db, new Date(now - RETENTION_DAYS * DAY_MS), new Date(now - TEST_RETENTION_DAYS * DAY_MS));
  }

  private async find(db: Db, userId: string, id: string): Promise<WebhookRecord> {
    const webhook = await webhooksStore.byIdInScope(db, id, { memberUserId: userId });
    if (!webhook) throw notFound();
    return webhook;
  }

  private async findDelivery(userId: string, id: string): Promise<DeliveryRecord> {
    const d = await eventsStore.deliveryInScope(this.db, id, { memberUserId: userId });
    if (!d) throw new NotFoundError('Webhook event not found');
    return d;
  }
}

async function assertRoomForActiveWebhook(db: Db, teamId: string): Promise<void> {
  if ((await webhooksStore.countActive(db, teamId)) >= MAX_ACTIVE_WEBHOOKS) {
    throw new ConflictError('MAXIMUM_AMOUNT_OF_ACTIVE_WEBHOOKS_REACHED', `A team may have at most ${MAX_ACTIVE_WEBHOOKS} active webhooks`);
  }
}

function assertRange(from?: Date, until?: Date): void {
  if (from && until && from.getTime() > until.getTime()) {
    throw new BadRequestError('INVALID_DATE_TIME_RANGE', 'occurredAtFrom must not be later than occurredAtUntil');
  }
}

function notFound(): NotFoundError {
  return new NotFoundError('Webhook not found');
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function toView(d: DeliveryRecord, responses: AttemptRecord[]): WebhookEventView {
  return {
    id: d.id,
    teamId: d.teamId,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
    payload: { ...(JSON.parse(d.payload) as Record<string, unknown>), attemptCount: d.attemptCount },
    nextAttemptEarliestAt: d.status === 'pending' ? d.nextAttemptAt : undefined,
    successful: d.status === 'pending' ? undefined : d.successful,
    responses,
  };
}
