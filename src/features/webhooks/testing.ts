/**
 * Test support of the webhooks feature: what test/, bench/ and scripts/ may use beyond the face
 * (index.ts), and nothing else may import (docs/architecture.md, "Test support entries").
 */
import { webhooksStore } from './webhooks.store';

export { MAX_LISTENERS_PER_TEAM } from './listeners.service';
export { sealingContext } from './signing-keys';
export { MAX_ACTIVE_WEBHOOKS } from './webhooks.service';

/** A webhook's row by id, whoever's it is (a test checks that one is gone). */
export const webhookRows: Pick<typeof webhooksStore, 'byId'> = webhooksStore;
