/**
 * Read side of billing and the billing-type gate: wallet financial details, periods and
 * transactions for WALLET teams; subscriptions and credits usage for CLOUD_MARKETPLACE teams
 * (and, as history, for teams that were billed through the marketplace before); plus the
 * agreement history the admin CLI records (agreements attach to CLOUD_MARKETPLACE teams only).
 */
import type { Db } from '../../db/database';
import type { Clock } from '../../shared/clock';
import { BadRequestError, ConflictError, NotFoundError } from '../../shared/errors';
import type { PageRequest } from '../../shared/paging';
import type { AccountsService } from '../accounts';
import { findTeam, Team } from '../accounts';
import { agreementsStore, AgreementState, AgreementView, SubscriptionStatus } from './agreements.store';
import { CategoryTotal, FilterMode, RecordFilter } from './billing-records';
import { creditsStore } from './credits.store';
import { LedgerTransaction, ledgerStore, PeriodPage, summaryFromAggregates, utilityCostsFromAggregates } from './ledger.store';
import { BillingPeriod, PeriodRef, periodsStore } from './periods.store';
import { volumeDiscountPercentage } from './price-list';
import type { LedgerService } from './ledger.service';
import { TransactionalService } from '../../db/transactional';

export interface PeriodView extends BillingPeriod {
  storageCostMicros: number;
  downloadCostMicros: number;
}

export interface TransactionsResult {
  pageNumber: number;
  pageSize: number;
  numberOfElements: number;
  totalPages: number;
  totalElements: number;
  period: PeriodView;
  filter: RecordFilter;
  totals: CategoryTotal[];
  items: LedgerTransaction[];
}

export interface RecordQuery {
  fromDateTime?: string;
  toDateTime?: string;
  mode?: FilterMode;
  videoId?: string;
}

export type ListRequest = { pageNumber: number; pageSize: number; sortDirection: 'ASC' | 'DESC' };

function requireWallet(team: Pick<Team, 'id' | 'billingType'>): void {
  if (team.billingType !== 'WALLET') {
    throw new ConflictError('TEAM_NOT_BILLED_THROUGH_WALLET', `Team ${team.id} is billed through the cloud marketplace, not the wallet`);
  }
}
function requireMarketplace(team: Pick<Team, 'id' | 'billingType'>): void {
  if (team.billingType !== 'CLOUD_MARKETPLACE') {
    throw new ConflictError('TEAM_NOT_BILLED_THROUGH_CLOUD_MARKETPLACE', `Team ${team.id} is billed through the wallet, not the cloud marketplace`);
  }
}

function rangeError(from: string, to: string): BadRequestError {
  return new BadRequestError('INVALID_DATE_TIME_RANGE', `The lower bound ${from} is after the upper bound ${to}`, {
    validationErrors: [{ field: 'fromDateTime', value: from, message: `must not be after ${to}` }],
  });
}

/** End of the UTC day of a `YYYY-MM-DD` date. */
function endOfDay(date: string): Date {
  return new Date(Date.parse(`${date}T00:00:00Z`) + 24 * 3600_000 - 1);
}

export interface BillingServiceDeps {
  db: Db;
  clock: Clock;
  accounts: AccountsService;
  ledger: LedgerService;
}

export class BillingService extends TransactionalService {
  private readonly clock: Clock;
  private readonly accounts: AccountsService;
  private readonly ledger: LedgerService;
  constructor(deps: BillingServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.accounts = deps.accounts;
    this.ledger = deps.ledger;
  }

  // ------------------------------------------------------------ wallet

  async financialDetails(userId: string, selectTeamId?: string) {
    const team = await this.accounts.selectTeam(userId, selectTeamId);
    requireWallet(team);
    const baseGp = this.ledger.prices.volumeDiscount.baseGp;
    return {
      processingBalanceMicros: await ledgerStore.balance(this.db, team.id, 'processing'),
      processingLifetimeSpendMicros: await ledgerStore.lifetimeProcessingSpend(this.db, team.id),
      baseVolumeDiscountGp: baseGp,
      baseVolumeDiscountPercentage: volumeDiscountPercentage(this.ledger.prices, baseGp),
      utilitiesBalanceMicros: await ledgerStore.balance(this.db, team.id, 'utilities'),
    };
  }

  async periods(userId: string, q: { teamId?: string; fromDate?: string; toDate?: string; endedMode?: FilterMode }, req: PageRequest) {
    const scope = await this.accounts.listScope(userId, q.teamId);
    let teamCreated: Date | undefined;
    if ('teamId' in scope) {
      const team = (await findTeam(this.db, scope.teamId))!;
      requireWallet(team);
      teamCreated = team.createdAt;
    }
    const today = this.clock.now().toISOString().slice(0, 10);
    const fromDate = q.fromDate ?? teamCreated?.toISOString().slice(0, 10);
    const toDate = q.toDate ?? today;
    if (fromDate && fromDate > toDate) {
      throw new BadRequestError('INVALID_DATE_TIME_RANGE', `fromDate ${fromDate} is after toDate ${toDate}`, {
        validationErrors: [{ field: 'fromDate', value: fromDate, message: `must not be after ${toDate}` }],
      });
    }
    const page = await periodsStore.page(this.db, scope, { from: fromDate ? new Date(`${fromDate}T00:00:00Z`) : undefined, to: endOfDay(toDate), ended: q.endedMode ?? 'INCLUDE' }, req);
    return { ...page, items: await this.withCosts(page.items) };
  }

  async period(userId: string, id: string): Promise<PeriodView> {
    const period = await this.ownPeriod(userId, id);
    return (await this.withCosts([period]))[0]!;
  }

  async periodTransactions(userId: string, id: string, q: RecordQuery, req: ListRequest) {
    const period = await this.ownPeriod(userId, id);
    return this.transactionsOf({ id: period.id }, q, req, (await findTeam(this.db, period.teamId))!);
  }

  /**
   * The chosen team (selectTeamId, else the default team), its latest period, a page and the
   * totals are read together (`latestOfChosenTeam`), so team selection costs no extra query.
   * When that finds no usable team, `selectTeam` answers with the precise error.
   */
  async latestTransactions(userId: string, selectTeamId: string | undefined, q: RecordQuery, req: ListRequest) {
    const to = this.upperBound(q);
    const page = await ledgerStore.pageWithPeriod(
      this.db,
      { latestOfChosenTeam: { userId, teamId: selectTeamId } },
      { from: q.fromDateTime ? new Date(q.fromDateTime) : undefined, to, mode: q.mode ?? 'INCLUDE', videoId: q.videoId },
      req,
    );
    if (!page.team?.apiEnabled) {
      // No member team, or not API-enabled: selectTeam throws the matching error. If it does not
      // (the team changed in between), read again the ordinary way.
      const team = await this.accounts.selectTeam(userId, selectTeamId);
      requireWallet(team);
      return this.transactionsOf({ latestOfTeam: team.id }, q, req, team);
    }
    requireWallet(page.team);
    return this.pageResult(page, this.resolveFilter(q, page.team.createdAt, to), req, page.team);
  }

  private async ownPeriod(userId: string, id: string): Promise<BillingPeriod> {
    const period = await periodsStore.byIdInScope(this.db, id, { memberUserId: userId });
    if (!period) throw new NotFoundError('Billing period not found');
    requireWallet((await findTeam(this.db, period.teamId))!);
    return period;
  }

  private async withCosts(periods: BillingPeriod[]): Promise<PeriodView[]> {
    const costs = await periodsStore.utilityCosts(
      this.db,
      periods.map((p) => p.id),
    );
    return periods.map((p) => ({ ...p, storageCostMicros: costs.get(p.id)?.storage ?? 0, downloadCostMicros: costs.get(p.id)?.download ?? 0 }));
  }

  private upperBound(q: RecordQuery): Date {
    return q.toDateTime ? new Date(q.toDateTime) : this.clock.now();
  }

  private resolveFilter(q: RecordQuery, defaultFrom: Date, to = this.upperBound(q)): RecordFilter {
    const from = q.fromDateTime ? new Date(q.fromDateTime) : defaultFrom;
    if (from > to) throw rangeError(from.toISOString(), to.toISOString());
    return { from, to, mode: q.mode ?? 'INCLUDE', videoId: q.videoId };
  }

  /**
   * A page of a period's transactions with totals. The period, the page and the aggregate rows
   * are read together (`pageWithPeriod`: one statement on PostgreSQL); totals come from the
   * maintained aggregates whenever the filters cover the whole period, else from a GROUP BY
   * over the lines.
   */
  private async transactionsOf(ref: PeriodRef, q: RecordQuery, req: ListRequest, team: Team): Promise<TransactionsResult> {
    const filter = this.resolveFilter(q, team.createdAt);
    return this.pageResult(await ledgerStore.pageWithPeriod(this.db, ref, filter, req), filter, req, team);
  }

  private async pageResult(page: PeriodPage, filter: RecordFilter, req: ListRequest, team: Team): Promise<TransactionsResult> {
    const { period, aggregates, items } = page;
    if (!period) throw new NotFoundError(`Team ${team.id} has no billing period yet`);
    const summary = summaryFromAggregates(aggregates, filter) ?? (await ledgerStore.summary(this.db, period.id, filter, false));
    const costs = utilityCostsFromAggregates(aggregates);
    return {
      pageNumber: req.pageNumber,
      pageSize: req.pageSize,
      numberOfElements: items.length,
      totalPages: Math.ceil(summary.count / req.pageSize),
      totalElements: summary.count,
      period: { ...period, storageCostMicros: costs.storage, downloadCostMicros: costs.download },
      filter,
      totals: summary.totals,
      items,
    };
  }

  // ------------------------------------------------------------ cloud marketplace

  /** Agreement history rows; a team's rows stay readable after it moved to the wallet. */
  async subscriptions(userId: string, teamId: string | undefined, req: PageRequest) {
    const scope = await this.accounts.listScope(userId, teamId);
    if ('teamId' in scope) await this.requireMarketplaceHistory((await findTeam(this.db, scope.teamId))!);
    return agreementsStore.page(this.db, scope, req);
  }

  /** One agreement version, whatever its team is billed by now (it is history, as in the list). */
  async subscription(userId: string, agreementId: string): Promise<AgreementView> {
    const a = await agreementsStore.currentInScope(this.db, agreementId, { memberUserId: userId });
    if (!a) throw new NotFoundError(`Agreement ${agreementId} not found`);
    return a;
  }

  async currentSubscription(userId: string, selectTeamId?: string): Promise<AgreementView> {
    const team = await this.accounts.selectTeam(userId, selectTeamId);
    requireMarketplace(team);
    const a = await agreementsStore.activeForTeam(this.db, team.id);
    if (!a) throw new NotFoundError(`Team ${team.id} has no cloud-marketplace subscription`);
    return a;
  }

  async creditsUsage(userId: string, selectTeamId: string | undefined, q: RecordQuery, req: ListRequest) {
    const team = await this.accounts.selectTeam(userId, selectTeamId);
    await this.requireMarketplaceHistory(team);
    const firstLink = (await agreementsStore.firstLinkAt(this.db, team.id)) ?? team.createdAt;
    const filter = this.resolveFilter(q, firstLink);
    const { page, totals } = await creditsStore.page(this.db, team.id, filter, req);
    return { ...page, teamId: team.id, filter, totals };
  }

  /**
   * Marketplace history is readable for a team billed through the marketplace now, or one with
   * marketplace records (agreements, credits usage) from before it moved to the wallet.
   */
  private async requireMarketplaceHistory(team: Team): Promise<void> {
    if (team.billingType === 'CLOUD_MARKETPLACE' || (await agreementsStore.hasMarketplaceHistory(this.db, team.id))) return;
    requireMarketplace(team);
  }

  // ------------------------------------------------------------ agreement history (admin)

  /** Links a new agreement version to a team (`SUBSCRIBED`). */
  async linkAgreement(input: {
    teamId: string;
    agreementId: string;
    licenseId: string;
    offerId: string;
    productId: string;
    productName: string;
    buyerAccountId: string;
    sellerAccountId: string;
    acceptanceTime?: Date;
    startTime?: Date;
    agreementIntent?: string;
    agreementStatus?: string;
  }): Promise<AgreementView> {
    await this.transactional(async (trx) => {
      await agreementTarget(trx, input.teamId);
      if (await agreementsStore.current(trx, input.agreementId)) throw new ConflictError('CONFLICT', `Agreement ${input.agreementId} is already recorded`);
      const now = this.clock.now();
      await agreementsStore.append(trx, {
        ...input,
        status: 'SUBSCRIBED',
        agreementIntent: input.agreementIntent ?? 'NEW',
        acceptanceTime: input.acceptanceTime ?? now,
        startTime: input.startTime ?? now,
        setupCompletedAt: now,
        effectiveFromHour: hourOf(now),
        recordedAt: now,
      });
    });
    return (await agreementsStore.current(this.db, input.agreementId))!;
  }

  /**
   * Records a change of an agreement as new history rows: a status change
   * (`UNSUBSCRIBE_PENDING`, `UNSUBSCRIBED`, back to `SUBSCRIBED`), a replacement by a new
   * agreement version, or a reassignment to another team under a new agreement version.
   */
  async recordAgreementChange(
    change:
      | { kind: 'status'; agreementId: string; status: 'SUBSCRIBED' | 'UNSUBSCRIBE_PENDING' | 'UNSUBSCRIBED'; agreementStatus?: string; note?: string }
      | { kind: 'replace'; agreementId: string; newAgreementId: string; offerId?: string; note?: string }
      | { kind: 'reassign'; agreementId: string; newAgreementId: string; toTeamId: string; note?: string },
  ): Promise<AgreementView> {
    await this.transactional(async (trx) => {
      const current = await agreementsStore.current(trx, change.agreementId);
      if (!current) throw new NotFoundError(`Agreement ${change.agreementId} not found`);
      const now = this.clock.now();
      const base: AgreementState = { ...current, note: change.note, recordedAt: now };
      const ended: SubscriptionStatus[] = ['AGREEMENT_REPLACED', 'REASSIGNED'];
      if (ended.includes(current.status)) throw new ConflictError('CONFLICT', `Agreement ${change.agreementId} is ${current.status}; change its successor instead`);
      if (change.kind === 'status') {
        await agreementsStore.append(trx, {
          ...base,
          status: change.status,
          agreementStatus: change.agreementStatus ?? base.agreementStatus,
          cancellationRequestedAt: change.status === 'UNSUBSCRIBE_PENDING' ? now : change.status === 'SUBSCRIBED' ? undefined : (base.cancellationRequestedAt ?? now),
          licenseDeprovisionedAt: change.status === 'UNSUBSCRIBED' ? now : base.licenseDeprovisionedAt,
        });
        return;
      }
      if (await agreementsStore.current(trx, change.newAgreementId)) throw new ConflictError('CONFLICT', `Agreement ${change.newAgreementId} is already recorded`);
      const successor: AgreementState = {
        ...base,
        agreementId: change.newAgreementId,
        status: 'SUBSCRIBED',
        acceptanceTime: now,
        startTime: now,
        setupCompletedAt: now,
        effectiveFromHour: hourOf(now),
        cancellationRequestedAt: undefined,
        licenseDeprovisionedAt: undefined,
        replacesAgreementId: undefined,
        replacedByAgreementId: undefined,
        reassignedFromAgreementId: undefined,
        reassignedToAgreementId: undefined,
        reassignedAt: undefined,
      };
      if (change.kind === 'replace') {
        await agreementsStore.append(trx, { ...base, status: 'AGREEMENT_REPLACED', replacedByAgreementId: change.newAgreementId });
        await agreementsStore.append(trx, { ...successor, offerId: change.offerId ?? base.offerId, agreementIntent: 'REPLACE', replacesAgreementId: change.agreementId });
      } else {
        await agreementTarget(trx, change.toTeamId);
        await agreementsStore.append(trx, { ...base, status: 'REASSIGNED', reassignedToAgreementId: change.newAgreementId, reassignedAt: now });
        await agreementsStore.append(trx, { ...successor, teamId: change.toTeamId, reassignedFromAgreementId: change.agreementId, reassignedAt: now });
      }
    });
    const id = change.kind === 'status' ? change.agreementId : change.newAgreementId;
    return (await agreementsStore.current(this.db, id))!;
  }
}

/**
 * The team an agreement is linked or reassigned to: it must exist and be billed through the
 * marketplace (a wallet team would show the agreement but go on paying from its wallet).
 */
async function agreementTarget(db: Db, teamId: string): Promise<Team> {
  const team = await findTeam(db, teamId);
  if (!team) throw new NotFoundError(`Team ${teamId} not found`, 'TEAM_NOT_FOUND');
  if (team.billingType !== 'CLOUD_MARKETPLACE') {
    throw new ConflictError(
      'TEAM_NOT_BILLED_THROUGH_CLOUD_MARKETPLACE',
      `Team ${teamId} is billed through the wallet; switch it first (admin set-billing-type --billing-type CLOUD_MARKETPLACE), then link or reassign the agreement`,
    );
  }
  return team;
}

function hourOf(d: Date): Date {
  const h = new Date(d);
  h.setUTCMinutes(0, 0, 0);
  return h;
}
