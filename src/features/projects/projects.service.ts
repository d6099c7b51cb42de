/** Projects: CRUD, the default-project rule, and no deleting a project that holds videos. */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/database';
import type { Clock } from '../../shared/clock';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { PageRequest } from '../../shared/paging';
import type { AccountsService } from '../accounts/accounts.service';
import { DEFAULT_PROJECT_NAME } from '../accounts/accounts.service';
import { videosStore } from '../videos/videos.store';
import { Project, projectsStore } from './projects.store';

export class ProjectsService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
  ) {}

  async create(userId: string, selectTeamId: string | undefined, name: string): Promise<Project> {
    const team = await this.accounts.selectTeam(userId, selectTeamId);
    const now = this.clock.now();
    const project: Project = { id: randomUUID(), teamId: team.id, name, isSample: false, createdAt: now, updatedAt: now };
    await projectsStore.insert(this.db, project);
    return project;
  }

  async list(userId: string, teamId: string | undefined, req: PageRequest) {
    return projectsStore.page(this.db, await this.accounts.listScope(userId, teamId), req);
  }

  async defaultProject(userId: string, selectTeamId?: string): Promise<Project> {
    const team = await this.accounts.selectTeam(userId, selectTeamId);
    const project = await projectsStore.oldestNamed(this.db, team.id, DEFAULT_PROJECT_NAME);
    if (!project) throw new NotFoundError(`Team ${team.id} has no project named "${DEFAULT_PROJECT_NAME}"`);
    return project;
  }

  async get(userId: string, id: string): Promise<Project> {
    const project = await projectsStore.byIdInScope(this.db, id, { memberUserId: userId });
    if (!project) throw new NotFoundError('Project not found');
    return project;
  }

  async rename(userId: string, id: string, name: string | undefined): Promise<Project> {
    const project = await this.get(userId, id);
    if (name === undefined || name === project.name) return project;
    const now = this.clock.now();
    await projectsStore.rename(this.db, id, name, now);
    return { ...project, name, updatedAt: now };
  }

  async delete(userId: string, id: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      const project = await projectsStore.byIdInScope(trx, id, { memberUserId: userId });
      if (!project) throw new NotFoundError('Project not found');
      if (await videosStore.existsInProject(trx, id)) {
        throw new ConflictError('PROJECT_WITH_VIDEOS_CANNOT_BE_DELETED', 'Delete or move the videos of this project first');
      }
      await projectsStore.delete(trx, id);
    });
  }
}
