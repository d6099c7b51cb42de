/** Projects: CRUD, the default-project rule, and no deleting a project that holds videos. */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/database';
import type { Clock } from '../../shared/clock';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { PageRequest } from '../../shared/paging';
import type { AccountsService } from '../accounts';
import { Project, projectsStore } from './projects.store';
import { TransactionalService } from '../../db/transactional';

export const DEFAULT_PROJECT_NAME = 'Default Project';

/** What projects need to know of the videos catalogue. */
export interface ProjectContents {
  hasVideosInProject(db: Db, projectId: string): Promise<boolean>;
}

export interface ProjectsServiceDeps {
  db: Db;
  clock: Clock;
  accounts: AccountsService;
  contents: ProjectContents;
}

export class ProjectsService extends TransactionalService {
  private readonly clock: Clock;
  private readonly accounts: AccountsService;
  private readonly contents: ProjectContents;
  constructor(deps: ProjectsServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.accounts = deps.accounts;
    this.contents = deps.contents;
  }

  /** Every new team gets its Default Project (in the transaction that creates the team: bind with `within(trx)`). */
  async createDefaultProject(teamId: string): Promise<void> {
    const now = this.clock.now();
    await projectsStore.insert(this.db, { id: randomUUID(), teamId, name: DEFAULT_PROJECT_NAME, isSample: false, createdAt: now, updatedAt: now });
  }

  /** Where a new video of a team goes: the named project of that team, else its Default Project. */
  async placeVideo(teamId: string, projectId: string | undefined): Promise<Project> {
    if (projectId) {
      const project = await projectsStore.byIdInScope(this.db, projectId, { teamId });
      if (!project) throw new NotFoundError(`Project ${projectId} not found in team ${teamId}`);
      return project;
    }
    const project = await projectsStore.oldestNamed(this.db, teamId, DEFAULT_PROJECT_NAME);
    if (!project) throw new NotFoundError(`Team ${teamId} has no project named "${DEFAULT_PROJECT_NAME}"; pass projectId`);
    return project;
  }

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
    await this.transactional(async (trx) => {
      const project = await projectsStore.byIdInScope(trx, id, { memberUserId: userId });
      if (!project) throw new NotFoundError('Project not found');
      if (await this.contents.hasVideosInProject(trx, id)) {
        throw new ConflictError('PROJECT_WITH_VIDEOS_CANNOT_BE_DELETED', 'Delete or move the videos of this project first');
      }
      await projectsStore.delete(trx, id);
    });
  }
}
