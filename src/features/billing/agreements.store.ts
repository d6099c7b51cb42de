/** SQL of cloud-marketplace agreements: the history rows of each agreement version. */
import type { Knex } from 'knex';
import { asDate, asOptionalDate } from '../../db/database';
import type { Page, PageRequest } from '../../shared/paging';
import { TeamScope, whereTeamInScope } from '../accounts';
import { pageOf } from './billing-records';
import { int } from './money';
import { DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export type SubscriptionStatus = 'SUBSCRIBED' | 'UNSUBSCRIBE_PENDING' | 'UNSUBSCRIBED' | 'AGREEMENT_REPLACED' | 'REASSIGNED';

/** The state of one agreement version: its latest history row, created at its first row. */
export interface AgreementState {
  agreementId: string;
  teamId: string;
  status: SubscriptionStatus;
  licenseId: string;
  offerId: string;
  productId: string;
  productName: string;
  buyerAccountId: string;
  sellerAccountId: string;
  agreementIntent?: string;
  agreementStatus?: string;
  acceptanceTime: Date;
  startTime: Date;
  setupCompletedAt: Date;
  cancellationRequestedAt?: Date;
  licenseDeprovisionedAt?: Date;
  effectiveFromHour: Date;
  replacesAgreementId?: string;
  replacedByAgreementId?: string;
  reassignedFromAgreementId?: string;
  reassignedToAgreementId?: string;
  reassignedAt?: Date;
  note?: string;
  /** When the row (this change) was recorded. */
  recordedAt: Date;
}

export interface AgreementView extends AgreementState {
  createdAt: Date;
  updatedAt: Date;
}

/** A row as the drivers return it (see src/db/store.ts). */
interface AgreementViewRow {
  agreement_id: string;
  team_id: string;
  status: SubscriptionStatus;
  license_id: string;
  offer_id: string;
  product_id: string;
  product_name: string;
  buyer_account_id: string;
  seller_account_id: string;
  agreement_intent: Nullable<string>;
  agreement_status: Nullable<string>;
  acceptance_time: DbTimestamp;
  start_time: DbTimestamp;
  setup_completed_at: DbTimestamp;
  cancellation_requested_at: Nullable<DbTimestamp>;
  license_deprovisioned_at: Nullable<DbTimestamp>;
  effective_from_hour: DbTimestamp;
  replaces_agreement_id: Nullable<string>;
  replaced_by_agreement_id: Nullable<string>;
  reassigned_from_agreement_id: Nullable<string>;
  reassigned_to_agreement_id: Nullable<string>;
  reassigned_at: Nullable<DbTimestamp>;
  note: Nullable<string>;
  created_at: DbTimestamp;
  first_created_at: Nullable<DbTimestamp>;
}

function toAgreement(r: AgreementViewRow): AgreementView {
  return {
    agreementId: r.agreement_id,
    teamId: r.team_id,
    status: r.status,
    licenseId: r.license_id,
    offerId: r.offer_id,
    productId: r.product_id,
    productName: r.product_name,
    buyerAccountId: r.buyer_account_id,
    sellerAccountId: r.seller_account_id,
    agreementIntent: r.agreement_intent ?? undefined,
    agreementStatus: r.agreement_status ?? undefined,
    acceptanceTime: asDate(r.acceptance_time),
    startTime: asDate(r.start_time),
    setupCompletedAt: asDate(r.setup_completed_at),
    cancellationRequestedAt: asOptionalDate(r.cancellation_requested_at),
    licenseDeprovisionedAt: asOptionalDate(r.license_deprovisioned_at),
    effectiveFromHour: asDate(r.effective_from_hour),
    replacesAgreementId: r.replaces_agreement_id ?? undefined,
    replacedByAgreementId: r.replaced_by_agreement_id ?? undefined,
    reassignedFromAgreementId: r.reassigned_from_agreement_id ?? undefined,
    reassignedToAgreementId: r.reassigned_to_agreement_id ?? undefined,
    reassignedAt: asOptionalDate(r.reassigned_at),
    note: r.note ?? undefined,
    recordedAt: asDate(r.created_at),
    createdAt: asDate(r.first_created_at ?? r.created_at),
    updatedAt: asDate(r.created_at),
  };
}
const agreementViewRows = rowMapper(toAgreement);

/** Latest history row of every agreement version, with the time of its first row. */
function latestRows(db: Knex): Knex.QueryBuilder {
  const firstAndLast = db('marketplace_agreement_events').select('agreement_id').max({ max_seq: 'seq' }).min({ first_created_at: 'created_at' }).groupBy('agreement_id').as('f');
  return db('marketplace_agreement_events as e').join(firstAndLast, 'f.max_seq', 'e.seq');
}

export const agreementsStore = {
  async append(db: Knex, a: AgreementState): Promise<void> {
    await db('marketplace_agreement_events').insert({
      agreement_id: a.agreementId,
      team_id: a.teamId,
      status: a.status,
      license_id: a.licenseId,
      offer_id: a.offerId,
      product_id: a.productId,
      product_name: a.productName,
      buyer_account_id: a.buyerAccountId,
      seller_account_id: a.sellerAccountId,
      agreement_intent: a.agreementIntent ?? null,
      agreement_status: a.agreementStatus ?? null,
      acceptance_time: a.acceptanceTime,
      start_time: a.startTime,
      setup_completed_at: a.setupCompletedAt,
      cancellation_requested_at: a.cancellationRequestedAt ?? null,
      license_deprovisioned_at: a.licenseDeprovisionedAt ?? null,
      effective_from_hour: a.effectiveFromHour,
      replaces_agreement_id: a.replacesAgreementId ?? null,
      replaced_by_agreement_id: a.replacedByAgreementId ?? null,
      reassigned_from_agreement_id: a.reassignedFromAgreementId ?? null,
      reassigned_to_agreement_id: a.reassignedToAgreementId ?? null,
      reassigned_at: a.reassignedAt ?? null,
      note: a.note ?? null,
      created_at: a.recordedAt,
    });
  },
  async current(db: Knex, agreementId: string): Promise<AgreementView | undefined> {
    const r = (await latestRows(db).select('e.*', 'f.first_created_at').where('e.agreement_id', agreementId).first()) as AgreementViewRow | undefined;
    return agreementViewRows.one(r);
  },
  async currentInScope(db: Knex, agreementId: string, scope: TeamScope): Promise<AgreementView | undefined> {
    const r = (await whereTeamInScope(db, latestRows(db).select('e.*', 'f.first_created_at').where('e.agreement_id', agreementId), 'e.team_id', scope).first()) as AgreementViewRow | undefined;
    return agreementViewRows.one(r);
  },
  /** The team's subscription in force: its newest agreement version that is SUBSCRIBED or UNSUBSCRIBE_PENDING. */
  async activeForTeam(db: Knex, teamId: string): Promise<AgreementView | undefined> {
    const r = (await latestRows(db).select('e.*', 'f.first_created_at').where('e.team_id', teamId).whereIn('e.status', ['SUBSCRIBED', 'UNSUBSCRIBE_PENDING']).orderBy('e.seq', 'desc').first()) as
      AgreementViewRow | undefined;
    return agreementViewRows.one(r);
  },
  async page(db: Knex, scope: TeamScope, req: PageRequest): Promise<Page<AgreementView>> {
    const base = whereTeamInScope(db, latestRows(db), 'e.team_id', scope);
    const dir = req.sortDirection === 'DESC' ? 'desc' : 'asc';
    const rows = (await base
      .clone()
      .select('e.*', 'f.first_created_at')
      .orderBy([
        { column: req.sortBy === 'updatedAt' ? 'e.created_at' : 'f.first_created_at', order: dir },
        { column: 'e.seq', order: dir },
      ])
      .limit(req.pageSize)
      .offset(req.pageNumber * req.pageSize)) as AgreementViewRow[];
    const [{ n }] = (await base.clone().count({ n: '*' })) as [{ n: DbInt }];
    return pageOf(req, int(n), agreementViewRows.many(rows));
  },
  /** Whether the team has cloud-marketplace records: agreement history rows or credits usage. */
  async hasMarketplaceHistory(db: Knex, teamId: string): Promise<boolean> {
    if (await db('marketplace_agreement_events').where({ team_id: teamId }).first('seq')) return true;
    return Boolean(await db('credits_usage').where({ team_id: teamId }).first('seq'));
  },
  /** When the team was first linked to an agreement. */
  async firstLinkAt(db: Knex, teamId: string): Promise<Date | undefined> {
    const [r] = await db('marketplace_agreement_events').min({ at: 'created_at' }).where({ team_id: teamId });
    return r?.at === null || r?.at === undefined ? undefined : asDate(r.at);
  },
};
