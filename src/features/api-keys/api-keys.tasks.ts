/** The api-keys feature's periodic tasks (registered by the composition root). */
import type { PeriodicTaskDefinition } from '../../jobs/periodic-task';
import type { ApiKeysService } from './api-keys.service';

export function apiKeysPeriodicTasks(apiKeys: ApiKeysService): PeriodicTaskDefinition[] {
  return [
    {
      name: 'api-key-idle-sweep',
      intervalMs: 60 * 60_000,
      async run(log) {
        const deleted = await apiKeys.sweepIdleKeys();
        if (deleted) log.info({ deleted }, 'deleted API keys unused for 90 days');
      },
    },
  ];
}
