/** What the billing stores share: record kinds, list filters and paging. */
import type { Page } from '../../shared/paging';
import type { Category } from './pricing';

export type FilterMode = 'INCLUDE' | 'EXCLUDE' | 'ONLY';
export type TransactionType = 'PROCESSING' | 'UTILITIES';
export type BalanceKind = 'processing' | 'utilities';
export type AdjustmentType =
  'BILLING_PERIOD_STARTED' | 'CREDITS_BOUGHT' | 'UTILITIES_INVOICE_PAID' | 'MANUAL_ADJUSTMENT' | 'PROCESSED_VIDEO_INGESTION_FAILED' | 'PROCESSED_VIDEO_COMPUTE_SAVING' | 'OTHER';

export interface Line {
  category: Category;
  amount: number;
}

export interface CategoryTotal {
  category: Category;
  credit: number;
  debit: number;
}

/** Filters of a transaction or usage list (resolved). */
export interface RecordFilter {
  from: Date;
  to: Date;
  mode: FilterMode;
  videoId?: string;
}

export function typesOf(mode: FilterMode): TransactionType[] {
  return mode === 'INCLUDE' ? ['PROCESSING', 'UTILITIES'] : mode === 'EXCLUDE' ? ['UTILITIES'] : ['PROCESSING'];
}

export function pageOf<T>(req: { pageNumber: number; pageSize: number }, total: number, items: T[]): Page<T> {
  return {
    pageNumber: req.pageNumber,
    pageSize: req.pageSize,
    numberOfElements: items.length,
    totalPages: Math.ceil(total / req.pageSize),
    totalElements: total,
    items,
  };
}
