/**
 * Storage billing: what a team stores (storage-meter.ts) is charged as UTILITIES records of
 * category STORAGE, in the team's billing type at the time of the charge: micro-USD on the
 * wallet's utilities balance, credits on the usage ledger.
 *
 * - Usage is GB-months (storage-pricing.ts) of the closed intervals in `storage_usage`.
 * - A team is billed when its oldest unbilled interval is a day old or belongs to an ended
 *   month (the periodic task), and at the close of each wallet billing period (the period job
 *   calls `billTeam` in the transaction that closes the period, for usage up to the month's end).
 * - Each batch of one month is priced as the month's running total (rounded up once) minus what
 *   the month has been charged before, so daily batches add up to the monthly price.
 * - Exactly once: the charge row, the ledger record (job id `storage:<charge id>`) and the
 *   marking of its intervals are written in one transaction with the team and the meter locked;
 *   a process that dies in between leaves everything unbilled for the next run, nothing is
 *   charged twice.
 * - A cloud-marketplace team without a current agreement is not charged: its usage stays
 *   unbilled until it has an agreement again or is switched to the wallet.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/database';
import type { Clock } from '../../shared/clock';
import { DAY_MS } from '../../shared/clock';
import { findTeam, Team } from '../accounts';
import { agreementsStore } from './agreements.store';
import { ledgerStore } from './ledger.store';
import { periodsStore } from './periods.store';
import { LedgerService, monthStart } from './ledger.service';
import type { PricedProduct } from './pricing';
import { StorageMeters } from './storage-meter';
import { gbMonths, priceStorage, StoragePrice } from './storage-pricing';
import { StorageUsage, storageStore } from './storage.store';
import { TransactionalService } from '../../db/transactional';

export const STORAGE_PRODUCT_NAME = 'Storage';

export interface StorageBillingServiceDeps {
  db: Db;
  clock: Clock;
  ledger: LedgerService;
}

export class StorageBillingService extends TransactionalService {
  private readonly clock: Clock;
  private readonly ledger: LedgerService;
  constructor(deps: StorageBillingServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.ledger = deps.ledger;
  }

  /**
   * The periodic task: samples every team that stores something (or did), then bills each team
   * whose unbilled usage is due. Teams are independent: one failing does not stop the others,
   * and it is retried on the next run.
   */
  async run(): Promise<{ sampled: number; charges: number }> {
    const now = this.clock.now();
    const failures: unknown[] = [];
    let sampled = 0;
    for (const teamId of await storageStore.teamsToSample(this.db)) {
      try {
        await new StorageMeters(this.db).sample(teamId, now);
        sampled++;
      } catch (err) {
        failures.push(err);
      }
    }
    let charges = 0;
    const thisMonth = monthStart(now);
    for (const t of await storageStore.teamsWithUnbilled(this.db)) {
      const due = t.oldestFrom.getTime() <= now.getTime() - DAY_MS || t.oldestMonth < thisMonth;
      if (!due) continue;
      try {
        charges += await this.billTeam(t.teamId);
      } catch (err) {
        failures.push(err);
      }
    }
    if (failures.length) throw new AggregateError(failures, `storage billing failed for ${failures.length} team(s); retried on the next run`);
    return { sampled, charges };
  }

  /**
   * Bills the team's unbilled usage up to `upTo` (default now), one charge per month. For a
   * wallet team whose open period began before this month, usage from this month waits for the
   * next period. Returns the number of charges written (a charge may book nothing when the
   * rounded running total did not grow).
   */
  async billTeam(teamId: string, opts: { upTo?: Date } = {}): Promise<number> {
    return this.transactional(async (trx) => {
      const now = this.clock.now();
      // The team, then the meter (the lock order in storage-meter.ts).
      await ledgerStore.lockTeam(trx, teamId);
      await new StorageMeters(trx).sample(teamId, now);
      const team = await findTeam(trx, teamId);
      if (!team) return 0;
      if (team.billingType === 'CLOUD_MARKETPLACE' && !(await agreementsStore.activeForTeam(trx, teamId))) return 0;
      const thisMonth = monthStart(now);
      let upTo = opts.upTo && opts.upTo < now ? opts.upTo : now;
      if (team.billingType === 'WALLET' && upTo > thisMonth) {
        const open = await periodsStore.open(trx, teamId);
        if (open && open.createdAt < thisMonth) upTo = thisMonth;
      }
      const usage = await storageStore.unbilled(trx, teamId, upTo);
      const ledger = this.ledger.within(trx);
      let charges = 0;
      for (const [month, rows] of byMonth(usage)) {
        await this.chargeMonth(trx, ledger, team, month, rows, now);
        charges++;
      }
      return charges;
    });
  }

  private async chargeMonth(trx: Db, ledger: LedgerService, team: Team, month: Date, rows: StorageUsage[], now: Date): Promise<void> {
    const usage = rows.reduce((s, r) => s + gbMonths(r.bytes, r.from, r.to, r.monthStart), 0);
    const before = await storageStore.latestCharge(trx, team.id, month, team.billingType);
    const total = (before?.totalGbMonths ?? 0) + usage;
    const price = priceStorage(ledger.prices, total);
    const chargedBefore = before?.totalAmount ?? 0;
    const wallet = team.billingType === 'WALLET';
    const amount = Math.max(0, (wallet ? price.costMicros : price.costCredits) - chargedBefore);
    const id = randomUUID();
    await storageStore.insertCharge(trx, {
      id,
      teamId: team.id,
      monthStart: month,
      billingType: team.billingType,
      usageGbMonths: usage,
      totalGbMonths: total,
      amount,
      totalAmount: chargedBefore + amount,
      createdAt: now,
    });
    if (amount > 0) await ledger.bookUtility(team.id, { jobId: `storage:${id}`, product: storageProduct(usage, price, wallet ? { micros: amount } : { credits: amount }) });
    await storageStore.markBilled(
      trx,
      rows.map((r) => r.seq),
      id,
    );
  }
}

/** Intervals grouped by month, oldest month first (the rows come oldest first). */
function byMonth(rows: StorageUsage[]): Map<Date, StorageUsage[]> {
  const out = new Map<number, { month: Date; rows: StorageUsage[] }>();
  for (const r of rows) {
    const key = r.monthStart.getTime();
    const group = out.get(key) ?? { month: r.monthStart, rows: [] };
    group.rows.push(r);
    out.set(key, group);
  }
  return new Map([...out.values()].sort((a, b) => a.month.getTime() - b.month.getTime()).map((g) => [g.month, g.rows]));
}

/** The product a storage charge shows: the batch's GB-months, the unit price and what it charged. */
function storageProduct(usage: number, price: StoragePrice, charged: { micros?: number; credits?: number }): PricedProduct {
  const micros = charged.micros ?? 0;
  return {
    productName: STORAGE_PRODUCT_NAME,
    category: 'STORAGE',
    amount: Math.round(usage * 1e6) / 1e6,
    amountUnit: 'GB',
    discountPercentage: 0,
    unitPriceMicros: price.unitPriceMicros,
    costMicros: micros,
    normalCostMicros: micros,
    unitPriceCredits: price.unitPriceCredits,
    costCredits: charged.credits ?? 0,
  };
}
