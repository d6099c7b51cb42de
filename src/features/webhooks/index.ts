/** The webhooks feature's public face: what other features and the composition root may use. */
export { DeliveryWorker } from './delivery-worker';
export type { DeliveryOptions } from './delivery-worker';
export { deliveryNotices, jobNotices, recordEvent } from './events';
export { SigningKeys } from './signing-keys';
export { webhooksPeriodicTasks } from './webhooks.tasks';
export { webhooksHandlers } from './webhooks.handlers';
export { WebhooksService } from './webhooks.service';
export { webhookListenersHandlers } from './listeners.handlers';
export { WebhookListenersService } from './listeners.service';
