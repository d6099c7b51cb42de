/**
 * The price of storage, in GB-months: 1 GB (10^9 bytes) stored for one whole UTC calendar month
 * (whatever its length) is one GB-month, priced at the price list's `storage` entry. Costs are
 * rounded up: USD to whole mills, credits to whole credits. Storage billing prices the running
 * total of a team's month with it (so rounding happens once per month, not per batch), and an
 * appraisal's `estimatedStorageCost*` is the price of its output stored for one month.
 */
import { MICROS_PER_MILL, usdToMicros } from './money';
import type { PriceList } from './price-list';

export const BYTES_PER_GB = 1e9;

export interface StoragePrice {
  gbMonths: number;
  unitPriceMicros: number;
  unitPriceCredits: number;
  costMicros: number;
  costCredits: number;
}

/** First instant of the UTC month after the one of `d`. */
export function nextMonthStart(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
}

/** GB-months of `bytes` stored from `from` to `to`, both within the UTC month starting at `monthStart`. */
export function gbMonths(bytes: number, from: Date, to: Date, monthStart: Date): number {
  const monthMs = nextMonthStart(monthStart).getTime() - monthStart.getTime();
  return ((bytes / BYTES_PER_GB) * (to.getTime() - from.getTime())) / monthMs;
}

/** The cost of `gbMonthsTotal` GB-months, rounded up to whole mills and whole credits. */
export function priceStorage(list: PriceList, gbMonthsTotal: number): StoragePrice {
  const unitPriceMicros = usdToMicros(list.storage.usd);
  const unitPriceCredits = list.storage.credits;
  // The small tolerance keeps float noise (24.000000000001 mills) from adding a mill.
  const mills = Math.ceil((gbMonthsTotal * unitPriceMicros) / MICROS_PER_MILL - 1e-9);
  return {
    gbMonths: gbMonthsTotal,
    unitPriceMicros,
    unitPriceCredits,
    costMicros: Math.max(0, mills) * MICROS_PER_MILL,
    costCredits: Math.max(0, Math.ceil(gbMonthsTotal * unitPriceCredits - 1e-9)),
  };
}
