/**
 * How a job appraisal is shown on the wire: the contract's VideoProcessingJobAppraisal, in USD
 * for wallet teams and in credits for cloud-marketplace teams (discriminator `billingType`).
 */
import type { components } from '../../../generated/api';
import { microsToUsd, unitPriceToUsd } from '../billing/money';
import type { JobAppraisal } from './processing.service';

type Schemas = components['schemas'];

export function toJobAppraisalDto(raw: Record<string, unknown>): Schemas['VideoProcessingJobAppraisal'] {
  const a = raw as unknown as JobAppraisal;
  const common = { estimation: a.estimation, outputDurationMillis: a.outputDurationMillis };
  if (a.billingType === 'CLOUD_MARKETPLACE') {
    return {
      billingType: 'CLOUD_MARKETPLACE',
      ...common,
      jobItems: a.products.map((p) => ({
        productName: p.productName,
        category: p.category,
        amount: p.amount,
        amountUnit: p.amountUnit,
        unitPriceCredits: p.unitPriceCredits,
        costCredits: p.costCredits,
      })),
      cost: {
        totalProcessingCostCredits: a.costCredits,
        estimatedStorageCostCredits: a.storage.costCredits,
        estimatedDownloadCostCredits: a.download.costCredits,
      },
    };
  }
  return {
    billingType: 'WALLET',
    ...common,
    jobItems: a.products.map((p) => ({
      productName: p.productName,
      category: p.category,
      amount: p.amount,
      amountUnit: p.amountUnit,
      discountPercentage: p.discountPercentage,
      unitPriceUsd: unitPriceToUsd(p.unitPriceMicros),
      costUsd: microsToUsd(p.costMicros),
      discountUsd: microsToUsd(p.normalCostMicros - p.costMicros),
      normalCostUsd: microsToUsd(p.normalCostMicros),
    })),
    cost: {
      discountPercentage: a.discountPercentage,
      totalProcessingCostUsd: microsToUsd(a.costMicros),
      totalProcessingDiscountUsd: microsToUsd(a.discountMicros),
      totalNormalProcessingCostUsd: microsToUsd(a.normalCostMicros),
      estimatedStorageCostUsd: microsToUsd(a.storage.costMicros),
      estimatedDownloadCostUsd: microsToUsd(a.download.costMicros),
    },
  };
}
