/**
 * Test support of the billing feature: what test/, bench/ and scripts/ may use beyond the face
 * (index.ts), and nothing else may import (docs/architecture.md, "Test support entries"). The
 * stores' reads that tests assert on and benchmarks time, by name, and the pure money and pricing
 * functions unit tests check.
 */
import { creditsStore } from './credits.store';
import { ledgerStore } from './ledger.store';
import { periodsStore } from './periods.store';
import { storageStore } from './storage.store';

export { roundToMills, unitPriceToUsd } from './money';
export { volumeDiscountPercentage } from './price-list';
export { priceJob, priceUtility } from './pricing';
export { gbMonths, nextMonthStart } from './storage-pricing';
export { summaryFromAggregates } from './ledger.store';
export { toPeriod } from './periods.store';

/** The wallet ledger's reads: a team's transactions and balance, a period's summary, items and page (aggregates and scan). */
export const ledgerReads: Pick<typeof ledgerStore, 'allForTeam' | 'balance' | 'summary' | 'items' | 'pageWithPeriod'> = ledgerStore;

/** A billing period by id, and ending one at a chosen time (a test's month boundary). */
export const periodRows: Pick<typeof periodsStore, 'byId' | 'end'> = periodsStore;

/** A team's marketplace usage records. */
export const creditReads: Pick<typeof creditsStore, 'allForTeam'> = creditsStore;

/** A team's storage meter, its usage samples and its storage charges. */
export const storageReads: Pick<typeof storageStore, 'meter' | 'usageOfTeam' | 'chargesOfTeam'> = storageStore;
