/**
 * Prices products against the price list. Wallet prices are micro-USD rounded to whole mills
 * per product, with the job's volume discount on processing products; credits prices are whole
 * credits per unit, rounded up per product, without discount.
 */
import { DomainError } from '../../shared/errors';
import { roundToMills, usdToMicros } from './money';
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

function priceOf(list: PriceList, p: ProductUse): ProductPrice {
  const found =
    p.category === 'ENCODER' ? list.encoders[p.productName]
    : p.category === 'FILTER' ? list.filters[p.productName]
    : p.category === 'PROCESSING' ? list.processing
    : p.category === 'STORAGE' ? list.storage
    : p.category === 'DOWNLOAD_S3' || p.category === 'DOWNLOAD_HTTPS' ? list.download[p.category]
    : undefined;
  if (!found) throw new DomainError(400, 'INVALID_INPUT', `No price for ${p.category} product "${p.productName}"`);
  return found;
}

export function priceJob(list: PriceList, uses: ProductUse[]): PricedJob {
  for (const u of uses) {
    if (!Number.isFinite(u.amount) || u.amount < 0) throw new DomainError(400, 'INVALID_INPUT', `Invalid amount for "${u.productName}"`);
  }
  const gigapixels = Math.max(0, ...uses.filter((u) => GP_CATEGORIES.has(u.category)).map((u) => u.amount));
  const discountPercentage = volumeDiscountPercentage(list, gigapixels);
  const products = uses.map((u): PricedProduct => {
    const price = priceOf(list, u);
    const unitPriceMicros = usdToMicros(price.usd);
    const discount = GP_CATEGORIES.has(u.category) ? discountPercentage : 0;
    const normalCostMicros = roundToMills(u.amount * unitPriceMicros);
    const costMicros = roundToMills((u.amount * unitPriceMicros * (100 - discount)) / 100);
    return {
      productName: u.productName,
      category: u.category,
      amount: u.amount,
      amountUnit: GP_CATEGORIES.has(u.category) ? 'GP' : 'GB',
      discountPercentage: discount,
      unitPriceMicros,
      costMicros,
      normalCostMicros,
      unitPriceCredits: price.credits,
      costCredits: Math.ceil(u.amount * price.credits - 1e-9),
    };
  });
  const costMicros = products.reduce((s, p) => s + p.costMicros, 0);
  const normalCostMicros = products.reduce((s, p) => s + p.normalCostMicros, 0);
  return {
    gigapixels,
    discountPercentage,
    products,
    costMicros,
    normalCostMicros,
    discountMicros: normalCostMicros - costMicros,
    costCredits: products.reduce((s, p) => s + p.costCredits, 0),
  };
}
