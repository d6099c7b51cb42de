import type { components } from '../../../generated/api';
import type { HandlerMap } from '../../http/operations';
import { pageRequest } from '../../shared/paging';
import type { AccountsService } from './accounts.service';
import type { Team, User } from './accounts.store';

export function teamDto(t: Team): components['schemas']['Team'] {
  return {
    id: t.id,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
    name: t.name,
    apiEnabled: t.apiEnabled,
    billingType: t.billingType,
  };
}

function userDto(u: User): components['schemas']['User'] {
  return {
    id: u.id,
    createdAt: u.createdAt.toISOString(),
    updatedAt: u.updatedAt.toISOString(),
    email: u.email,
    name: u.name,
    hasConfirmedEmail: u.hasConfirmedEmail,
  };
}

export function accountsHandlers(accounts: AccountsService) {
  return {
    async getAccount({ principal }) {
      const [user, team] = await Promise.all([accounts.user(principal.userId), accounts.defaultTeam(principal.userId)]);
      return { status: 200, body: { user: userDto(user), defaultTeam: teamDto(team) } };
    },
    async getTeams({ principal, query }) {
      const page = await accounts.teamsOfMember(principal.userId, pageRequest(query));
      return { status: 200, body: { ...page, items: page.items.map(teamDto) } };
    },
    async getTeamById({ principal, path }) {
      return { status: 200, body: teamDto(await accounts.teamOfMember(principal.userId, path.id)) };
    },
  } satisfies HandlerMap<'getAccount' | 'getTeams' | 'getTeamById'>;
}
