/**
 * The ledger other areas call: estimates, charges (idempotent by job id), refunds, top-ups,
 * manual adjustments, utilities accruals, and the monthly billing-period job. Every balance
 * change is one appended row; a balance is the running sum of its rows. Wallet teams are charged
 * in micro-USD on the wallet ledger, cloud-marketplace teams in credits on the usage ledger.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/database';
import type { Clock } from '../../shared/clock';
import { BadRequestError, ConflictError, NotFoundError } from '../../shared/errors';
import { BillingType, findTeam, setTeamBillingType } from '../accounts';
import { agreementsStore } from './agreements.store';
import { AdjustmentType, BalanceKind, Line } from './billing-records';
import { billingTypeChangesStore } from './billing-type-changes.store';
import { creditsStore } from './credits.store';
import { ledgerStore } from './ledger.store';
import { BillingPeriod, periodsStore } from './periods.store';
import { roundToMills } from './money';
import type { PriceList } from './price-list';
import { Category, priceJob, PricedJob, PricedProduct, priceUtility, ProductUse } from './pricing';
import { TransactionalService } from '../../db/transactional';
import { afterCommit } from '../../db/after-commit';
import { recordBillingCharge, recordBillingRefund } from '../../shared/metrics';

export interface ChargeInput {
  /** The processing job; a second charge with the same id returns the first. */
  jobId: string;
  videoId?: string;
  sourceVideoId?: string;
  products: ProductUse[];
  reason?: string;
}

export type ChargeResult =
  { billingType: 'WALLET'; jobId: string; amountMicros: number; duplicate: boolean } | { billingType: 'CLOUD_MARKETPLACE'; jobId: string; credits: number; duplicate: boolean };

/** What failed when a job's charge is given back. */
export type RefundFailure = 'PROCESSING_FAILED' | 'PROCESSED_VIDEO_INGESTION_FAILED';
const REFUND_ADJUSTMENT: Record<RefundFailure, AdjustmentType> = { PROCESSING_FAILED: 'OTHER', PROCESSED_VIDEO_INGESTION_FAILED: 'PROCESSED_VIDEO_INGESTION_FAILED' };
const REFUND_REASON: Record<RefundFailure, string> = { PROCESSING_FAILED: 'Refund: processing failed', PROCESSED_VIDEO_INGESTION_FAILED: 'Refund: the processed video could not be ingested' };

/** First instant of the UTC month of `d`. */
export function monthStart(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
}

/**
 * Told in the transaction that closes a billing period, before the period ends, so it can book
 * what belongs to the period (storage usage up to `boundary`, the period's end).
 */
export type PeriodClosingHook = (trx: Db, teamId: string, boundary: Date) => Promise<void>;

export interface LedgerServiceDeps {
  db: Db;
  clock: Clock;
  priceList: PriceList;
}

export class LedgerService extends TransactionalService {
  private readonly clock: Clock;
  private readonly priceList: PriceList;
  private readonly closingHooks: PeriodClosingHook[] = [];
  constructor(deps: LedgerServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.priceList = deps.priceList;
  }

  get prices(): PriceList {
    return this.priceList;
  }

  /** Registers what runs in the transaction that closes a period (see PeriodClosingHook). */
  onPeriodClosing(hook: PeriodClosingHook): void {
    this.closingHooks.push(hook);
  }

  /**
   * The wallet's processing balance in micro-USD, as committed now. Only for showing: a charge
   * checks its cover itself, under the team lock (`charge`).
   */
  async processingBalance(teamId: string): Promise<number> {
    return ledgerStore.balance(this.db, teamId, 'processing');
  }

  private async team(db: Db, teamId: string) {
    const team = await findTeam(db, teamId);
    if (!team) throw new NotFoundError(`Team ${teamId} not found`, 'TEAM_NOT_FOUND');
    return team;
  }

  /**
   * Prices a processing job for the team without booking anything: the same function and price
   * list `charge` books with, so an appraisal shows exactly what accepting it costs.
   */
  async estimate(teamId: string, products: ProductUse[]): Promise<PricedJob & { billingType: BillingType }> {
    const team = await this.team(this.db, teamId);
    return { billingType: team.billingType, ...this.price(products) };
  }

  /**
   * Prices a processing job as `charge` books it, in both units (micro-USD and credits), without
   * reading the team: for a caller that charges in the same transaction and learns the team's
   * billing type from the charge (processing's start).
   */
  price(products: ProductUse[]): PricedJob {
    return priceJob(this.priceList, products);
  }

  /** Prices a download use as `accrueUtility` would book it (storage: `priceStorage`). */
  estimateUtility(product: ProductUse): PricedProduct {
    return priceUtility(this.priceList, product);
  }

  /**
   * Charges a processing job to the team's ledger (priced like `estimate`); idempotent by `jobId`.
   * A cloud-marketplace team needs a current agreement (409 CLOUD_MARKETPLACE_ACCESS_NOT_AVAILABLE
   * otherwise). A wallet team pays processing in advance: the charge needs cover in the
   * processing balance (409 INSUFFICIENT_PROJECTED_BALANCE_ERROR otherwise), checked here, under
   * the team lock that serialises the team's money, so that charges at once (on any number of
   * processes) never spend the same money twice, whoever calls.
   */
  async charge(teamId: string, input: ChargeInput): Promise<ChargeResult> {
    const priced = this.price(input.products);
    const result = await this.transactional(async (trx): Promise<ChargeResult> => {
      await ledgerStore.lockTeam(trx, teamId);
      const team = await this.team(trx, teamId);
      if (team.billingType === 'CLOUD_MARKETPLACE') {
        const existing = await creditsStore.byJobId(trx, input.jobId);
        if (existing) return { billingType: 'CLOUD_MARKETPLACE', jobId: input.jobId, credits: existing.credits, duplicate: true };
        const agreement = await agreementsStore.activeForTeam(trx, teamId);
        if (!agreement) {
          throw new ConflictError(
            'CLOUD_MARKETPLACE_ACCESS_NOT_AVAILABLE',
            `Team ${teamId} is billed through the cloud marketplace but has no current agreement; work can be charged again once it has one, or is billed through the wallet`,
          );
        }
        await creditsStore.insert(
          trx,
          {
            teamId,
            agreementId: agreement.agreementId,
            type: 'PROCESSING',
            category: 'PROCESSING',
            credits: priced.costCredits,
            videoId: input.videoId,
            sourceVideoId: input.sourceVideoId,
            products: priced.products,
            reason: input.reason,
            jobId: input.jobId,
            createdAt: this.clock.now(),
          },
          priced.products.map((p) => ({ category: p.category, amount: p.costCredits })),
        );
        return { billingType: 'CLOUD_MARKETPLACE', jobId: input.jobId, credits: priced.costCredits, duplicate: false };
      }
      const existing = await ledgerStore.byJobId(trx, input.jobId);
      if (existing) return { billingType: 'WALLET', jobId: input.jobId, amountMicros: existing.amountMicros, duplicate: true };
      const balance = await ledgerStore.balance(trx, teamId, 'processing');
      if (balance < priced.costMicros) {
        throw new ConflictError(
          'INSUFFICIENT_PROJECTED_BALANCE_ERROR',
          `The job costs ${(priced.costMicros / 1e6).toFixed(3)} USD and the wallet holds ${(balance / 1e6).toFixed(3)} USD; top it up first`,
        );
      }
      await this.append(trx, teamId, {
        kind: 'processing',
        type: 'PROCESSING',
        category: 'PROCESSING',
        lines: priced.products.map((p) => ({ category: p.category, amount: -p.costMicros })),
        videoId: input.videoId,
        sourceVideoId: input.sourceVideoId,
        products: priced.products,
        discountPercentage: priced.discountPercentage,
        reason: input.reason,
        jobId: input.jobId,
      });
      return { billingType: 'WALLET', jobId: input.jobId, amountMicros: -priced.costMicros, duplicate: false };
    });
    // Counted once the charge is committed (with the caller's transaction, when bound to one).
    if (!result.duplicate) afterCommit(this.db, () => recordBillingCharge(priced.costMicros / 1e6));
    return result;
  }

  /**
   * Gives back what a job was charged, once, labelled with what failed: the processed video's
   * ingestion (`PROCESSED_VIDEO_INGESTION_FAILED`) or the processing itself (the contract's
   * AccountAdjustmentType has no value for that, so `OTHER`, with the reason naming the failure).
   * Returns false when the job was never charged.
   */
  async refund(teamId: string, jobId: string, failure: RefundFailure, detail?: string): Promise<boolean> {
    const refundId = `refund:${jobId}`;
    const adjustmentType = REFUND_ADJUSTMENT[failure];
    const reason = `${REFUND_REASON[failure]}${detail ? `: ${detail}` : ''}`.slice(0, 500);
    /** List price in micro-USD of a refund booked now (not one found booked before). */
    let refundedMicros: number | undefined;
    const refunded = await this.transactional(async (trx) => {
      await ledgerStore.lockTeam(trx, teamId);
      const charged = await ledgerStore.byJobId(trx, jobId);
      if (charged && charged.teamId === teamId) {
        if (await ledgerStore.byJobId(trx, refundId)) return true;
        await this.append(trx, teamId, {
          kind: charged.balanceKind,
          type: charged.type,
          category: 'PROCESSING',
          lines: (charged.products ?? []).map((p) => ({ category: p.category, amount: p.costMicros })),
          amount: -charged.amountMicros,
          videoId: charged.videoId,
          sourceVideoId: charged.sourceVideoId,
          adjustmentType,
          reason,
          jobId: refundId,
        });
        refundedMicros = -charged.amountMicros;
        return true;
      }
      const usage = await creditsStore.byJobId(trx, jobId);
      if (usage && usage.teamId === teamId) {
        if (await creditsStore.byJobId(trx, refundId)) return true;
        await creditsStore.insert(
          trx,
          { ...usage, credits: -usage.credits, adjustmentType, reason, jobId: refundId, createdAt: this.clock.now() },
          (usage.products ?? []).map((p) => ({ category: p.category, amount: -p.costCredits })),
        );
        refundedMicros = (usage.products ?? []).reduce((sum, p) => sum + p.costMicros, 0);
        return true;
      }
      return false;
    });
    if (refundedMicros !== undefined) {
      const micros = refundedMicros;
      afterCommit(this.db, () => recordBillingRefund(micros / 1e6));
    }
    return refunded;
  }

  /** Adds prepaid money to a wallet's processing balance (`CREDITS_BOUGHT`). */
  async topUp(teamId: string, amountMicros: number, reason = 'Wallet top-up'): Promise<void> {
    if (!(amountMicros > 0)) throw new BadRequestError('INVALID_INPUT', 'A top-up must be positive');
    await this.adjust(teamId, { amountMicros, adjustmentType: 'CREDITS_BOUGHT', reason, balance: 'processing' });
  }

  /**
   * A signed adjustment of one balance of a wallet team, with its reason. The amount is rounded
   * half away from zero to whole mills; one that rounds to zero is refused (400 INVALID_INPUT).
   * An operator's correction may take a balance below zero: it needs no cover.
   */
  async adjust(teamId: string, a: { amountMicros: number; adjustmentType: AdjustmentType; reason: string; balance: BalanceKind; category?: Category; videoId?: string }): Promise<void> {
    if (!Number.isSafeInteger(a.amountMicros)) throw new BadRequestError('INVALID_INPUT', 'Amount must be whole micro-units');
    if (!a.reason.trim()) throw new BadRequestError('INVALID_INPUT', 'An adjustment needs a reason');
    const amount = roundToMills(a.amountMicros);
    if (amount === 0) {
      throw new BadRequestError(
        'INVALID_INPUT',
        `The amount ${a.amountMicros / 1e6} USD rounds to 0.000 USD: the ledger books whole mills (0.001 USD), so an adjustment must be at least 0.0005 USD either way`,
      );
    }
    await this.transactional(async (trx) => {
      await ledgerStore.lockTeam(trx, teamId);
      const team = await this.team(trx, teamId);
      if (team.billingType !== 'WALLET') throw new ConflictError('TEAM_NOT_BILLED_THROUGH_WALLET', `Team ${teamId} is not billed through the wallet`);
      const category = a.category ?? 'OTHER';
      await this.append(trx, teamId, {
        kind: a.balance,
        type: a.balance === 'processing' ? 'PROCESSING' : 'UTILITIES',
        category,
        lines: [{ category, amount }],
        adjustmentType: a.adjustmentType,
        reason: a.reason,
        videoId: a.videoId,
      });
    });
  }

  /** Storage (GB-months) or download (GB) use, priced per product (`priceUtility`) and booked with `bookUtility`. */
  async accrueUtility(teamId: string, u: { jobId: string; videoId?: string; product: ProductUse }): Promise<ChargeResult> {
    return this.bookUtility(teamId, { jobId: u.jobId, videoId: u.videoId, product: priceUtility(this.priceList, u.product) });
  }

  /**
   * Books a priced utility (storage, download) as a UTILITIES record in the team's billing type:
   * `costMicros` on the wallet's utilities balance, or `costCredits` on the usage ledger.
   * Idempotent by `jobId` (checked under the team lock; `job_id` is unique as well).
   *
   * No cover is checked, on purpose: utilities are post-paid. They book use that already
   * happened (bytes kept in storage, bytes already served), which cannot be refused afterwards,
   * so the utilities balance may go below zero and is settled with the billing period.
   */
  async bookUtility(teamId: string, u: { jobId: string; videoId?: string; product: PricedProduct }): Promise<ChargeResult> {
    const p = u.product;
    return this.transactional(async (trx) => {
      await ledgerStore.lockTeam(trx, teamId);
      const team = await this.team(trx, teamId);
      if (team.billingType === 'CLOUD_MARKETPLACE') {
        const existing = await creditsStore.byJobId(trx, u.jobId);
        if (existing) return { billingType: 'CLOUD_MARKETPLACE', jobId: u.jobId, credits: existing.credits, duplicate: true };
        const agreement = await agreementsStore.activeForTeam(trx, teamId);
        await creditsStore.insert(
          trx,
          {
            teamId,
            agreementId: agreement?.agreementId,
            type: 'UTILITIES',
            category: p.category,
            credits: p.costCredits,
            videoId: u.videoId,
            products: [p],
            jobId: u.jobId,
            createdAt: this.clock.now(),
          },
          [{ category: p.category, amount: p.costCredits }],
        );
        return { billingType: 'CLOUD_MARKETPLACE', jobId: u.jobId, credits: p.costCredits, duplicate: false };
      }
      const existing = await ledgerStore.byJobId(trx, u.jobId);
      if (existing) return { billingType: 'WALLET', jobId: u.jobId, amountMicros: existing.amountMicros, duplicate: true };
      await this.append(trx, teamId, {
        kind: 'utilities',
        type: 'UTILITIES',
        category: p.category,
        lines: [{ category: p.category, amount: -p.costMicros }],
        videoId: u.videoId,
        products: [p],
        jobId: u.jobId,
      });
      return { billingType: 'WALLET', jobId: u.jobId, amountMicros: -p.costMicros, duplicate: false };
    });
  }

  /**
   * The monthly period job: closes every open period started before the current UTC month
   * (ended at the month boundary, after the closing hooks booked what belongs to it) and opens a
   * period for every wallet team without one, each with a `BILLING_PERIOD_STARTED` adjustment.
   * Safe to run any number of times.
   */
  async rollPeriods(): Promise<{ closed: number; opened: number }> {
    const now = this.clock.now();
    const boundary = monthStart(now);
    let closed = 0;
    let opened = 0;
    for (const p of await periodsStore.openBefore(this.db, boundary)) {
      await this.transactional(async (trx) => {
        await ledgerStore.lockTeam(trx, p.teamId);
        for (const hook of this.closingHooks) await hook(trx, p.teamId, boundary);
        await periodsStore.end(trx, p.id, boundary);
        closed++;
      });
    }
    for (const teamId of await periodsStore.walletTeamsWithoutOpenPeriod(this.db)) {
      await this.transactional(async (trx) => {
        await ledgerStore.lockTeam(trx, teamId);
        if (await periodsStore.open(trx, teamId)) return;
        await this.openPeriod(trx, teamId, now);
        opened++;
      });
    }
    return { closed, opened };
  }

  /** Switches a team's billing type and records the switch. */
  async switchBillingType(teamId: string, to: BillingType, reason?: string): Promise<void> {
    await this.transactional(async (trx) => {
      await ledgerStore.lockTeam(trx, teamId);
      const team = await this.team(trx, teamId);
      if (team.billingType === to) return;
      const now = this.clock.now();
      await billingTypeChangesStore.append(trx, { teamId, from: team.billingType, to, reason, at: now });
      await setTeamBillingType(trx, teamId, to, now);
    });
  }

  /**
   * Opens the team's next period, under the team lock when it has no open period. Whoever opens
   * it (the period job, a charge, a storage batch) at `now`, it starts at the same instant: the
   * first instant of the UTC month of `now`; a team's first period when the team was created,
   * if that is later.
   */
  private async openPeriod(trx: Db, teamId: string, now: Date): Promise<BillingPeriod> {
    const boundary = monthStart(now);
    const latest = await periodsStore.latest(trx, teamId);
    const start = latest ? boundary : new Date(Math.max((await this.team(trx, teamId)).createdAt.getTime(), boundary.getTime()));
    const period: BillingPeriod = { id: randomUUID(), teamId, createdAt: start, updatedAt: start };
    await periodsStore.insert(trx, period);
    const balance = await ledgerStore.balance(trx, teamId, 'utilities');
    await ledgerStore.insert(
      trx,
      {
        teamId,
        periodId: period.id,
        balanceKind: 'utilities',
        type: 'UTILITIES',
        category: 'OTHER',
        amountMicros: 0,
        balanceMicros: balance,
        adjustmentType: 'BILLING_PERIOD_STARTED',
        reason: 'Billing period started',
        createdAt: start,
      },
      [{ category: 'OTHER', amount: 0 }],
    );
    return period;
  }

  /** Appends one wallet transaction in the team's open period (opening one if needed). */
  private async append(
    trx: Db,
    teamId: string,
    t: {
      kind: BalanceKind;
      type: 'PROCESSING' | 'UTILITIES';
      category: Category;
      lines: Line[];
      amount?: number;
      videoId?: string;
      sourceVideoId?: string;
      products?: PricedProduct[];
      discountPercentage?: number;
      adjustmentType?: AdjustmentType;
      reason?: string;
      jobId?: string;
    },
  ): Promise<void> {
    const now = this.clock.now();
    const period = (await periodsStore.open(trx, teamId)) ?? (await this.openPeriod(trx, teamId, now));
    const amount = t.amount ?? t.lines.reduce((s, l) => s + l.amount, 0);
    const balance = (await ledgerStore.balance(trx, teamId, t.kind)) + amount;
    await ledgerStore.insert(
      trx,
      {
        teamId,
        periodId: period.id,
        balanceKind: t.kind,
        type: t.type,
        category: t.category,
        amountMicros: amount,
        balanceMicros: balance,
        adjustmentType: t.adjustmentType,
        reason: t.reason,
        videoId: t.videoId,
        sourceVideoId: t.sourceVideoId,
        products: t.products,
        discountPercentage: t.discountPercentage,
        jobId: t.jobId,
        createdAt: now,
      },
      t.lines,
    );
  }
}
