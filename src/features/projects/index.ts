/** Projects: CRUD and each team's Default Project. What other features and the composition root may use. */
export { projectsHandlers } from './projects.handlers';
export { DEFAULT_PROJECT_NAME, ProjectsService } from './projects.service';
export type { ProjectContents } from './projects.service';
