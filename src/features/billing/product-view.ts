/**
 * A priced product on the wire, the one mapping for transactions and job appraisals: in USD for
 * wallet teams (unit price as the price list states it, cost in whole mills) and in credits for
 * cloud-marketplace teams.
 */
import type { components } from '../../../generated/api';
import { microsToUsd, unitPriceToUsd } from './money';
import type { PricedProduct } from './pricing';

type S = components['schemas'];

export function productUsdView(p: PricedProduct): S['ProductUsd'] {
  return {
    productName: p.productName,
    category: p.category,
    amount: p.amount,
    amountUnit: p.amountUnit,
    discountPercentage: p.discountPercentage,
    unitPriceUsd: unitPriceToUsd(p.unitPriceMicros),
    costUsd: microsToUsd(p.costMicros),
  };
}

export function productCreditsView(p: PricedProduct): S['ProductCredits'] {
  return {
    productName: p.productName,
    category: p.category,
    amount: p.amount,
    amountUnit: p.amountUnit,
    unitPriceCredits: p.unitPriceCredits,
    costCredits: p.costCredits,
  };
}
