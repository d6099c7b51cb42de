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

/**
 * The same restriction as SQL text for hand-written statements (`readRows`): `column` is a team
 * in scope. The member form is the subquery of `apiTeamIdsOf`, so a list stays one statement.
 */
export function teamScopeSql(column: string, scope: TeamScope): { sql: string; bindings: Knex.RawBinding[] } {
  if ('teamId' in scope) return { sql: `${column} = ?`, bindings: [scope.teamId] };
  return {
    sql: `${column} in (select memberships.team_id from memberships inner join teams on teams.id = memberships.team_id where memberships.user_id = ? and teams.api_enabled = ?)`,
    bindings: [scope.memberUserId, true],
  };
}
