import type { components } from '../../../generated/api';
import type { HandlerMap } from '../../http/operations';
import { isoTime } from '../../shared/iso-time';
import { pageRequest } from '../../shared/paging';
import type { ProjectsService } from './projects.service';
import type { Project } from './projects.store';

function toDto(p: Project): components['schemas']['Project'] {
  return {
    id: p.id,
    createdAt: isoTime(p.createdAt),
    updatedAt: isoTime(p.updatedAt),
    name: p.name,
    isSample: p.isSample,
    teamId: p.teamId,
  };
}

export function projectsHandlers(projects: ProjectsService) {
  return {
    async createProject({ principal, query, body }) {
      return { status: 201, body: toDto(await projects.create(principal.userId, query.selectTeamId, body.name)) };
    },
    async getProjects({ principal, query }) {
      const page = await projects.list(principal.userId, query.teamId, pageRequest(query));
      return { status: 200, body: { ...page, items: page.items.map(toDto) } };
    },
    async getDefaultProject({ principal, query }) {
      return { status: 200, body: toDto(await projects.defaultProject(principal.userId, query.selectTeamId)) };
    },
    async getProjectById({ principal, path }) {
      return { status: 200, body: toDto(await projects.get(principal.userId, path.id)) };
    },
    async patchProject({ principal, path, body }) {
      return { status: 200, body: toDto(await projects.rename(principal.userId, path.id, body.name)) };
    },
    async deleteProjectById({ principal, path }) {
      await projects.delete(principal.userId, path.id);
      return { status: 204 };
    },
  } satisfies HandlerMap<'createProject' | 'getProjects' | 'getDefaultProject' | 'getProjectById' | 'patchProject' | 'deleteProjectById'>;
}
