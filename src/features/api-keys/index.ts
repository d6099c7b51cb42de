/** The api-keys feature's public face: what other features and the composition root may use. */
export { apiKeysHandlers } from './api-keys.handlers';
export { ApiKeysService } from './api-keys.service';
export { apiKeysPeriodicTasks } from './api-keys.tasks';
