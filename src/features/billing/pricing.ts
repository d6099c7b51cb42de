/**
 * Prices products against the price list. One function per kind of charge:
 *
 * - `priceJob`, a processing job (what its appraisal shows and what accepting it books): each
 *   product's exact cost (amount x unit price, less the job's volume discount), summed; the sum
 *   is rounded once, up to the mill, so a job that consumes anything costs at least 0.001 USD.
 *   That total is then shared out over the products in whole mills (each gets its exact cost
 *   rounded down, and the mills left go to the largest remainders), so the items add up to the
 *   total exactly. Credits the same way, in whole credits, without discount.
 * - `priceUtility`, a metered storage or download accrual: its cost to the nearest mill (a few
 *   bytes cost nothing, as they would in the next batch), credits rounded up.
 *
 * Unit prices are the price list's own (up to 6 decimals), never rounded for display.
 */
import { BadRequestError } from '../../shared/errors';
import { MICROS_PER_MILL, roundToMills, usdToMicros } from './money';
import { PriceList, ProductPrice, volumeDiscountPercentage } from './price-list';

export type Category = 'ENCODER' | 'FILTER' | 'PROCESSING' | 'STORAGE' | 'DOWNLOAD_S3' | 'DOWNLOAD_HTTPS' | 'OTHER';
export type AmountUnit = 'GB' | 'GP';
export const CATEGORIES: readonly Category[] = ['ENCODER', 'FILTER', 'PROCESSING', 'STORAGE', 'DOWNLOAD_S3', 'DOWNLOAD_HTTPS', 'OTHER'];

/** A product consumed: `amount` in GP (encoders, filters, processing) or GB (storage GB-months, downloads). */
export interface ProductUse {
  productName: string;
  category: Category;
  amount: number;
}

export interface PricedProduct {
  productName: string;
  category: Category;
  amount: number;
  amountUnit: AmountUnit;
  discountPercentage: number;
  unitPriceMicros: number;
  /** Whole mills; the items of a job add up to its `costMicros`. */
  costMicros: number;
  normalCostMicros: number;
  unitPriceCredits: number;
  costCredits: number;
}

export interface PricedJob {
  gigapixels: number;
  discountPercentage: number;
  products: PricedProduct[];
  costMicros: number;
  normalCostMicros: number;
  discountMicros: number;
  costCredits: number;
}

const GP_CATEGORIES = new Set<Category>(['ENCODER', 'FILTER', 'PROCESSING']);
const UTILITY_CATEGORIES = new Set<Category>(['STORAGE', 'DOWNLOAD_S3', 'DOWNLOAD_HTTPS']);

/** Exact costs are integers of 1e-12 USD (pico-USD), so sums and rounding are exact. */
const PICO_PER_MICRO = 1_000_000;
const PICO_PER_MILL = 1_000_000_000;
/** Exact credits are integers of 1e-6 credits. */
const PARTS_PER_CREDIT = 1_000_000;

function priceOf(list: PriceList, p: ProductUse): ProductPrice {
  const found =
    p.category === 'ENCODER'
      ? list.encoders[p.productName]
      : p.category === 'FILTER'
        ? list.filters[p.productName]
        : p.category === 'PROCESSING'
          ? list.processing
          : p.category === 'STORAGE'
            ? list.storage
            : p.category === 'DOWNLOAD_S3' || p.category === 'DOWNLOAD_HTTPS'
              ? list.download[p.category]
              : undefined;
  if (!found) throw new BadRequestError('INVALID_INPUT', `No price for ${p.category} product "${p.productName}"`);
  return found;
}

function checkAmount(u: ProductUse): void {
  if (!Number.isFinite(u.amount) || u.amount < 0) throw new BadRequestError('INVALID_INPUT', `Invalid amount for "${u.productName}"`);
}

function exactInt(value: number, what: string): number {
  const n = Math.round(value);
  if (!Number.isSafeInteger(n)) throw new BadRequestError('INVALID_INPUT', `The amount of "${what}" is too large to price`);
  return n;
}

/** The sum of `parts` (integers of 1/`unit`) rounded up to whole units: at least 1 when positive. */
function roundUpSum(parts: number[], unit: number): number {
  const sum = parts.reduce((s, p) => s + p, 0);
  if (!Number.isSafeInteger(sum)) throw new BadRequestError('INVALID_INPUT', 'The job is too large to price');
  return Math.ceil(sum / unit);
}

/**
 * Shares a whole-unit `total` (at least the parts' whole units, at most one more per part) over
 * `parts`: each its whole units rounded down, then one more to the parts with the largest
 * remainders (earlier parts first on ties) until the total is met.
 */
function shareOut(total: number, parts: number[], unit: number): number[] {
  const shares = parts.map((p) => Math.floor(p / unit));
  let left = total - shares.reduce((s, v) => s + v, 0);
  if (left < 0 || left > parts.length) throw new Error(`cannot share ${total} over ${parts.length} parts`);
  const order = parts.map((p, i) => ({ i, remainder: p - shares[i]! * unit })).sort((a, b) => b.remainder - a.remainder || a.i - b.i);
  for (const { i } of order) {
    if (left === 0) break;
    shares[i]!++;
    left--;
  }
  return shares;
}

/** A processing job: one rounding of the whole job, up to the mill (see the top of this file). */
export function priceJob(list: PriceList, uses: ProductUse[]): PricedJob {
  uses.forEach(checkAmount);
  const gigapixels = Math.max(0, ...uses.filter((u) => GP_CATEGORIES.has(u.category)).map((u) => u.amount));
  const discountPercentage = volumeDiscountPercentage(list, gigapixels);
  const lines = uses.map((u) => {
    const price = priceOf(list, u);
    const unitPriceMicros = usdToMicros(price.usd);
    const discount = GP_CATEGORIES.has(u.category) ? discountPercentage : 0;
    const normalPico = exactInt(u.amount * unitPriceMicros * PICO_PER_MICRO, u.productName);
    const costPico = exactInt((normalPico * (10_000 - Math.round(discount * 100))) / 10_000, u.productName);
    const credits = exactInt(u.amount * price.credits * PARTS_PER_CREDIT, u.productName);
    return { u, price, unitPriceMicros, discount, normalPico, costPico, credits };
  });
  const costMills = roundUpSum(
    lines.map((l) => l.costPico),
    PICO_PER_MILL,
  );
  const normalMills = roundUpSum(
    lines.map((l) => l.normalPico),
    PICO_PER_MILL,
  );
  const costShares = shareOut(
    costMills,
    lines.map((l) => l.costPico),
    PICO_PER_MILL,
  );
  // The job's discount (normal total less cost total) shared out the same way, so that every
  // item's normal cost is its cost plus its discount and the items add up to the totals.
  const discountShares = shareOut(
    normalMills - costMills,
    lines.map((l) => l.normalPico - l.costPico),
    PICO_PER_MILL,
  );
  const credits = lines.map((l) => l.credits);
  const costCredits = roundUpSum(credits, PARTS_PER_CREDIT);
  const creditShares = shareOut(costCredits, credits, PARTS_PER_CREDIT);
  const products = lines.map((l, i): PricedProduct => ({
    productName: l.u.productName,
    category: l.u.category,
    amount: l.u.amount,
    amountUnit: GP_CATEGORIES.has(l.u.category) ? 'GP' : 'GB',
    discountPercentage: l.discount,
    unitPriceMicros: l.unitPriceMicros,
    costMicros: costShares[i]! * MICROS_PER_MILL,
    normalCostMicros: (costShares[i]! + discountShares[i]!) * MICROS_PER_MILL,
    unitPriceCredits: l.price.credits,
    costCredits: creditShares[i]!,
  }));
  return {
    gigapixels,
    discountPercentage,
    products,
    costMicros: costMills * MICROS_PER_MILL,
    normalCostMicros: normalMills * MICROS_PER_MILL,
    discountMicros: (normalMills - costMills) * MICROS_PER_MILL,
    costCredits,
  };
}

/** A metered storage or download use: nearest mill, credits rounded up, no discount. */
export function priceUtility(list: PriceList, use: ProductUse): PricedProduct {
  if (!UTILITY_CATEGORIES.has(use.category)) throw new BadRequestError('INVALID_INPUT', 'Utilities are storage or download products');
  checkAmount(use);
  const price = priceOf(list, use);
  const unitPriceMicros = usdToMicros(price.usd);
  const costMicros = roundToMills(use.amount * unitPriceMicros);
  return {
    productName: use.productName,
    category: use.category,
    amount: use.amount,
    amountUnit: 'GB',
    discountPercentage: 0,
    unitPriceMicros,
    costMicros,
    normalCostMicros: costMicros,
    unitPriceCredits: price.credits,
    costCredits: Math.ceil(use.amount * price.credits - 1e-9),
  };
}
