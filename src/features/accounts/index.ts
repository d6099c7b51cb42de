/** Accounts: users, teams, membership and sign-in. What other features and the composition root may use. */
export { accountsHandlers } from './accounts.handlers';
export { AccountsService } from './accounts.service';
export type { TeamCreatedHook } from './accounts.service';
export type { BillingType, Team, TeamChoice, TeamRow } from './accounts.store';
export { chosenTeamQuery, findTeam, setTeamBillingType, teamFromRow } from './team-records';
export { firstStartNotice } from './first-start-notice';
export { TeamScope, teamScopeSql, whereTeamInScope } from './team-scope';
