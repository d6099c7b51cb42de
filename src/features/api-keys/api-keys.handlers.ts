import type { HandlerMap } from '../../http/operations';
import { pageRequest } from '../../shared/paging';
import { maskSecret } from '../../security/api-key-token';
import type { components } from '../../../generated/api';
import type { ApiKeysService, ApiKeyView } from './api-keys.service';

type ApiKeyDto = components['schemas']['ApiKey'];

function toDto(k: ApiKeyView, secret?: string): ApiKeyDto {
  return {
    id: k.id,
    createdAt: k.createdAt.toISOString(),
    updatedAt: k.updatedAt.toISOString(),
    userId: k.userId,
    active: k.active,
    name: k.name,
    ...(k.description !== undefined ? { description: k.description } : {}),
    apiKeyHidden: maskSecret(k.lastChars, k.keyLength),
    ...(secret ? { apiKey: secret } : {}),
    deletionEligibleAt: k.deletionEligibleAt,
  };
}

export function apiKeysHandlers(apiKeys: ApiKeysService) {
  return {
    async createApiKey({ principal, body }) {
      const { key, secret } = await apiKeys.create(principal.userId, body);
      return { status: 201, body: toDto(key, secret) };
    },
    async getApiKeys({ principal, query }) {
      const page = await apiKeys.list(principal.userId, pageRequest(query));
      return { status: 200, body: { ...page, items: page.items.map((k) => toDto(k)) } };
    },
    async getApiKeyById({ principal, path }) {
      return { status: 200, body: toDto(await apiKeys.get(principal.userId, path.id)) };
    },
    async patchApiKey({ principal, path, body }) {
      return { status: 200, body: toDto(await apiKeys.patch(principal.userId, path.id, body)) };
    },
    async deleteApiKeyById({ principal, path }) {
      await apiKeys.delete(principal.userId, path.id);
      return { status: 204 };
    },
    async activateApiKeyById({ principal, path }) {
      return { status: 200, body: toDto(await apiKeys.activate(principal.userId, path.id)) };
    },
    async deactivateApiKeyById({ principal, path }) {
      return { status: 200, body: toDto(await apiKeys.deactivate(principal.userId, path.id)) };
    },
  } satisfies HandlerMap<'createApiKey' | 'getApiKeys' | 'getApiKeyById' | 'patchApiKey' | 'deleteApiKeyById' | 'activateApiKeyById' | 'deactivateApiKeyById'>;
}
