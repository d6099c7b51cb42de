/**
 * What other features may read and change of a team, one named function each; the accounts
 * stores stay inside this feature. Billing's own SQL that resolves the chosen team in the same
 * statement uses the small query helper `chosenTeamQuery` and maps the row with `teamFromRow`.
 */
import type { Knex } from 'knex';
import { BillingType, Team, TeamChoice, teamChoiceSql, TeamRow, teamsStore, toTeam } from './accounts.store';

/** The team, or undefined. */
export function findTeam(db: Knex, id: string): Promise<Team | undefined> {
  return teamsStore.byId(db, id);
}

/** Records a team's new billing type (billing writes the change's history in the same transaction). */
export function setTeamBillingType(trx: Knex, teamId: string, billingType: BillingType, now: Date): Promise<void> {
  return teamsStore.update(trx, teamId, { billingType }, now);
}

/**
 * SQL for the team a user chose (at most one row of the team columns `teamFromRow` reads): for a
 * subquery or a CTE where the team is resolved in the same statement as what is read for it.
 */
export function chosenTeamQuery(choice: TeamChoice): { sql: string; bindings: Knex.RawBinding[] } {
  return teamChoiceSql(choice);
}

/** A team from a row of the team columns (`id, name, api_enabled, billing_type, created_at, updated_at`). */
export function teamFromRow(r: TeamRow): Team {
  return toTeam(r);
}
