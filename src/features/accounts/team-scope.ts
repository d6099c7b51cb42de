/**
 * Which teams a request may touch. Owner/scope selection (`selectTeamId`) resolves to one team;
 * list filters (`teamId`) resolve to one team or to every API-enabled team of the caller.
 */
import type { Knex } from 'knex';
import { apiTeamIdsOf } from './accounts.store';

export type TeamScope = { teamId: string } | { memberUserId: string };

/** Restricts `query` to rows whose `column` is a team in scope. */
export function whereTeamInScope(db: Knex, query: Knex.QueryBuilder, column: string, scope: TeamScope): Knex.QueryBuilder {
  return 'teamId' in scope ? query.where(column, scope.teamId) : query.whereIn(column, apiTeamIdsOf(db, scope.memberUserId));
}
