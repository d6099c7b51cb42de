import type { components } from '../../../generated/api';
import type { HandlerMap } from '../../http/operations';
import { pageRequest } from '../../shared/paging';
import type { ConfigurationsService, ShownConfiguration } from './configurations.service';

type Schemas = components['schemas'];

function toDto(c: ShownConfiguration): Schemas['VideoProcessingConfiguration'] {
  return {
    id: c.id,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
    teamId: c.teamId,
    name: c.name,
    options: c.options,
    builtin: c.builtin,
    ...(c.description !== undefined ? { description: c.description } : {}),
  };
}

export function configurationsHandlers(configurations: ConfigurationsService) {
  return {
    async getVideoProcessingConfigurations({ principal, query }) {
      const page = await configurations.list(principal.userId, query.teamId, query.builtInMode ?? 'INCLUDE', pageRequest(query));
      return { status: 200, body: { ...page, items: page.items.map(toDto) } };
    },
    async createVideoProcessingConfiguration({ principal, query, body, sentBody }) {
      const created = await configurations.create(principal.userId, query.selectTeamId, {
        name: body.name,
        description: body.description,
        // As sent, without the defaults request validation fills in (shown back unchanged, and
        // the options of every job started with this configuration).
        options: sentBody.options,
      });
      return { status: 201, body: toDto(created) };
    },
    async getVideoProcessingConfigurationById({ principal, path }) {
      return { status: 200, body: toDto(await configurations.get(principal.userId, path.confId)) };
    },
    async deleteVideoProcessingConfigurationById({ principal, path }) {
      await configurations.delete(principal.userId, path.confId);
      return { status: 204 };
    },
  } satisfies HandlerMap<'getVideoProcessingConfigurations' | 'createVideoProcessingConfiguration' | 'getVideoProcessingConfigurationById' | 'deleteVideoProcessingConfigurationById'>;
}
