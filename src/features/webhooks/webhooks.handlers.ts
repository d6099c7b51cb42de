import type { components } from '../../../generated/api';
import type { HandlerMap } from '../../http/operations';
import { pageRequest } from '../../shared/paging';
import type { PublicKeyView, SigningKeys } from './signing-keys';
import type { AttemptRecord } from './webhooks.store';
import type { Webhook, WebhookEventView, WebhooksService } from './webhooks.service';

type Schemas = components['schemas'];
type EventType = Schemas['WebhookEventType'];

function toDto(w: Webhook): Schemas['Webhook'] {
  return {
    id: w.id,
    createdAt: w.createdAt.toISOString(),
    updatedAt: w.updatedAt.toISOString(),
    teamId: w.teamId,
    active: w.active,
    name: w.name,
    ...(w.description !== undefined ? { description: w.description } : {}),
    url: w.url,
    rateLimitPerSecond: w.rateLimitPerSecond,
    maxTotalRetryDelayMinutes: w.maxTotalRetryDelayMinutes,
    eventTypes: w.eventTypes as EventType[],
  };
}

function toResponseDto(a: AttemptRecord): Schemas['WebhookEndpointResponse'] {
  return {
    requestedAt: a.requestedAt.toISOString(),
    responseTimeMillis: a.responseTimeMillis,
    statusCode: a.statusCode,
    ...(a.responseBody !== undefined ? { responseBody: a.responseBody } : {}),
    ...(a.errorCode !== undefined ? { errorCode: a.errorCode } : {}),
    ...(a.errorMessage !== undefined ? { errorMessage: a.errorMessage } : {}),
    ...(a.responseRetryAt !== undefined ? { responseRetryAt: a.responseRetryAt.toISOString() } : {}),
    ...(a.responseHeaders !== undefined ? { responseHeaders: a.responseHeaders } : {}),
  };
}

function toEventDto(e: WebhookEventView): Schemas['WebhookEvent'] {
  return {
    id: e.id,
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
    teamId: e.teamId,
    payload: e.payload as Schemas['WebhookEventPayload'],
    nextAttemptEarliestAt: e.nextAttemptEarliestAt?.toISOString() ?? null,
    successful: e.successful ?? null,
    responses: e.responses.map(toResponseDto),
  };
}

function toKeyDto(k: PublicKeyView): Schemas['WebhookPublicKey'] {
  return {
    id: k.id,
    createdAt: k.createdAt.toISOString(),
    updatedAt: k.updatedAt.toISOString(),
    algorithm: k.algorithm,
    publicKey: k.publicKey,
    expiresAt: k.expiresAt?.toISOString() ?? null,
    ...(k.activatesAt ? { activatesAt: k.activatesAt.toISOString() } : {}),
  };
}

const date = (v: string | undefined) => (v === undefined ? undefined : new Date(v));

export function webhooksHandlers(webhooks: WebhooksService, signingKeys: SigningKeys, onQueued: () => void = () => undefined) {
  return {
    async createWebhook({ principal, query, body }) {
      const w = await webhooks.create(principal.userId, query.selectTeamId, {
        name: body.name,
        description: body.description,
        url: body.url,
        rateLimitPerSecond: body.rateLimitPerSecond,
        maxTotalRetryDelayMinutes: body.maxTotalRetryDelayMinutes,
        eventTypes: body.eventTypes,
        active: body.active,
      });
      return { status: 201, body: toDto(w) };
    },
    async getWebhooks({ principal, query }) {
      const page = await webhooks.list(principal.userId, query.teamId, pageRequest(query));
      return { status: 200, body: { ...page, items: page.items.map(toDto) } };
    },
    async getWebhookById({ principal, path }) {
      return { status: 200, body: toDto(await webhooks.get(principal.userId, path.id)) };
    },
    async patchWebhook({ principal, path, body }) {
      const w = await webhooks.update(principal.userId, path.id, {
        name: body.name,
        description: body.description,
        url: body.url,
        rateLimitPerSecond: body.rateLimitPerSecond,
        maxTotalRetryDelayMinutes: body.maxTotalRetryDelayMinutes,
        eventTypes: body.eventTypes,
      });
      return { status: 200, body: toDto(w) };
    },
    async deleteWebhookById({ principal, path }) {
      await webhooks.delete(principal.userId, path.id);
      return { status: 204 };
    },
    async activateWebhookById({ principal, path }) {
      return { status: 200, body: toDto(await webhooks.activate(principal.userId, path.id)) };
    },
    async deactivateWebhookById({ principal, path }) {
      return { status: 200, body: toDto(await webhooks.deactivate(principal.userId, path.id)) };
    },
    async testVideoWebhookById({ principal, path, query }) {
      const event = await webhooks.sendTestEvent(principal.userId, path.id, { videoId: query.videoId, eventType: query.eventType });
      onQueued();
      return { status: 200, body: toEventDto(event) };
    },
    async getWebhookEvents({ principal, query }) {
      const page = await webhooks.listEvents(
        principal.userId,
        {
          teamId: query.teamId,
          successfulMode: query.successfulMode,
          testMode: query.testMode,
          occurredAtFrom: date(query.occurredAtFrom),
          occurredAtUntil: date(query.occurredAtUntil),
        },
        pageRequest(query),
      );
      return { status: 200, body: { ...page, items: page.items.map(toEventDto) } };
    },
    async getWebhookEventById({ principal, path }) {
      return { status: 200, body: toEventDto(await webhooks.getEvent(principal.userId, path.id)) };
    },
    async replayWebhookEventById({ principal, path }) {
      const event = await webhooks.replayEvent(principal.userId, path.id);
      onQueued();
      return { status: 202, body: toEventDto(event) };
    },
    async replayFailedWebhookEvents({ principal, body }) {
      const queued = await webhooks.replayFailed(principal.userId, {
        teamId: body.teamId,
        testMode: body.testMode,
        occurredAtFrom: date(body.occurredAtFrom),
        occurredAtUntil: date(body.occurredAtUntil),
      });
      if (queued) onQueued();
      return { status: 202, body: { queued } };
    },
    async getWebhookPublicKeys() {
      return { status: 200, body: (await signingKeys.publicKeys()).map(toKeyDto) };
    },
    async getWebhookPublicKeyById({ path }) {
      return { status: 200, body: toKeyDto(await signingKeys.publicKey(path.id)) };
    },
    async getWebhookPublicKeysJwks() {
      return { status: 200, body: await signingKeys.jwks() };
    },
  } satisfies HandlerMap<
    | 'createWebhook'
    | 'getWebhooks'
    | 'getWebhookById'
    | 'patchWebhook'
    | 'deleteWebhookById'
    | 'activateWebhookById'
    | 'deactivateWebhookById'
    | 'testVideoWebhookById'
    | 'getWebhookEvents'
    | 'getWebhookEventById'
    | 'replayWebhookEventById'
    | 'replayFailedWebhookEvents'
    | 'getWebhookPublicKeys'
    | 'getWebhookPublicKeyById'
    | 'getWebhookPublicKeysJwks'
  >;
}
