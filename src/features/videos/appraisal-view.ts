/**
 * How a job appraisal is shown on the wire: the contract's VideoProcessingJobAppraisal, in USD
 * for wallet teams and in credits for cloud-marketplace teams (discriminator `billingType`).
 */
import type { components } from '../../../generated/api';
import { microsToUsd, productCreditsView, productUsdView } from '../billing';
import type { PricedProduct, ProductUse } from '../billing';

type Schemas = components['schemas'];

/** The priced estimate of a job, in the team's billing type (stored with the appraisal and the video). */
export interface JobAppraisal {
  billingType: 'WALLET' | 'CLOUD_MARKETPLACE';
  estimation: { fileSize: number; totalComputeTimeSeconds: number };
  outputDurationMillis: number;
  products: PricedProduct[];
  discountPercentage: number;
  costMicros: number;
  normalCostMicros: number;
  discountMicros: number;
  costCredits: number;
  storage: { costMicros: number; costCredits: number };
  download: { costMicros: number; costCredits: number };
  /** Exactly what is charged on acceptance. */
  charge: ProductUse[];
  /** How each requested option is applied by this installation (classical equivalents of AI filters). */
  notes: Array<{ field: string; requested: string; appliedAs: string; note: string }>;
  /** What the plan applies: the options resolved and the output they make (`processing.appliedOptions`). */
  appliedOptions: AppliedOptions;
}

/** `processing.appliedOptions`: the options as the plan resolved them and the output it makes. */
export interface AppliedOptions {
  options: Record<string, unknown>;
  output: Record<string, unknown>;
}

export function toJobAppraisalDto(raw: Record<string, unknown>): Schemas['VideoProcessingJobAppraisal'] {
  const a = raw as unknown as JobAppraisal;
  const common = { estimation: a.estimation, outputDurationMillis: a.outputDurationMillis };
  if (a.billingType === 'CLOUD_MARKETPLACE') {
    return {
      billingType: 'CLOUD_MARKETPLACE',
      ...common,
      jobItems: a.products.map(productCreditsView),
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
      ...productUsdView(p),
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
