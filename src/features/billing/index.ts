/** The billing feature's public face: what other features and the composition root may use. */
export { billingHandlers } from './billing.handlers';
export { billingPeriodicTasks } from './billing.tasks';
export { BillingService } from './billing.service';
export { LedgerService } from './ledger.service';
export { microsToUsd, usdToMicros } from './money';
export { productCreditsView, productUsdView } from './product-view';
export { DEFAULT_PRICE_LIST, loadPriceListFile } from './price-list';
export type { PriceList } from './price-list';
export type { PricedJob, PricedProduct, ProductUse } from './pricing';
export { StorageBillingService } from './storage-billing.service';
export { StorageMeters } from './storage-meter';
export { priceStorage } from './storage-pricing';
