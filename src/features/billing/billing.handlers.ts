import type { components } from '../../../generated/api';
import type { HandlerMap } from '../../http/operations';
import { pageRequest } from '../../shared/paging';
import type { AgreementView } from './agreements.store';
import type { CategoryTotal } from './billing-records';
import type { CreditsUsage } from './credits.store';
import type { LedgerTransaction } from './ledger.store';
import type { BillingService, PeriodView } from './billing.service';
import { microsToUsd } from './money';
import { productCreditsView, productUsdView } from './product-view';
import { CATEGORIES } from './pricing';

type S = components['schemas'];

const isoOrNull = (d: Date | undefined) => (d ? d.toISOString() : null);

function periodDto(p: PeriodView): S['BillingPeriod'] {
  return {
    id: p.id,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
    teamId: p.teamId,
    endedAt: isoOrNull(p.endedAt),
    storageCostUsd: microsToUsd(p.storageCostMicros),
    downloadCostUsd: microsToUsd(p.downloadCostMicros),
  };
}

function transactionDto(t: LedgerTransaction): S['Transaction'] {
  const base = {
    createdAt: t.createdAt.toISOString(),
    amountUsd: microsToUsd(t.amountMicros),
    balanceUsd: microsToUsd(t.balanceMicros),
    ...(t.videoId ? { videoId: t.videoId } : {}),
    ...(t.adjustmentType ? { accountAdjustment: { type: t.adjustmentType, category: t.category, ...(t.reason ? { reason: t.reason } : {}) } } : {}),
  };
  if (t.type === 'UTILITIES') {
    return { ...base, type: 'UTILITIES', ...(t.products?.[0] ? { product: productUsdView(t.products[0]) } : {}) };
  }
  const hasDetails = t.products || t.sourceVideoId || t.discountPercentage !== undefined;
  return {
    ...base,
    type: 'PROCESSING',
    ...(hasDetails
      ? {
          details: {
            ...(t.sourceVideoId ? { sourceVideoId: t.sourceVideoId } : {}),
            ...(t.products ? { products: t.products.map(productUsdView) } : {}),
            ...(t.discountPercentage !== undefined ? { discountPercentage: t.discountPercentage } : {}),
          },
        }
      : {}),
  };
}

function totalsDto(totals: CategoryTotal[]): S['TransactionTotals'] {
  const sorted = [...totals].sort((a, b) => CATEGORIES.indexOf(a.category) - CATEGORIES.indexOf(b.category));
  const one = (credit: number, debit: number) => ({
    totalCreditUsd: microsToUsd(credit),
    totalDebitUsd: microsToUsd(debit),
    netTotalUsd: microsToUsd(credit - debit),
  });
  return {
    totalsForAllCategories: one(
      totals.reduce((s, t) => s + t.credit, 0),
      totals.reduce((s, t) => s + t.debit, 0),
    ),
    totalsByCategory: sorted.map((t) => ({ category: t.category, ...one(t.credit, t.debit) })),
  };
}

function usageDto(u: CreditsUsage): S['CreditsUsage'] {
  const base = { createdAt: u.createdAt.toISOString(), credits: u.credits, ...(u.videoId ? { videoId: u.videoId } : {}) };
  if (u.type === 'UTILITIES') return { ...base, type: 'UTILITIES', ...(u.products?.[0] ? { product: productCreditsView(u.products[0]) } : {}) };
  return {
    ...base,
    type: 'PROCESSING',
    details: { ...(u.sourceVideoId ? { sourceVideoId: u.sourceVideoId } : {}), ...(u.products ? { products: u.products.map(productCreditsView) } : {}) },
  };
}

function subscriptionDto(a: AgreementView): S['CloudMarketplaceSubscription'] {
  return {
    agreementId: a.agreementId,
    createdAt: a.createdAt.toISOString(),
    updatedAt: a.updatedAt.toISOString(),
    teamId: a.teamId,
    status: a.status,
    licenseId: a.licenseId,
    offerId: a.offerId,
    productId: a.productId,
    productName: a.productName,
    buyerAccountId: a.buyerAccountId,
    sellerAccountId: a.sellerAccountId,
    agreementIntent: a.agreementIntent ?? null,
    agreementStatus: a.agreementStatus ?? null,
    acceptanceTime: a.acceptanceTime.toISOString(),
    startTime: a.startTime.toISOString(),
    setupCompletedAt: a.setupCompletedAt.toISOString(),
    cancellationRequestedAt: isoOrNull(a.cancellationRequestedAt),
    licenseDeprovisionedAt: isoOrNull(a.licenseDeprovisionedAt),
    effectiveFromHour: a.effectiveFromHour.toISOString(),
    replacesAgreementId: a.replacesAgreementId ?? null,
    replacedByAgreementId: a.replacedByAgreementId ?? null,
    reassignedFromAgreementId: a.reassignedFromAgreementId ?? null,
    reassignedToAgreementId: a.reassignedToAgreementId ?? null,
    reassignedAt: isoOrNull(a.reassignedAt),
  };
}

type TxQuery = {
  pageNumber?: number;
  pageSize?: number;
  sortDirection?: 'ASC' | 'DESC';
  fromDateTime?: string;
  toDateTime?: string;
  processingTransactionsMode?: 'INCLUDE' | 'EXCLUDE' | 'ONLY';
  videoId?: string;
};

function listRequest(q: { pageNumber?: number; pageSize?: number; sortDirection?: 'ASC' | 'DESC' }) {
  return { pageNumber: q.pageNumber ?? 0, pageSize: q.pageSize ?? 10, sortDirection: q.sortDirection ?? ('ASC' as const) };
}

function transactionsPageDto(r: Awaited<ReturnType<BillingService['latestTransactions']>>): S['TransactionsPage'] {
  return {
    pageNumber: r.pageNumber,
    pageSize: r.pageSize,
    numberOfElements: r.numberOfElements,
    totalPages: r.totalPages,
    totalElements: r.totalElements,
    billingPeriod: periodDto(r.period),
    filterByFromDateTime: r.filter.from.toISOString(),
    filterByToDateTime: r.filter.to.toISOString(),
    filterProcessingTransactionsMode: r.filter.mode,
    ...(r.filter.videoId ? { filterByVideoId: r.filter.videoId } : {}),
    totals: totalsDto(r.totals),
    items: r.items.map(transactionDto),
  };
}

const txQuery = (q: TxQuery) => ({ fromDateTime: q.fromDateTime, toDateTime: q.toDateTime, mode: q.processingTransactionsMode, videoId: q.videoId });

export function billingHandlers(billing: BillingService) {
  return {
    async getWalletFinancialDetails({ principal, query }) {
      const d = await billing.financialDetails(principal.userId, query.selectTeamId);
      return {
        status: 200,
        body: {
          processingCreditsBalanceUsd: microsToUsd(d.processingBalanceMicros),
          processingLifetimeSpendUsd: microsToUsd(d.processingLifetimeSpendMicros),
          processingBaseVolumeDiscountGp: d.baseVolumeDiscountGp,
          processingBaseVolumeDiscountPercentage: d.baseVolumeDiscountPercentage,
          utilitiesBalanceUsd: microsToUsd(d.utilitiesBalanceMicros),
        },
      };
    },
    async getWalletBillingPeriods({ principal, query }) {
      const page = await billing.periods(principal.userId, { teamId: query.teamId, fromDate: query.fromDate, toDate: query.toDate, endedMode: query.endedMode }, pageRequest(query));
      return { status: 200, body: { ...page, items: page.items.map(periodDto) } };
    },
    async getWalletBillingPeriodById({ principal, path }) {
      return { status: 200, body: periodDto(await billing.period(principal.userId, path.id)) };
    },
    async getWalletTransactionsByBillingPeriodId({ principal, path, query }) {
      return { status: 200, body: transactionsPageDto(await billing.periodTransactions(principal.userId, path.id, txQuery(query), listRequest(query))) };
    },
    async getWalletTransactionsForLatestBillingPeriod({ principal, query }) {
      return {
        status: 200,
        body: transactionsPageDto(await billing.latestTransactions(principal.userId, query.selectTeamId, txQuery(query), listRequest(query))),
      };
    },
    async getCloudMarketplaceSubscriptions({ principal, query }) {
      const page = await billing.subscriptions(principal.userId, query.teamId, pageRequest(query));
      return { status: 200, body: { ...page, items: page.items.map(subscriptionDto) } };
    },
    async getCloudMarketplaceSubscriptionByAgreementId({ principal, path }) {
      return { status: 200, body: subscriptionDto(await billing.subscription(principal.userId, path.agreementId)) };
    },
    async getCurrentCloudMarketplaceSubscription({ principal, query }) {
      return { status: 200, body: subscriptionDto(await billing.currentSubscription(principal.userId, query.selectTeamId)) };
    },
    async getCloudMarketplaceCreditsUsage({ principal, query }) {
      const r = await billing.creditsUsage(
        principal.userId,
        query.selectTeamId,
        { fromDateTime: query.fromDateTime, toDateTime: query.toDateTime, mode: query.processingCreditsUsageMode, videoId: query.videoId },
        listRequest(query),
      );
      const sorted = [...r.totals].sort((a, b) => CATEGORIES.indexOf(a.category) - CATEGORIES.indexOf(b.category));
      return {
        status: 200,
        body: {
          pageNumber: r.pageNumber,
          pageSize: r.pageSize,
          numberOfElements: r.numberOfElements,
          totalPages: r.totalPages,
          totalElements: r.totalElements,
          teamId: r.teamId,
          filterByFromDateTime: r.filter.from.toISOString(),
          filterByToDateTime: r.filter.to.toISOString(),
          filterProcessingCreditsUsageMode: r.filter.mode,
          ...(r.filter.videoId ? { filterByVideoId: r.filter.videoId } : {}),
          totals: {
            totalsForAllCategories: { totalCredits: sorted.reduce((s, t) => s + t.credits, 0) },
            totalsByCategory: sorted.map((t) => ({ category: t.category, totalCredits: t.credits })),
          },
          items: r.items.map(usageDto),
        },
      };
    },
  } satisfies HandlerMap<
    | 'getWalletFinancialDetails'
    | 'getWalletBillingPeriods'
    | 'getWalletBillingPeriodById'
    | 'getWalletTransactionsByBillingPeriodId'
    | 'getWalletTransactionsForLatestBillingPeriod'
    | 'getCloudMarketplaceSubscriptions'
    | 'getCloudMarketplaceSubscriptionByAgreementId'
    | 'getCurrentCloudMarketplaceSubscription'
    | 'getCloudMarketplaceCreditsUsage'
  >;
}
