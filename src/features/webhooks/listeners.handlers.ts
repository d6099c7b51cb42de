import type { components } from '../../../generated/api';
import type { HandlerMap } from '../../http/operations';
import { pageRequest } from '../../shared/paging';
import { DEFAULT_LISTENER_WAIT_SECONDS, WebhookListener, WebhookListenersService } from './listeners.service';

type Schemas = components['schemas'];
type EventType = Schemas['WebhookEventType'];

function toDto(l: WebhookListener): Schemas['WebhookListener'] {
  return { id: l.id, createdAt: l.createdAt.toISOString(), teamId: l.teamId, eventTypes: l.eventTypes as EventType[], expiresAt: l.expiresAt.toISOString() };
}

export function webhookListenersHandlers(listeners: WebhookListenersService) {
  return {
    async createWebhookListener({ principal, query, body }) {
      return { status: 201, body: toDto(await listeners.create(principal.userId, query.selectTeamId, body.eventTypes)) };
    },
    async getWebhookListeners({ principal, query }) {
      const page = await listeners.list(principal.userId, query.teamId, pageRequest(query));
      return { status: 200, body: { ...page, items: page.items.map(toDto) } };
    },
    async getWebhookListenerById({ principal, path }) {
      return { status: 200, body: toDto(await listeners.get(principal.userId, path.id)) };
    },
    async deleteWebhookListenerById({ principal, path }) {
      await listeners.delete(principal.userId, path.id);
      return { status: 204 };
    },
    async pollWebhookListenerDeliveries({ principal, path, query }) {
      const poll = await listeners.poll(principal.userId, path.id, query.after ?? 0, query.waitSeconds ?? DEFAULT_LISTENER_WAIT_SECONDS);
      return {
        status: 200,
        body: {
          listenerId: poll.listenerId,
          expiresAt: poll.expiresAt.toISOString(),
          items: poll.items.map((d) => ({ sequence: d.sequence, eventId: d.eventId, eventType: d.eventType as EventType, headers: d.headers, body: d.body })),
        },
      };
    },
  } satisfies HandlerMap<'createWebhookListener' | 'getWebhookListeners' | 'getWebhookListenerById' | 'deleteWebhookListenerById' | 'pollWebhookListenerDeliveries'>;
}
