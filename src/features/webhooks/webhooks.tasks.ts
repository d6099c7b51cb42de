/** The webhooks feature's periodic tasks (registered by the composition root). */
import type { PeriodicTaskDefinition } from '../../jobs/periodic-task';
import type { WebhookListenersService } from './listeners.service';
import type { SigningKeys } from './signing-keys';
import type { WebhooksService } from './webhooks.service';

export function webhooksPeriodicTasks(s: { webhooks: WebhooksService; signingKeys: SigningKeys; webhookListeners: WebhookListenersService }): PeriodicTaskDefinition[] {
  return [
    {
      // Publishes the next webhook signing key ahead of the end of the current key's period.
      name: 'webhook-key-rotation',
      intervalMs: 60_000,
      async run(log) {
        const rotation = await s.signingKeys.rotateWhenDue();
        if (rotation) log.info({ keyId: rotation.key.id, activatesAt: rotation.activatesAt }, 'next webhook signing key published');
      },
    },
    {
      name: 'webhook-history-sweep',
      intervalMs: 15 * 60_000,
      async run(log) {
        const deleted = await s.webhooks.sweepHistory();
        await s.signingKeys.sweepExpired();
        if (deleted) log.info({ deleted }, 'deleted webhook event records past retention');
      },
    },
    {
      // Webhook listeners not polled for 5 minutes (already answered 404), with their deliveries.
      name: 'webhook-listener-expiry',
      intervalMs: 60_000,
      async run(log) {
        const deleted = await s.webhookListeners.sweepExpired();
        if (deleted) log.info({ deleted }, 'deleted expired webhook listeners');
      },
    },
  ];
}
