/** The billing feature's periodic tasks (registered by the composition root). */
import type { PeriodicTaskDefinition } from '../../jobs/periodic-task';
import type { LedgerService } from './ledger.service';
import type { StorageBillingService } from './storage-billing.service';

export function billingPeriodicTasks(s: { ledger: LedgerService; storageBilling: StorageBillingService }): PeriodicTaskDefinition[] {
  return [
    {
      // Closes last month's billing periods at the month boundary and opens the new ones.
      name: 'billing-periods',
      intervalMs: 5 * 60_000,
      async run(log) {
        const { closed, opened } = await s.ledger.rollPeriods();
        if (closed || opened) log.info({ closed, opened }, 'billing periods rolled');
      },
    },
    {
      // Stored bytes are sampled and charged (STORAGE) in daily batches per team.
      name: 'storage-billing',
      intervalMs: 60 * 60_000,
      async run(log) {
        const { charges } = await s.storageBilling.run();
        if (charges) log.info({ charges }, 'storage usage billed');
      },
    },
  ];
}
