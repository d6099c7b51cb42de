/** SQL for users, teams and memberships. */
import type { Knex } from 'knex';
import { asBool, asDate, asOptionalDate, readRows } from '../../db/database';
import type { PageRequest } from '../../shared/paging';
import { fetchPage } from '../../shared/paging';
import { DbBool, DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export interface User {
  id: string;
  email: string;
  name: string;
  passwordHash: string;
  hasConfirmedEmail: boolean;
  failedLogins: number;
  lockedUntil?: Date;
  createdAt: Date;
  updatedAt: Date;
}

export type BillingType = 'WALLET' | 'CLOUD_MARKETPLACE';

export interface Team {
  id: string;
  name: string;
  apiEnabled: boolean;
  billingType: BillingType;
  createdAt: Date;
  updatedAt: Date;
}

/** A row as the drivers return it (see src/db/store.ts). */
interface UserRow {
  id: string;
  email: string;
  name: string;
  password_hash: string;
  has_confirmed_email: DbBool;
  failed_logins: DbInt;
  locked_until: Nullable<DbTimestamp>;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

function toUser(r: UserRow): User {
  return {
    id: r.id,
    email: r.email,
    name: r.name,
    passwordHash: r.password_hash,
    hasConfirmedEmail: asBool(r.has_confirmed_email),
    failedLogins: Number(r.failed_logins),
    lockedUntil: asOptionalDate(r.locked_until),
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}
const userRows = rowMapper(toUser);

/** A membership as the admin lists show it. */
export interface MembershipRow {
  teamId: string;
  userId: string;
  email: string;
  role: 'owner' | 'member';
}

/** A row as the drivers return it (see src/db/store.ts). */
export interface TeamRow {
  id: string;
  name: string;
  api_enabled: DbBool;
  billing_type: BillingType;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

export function toTeam(r: TeamRow): Team {
  return {
    id: r.id,
    name: r.name,
    apiEnabled: asBool(r.api_enabled),
    billingType: r.billing_type,
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}
const teamRows = rowMapper(toTeam);

export const usersStore = {
  async count(db: Knex): Promise<number> {
    const [{ n }] = (await db('users').count({ n: '*' })) as [{ n: DbInt }];
    return Number(n);
  },
  async byId(db: Knex, id: string): Promise<User | undefined> {
    const r = (await db('users').where({ id }).first()) as UserRow | undefined;
    return userRows.one(r);
  },
  async byEmail(db: Knex, email: string): Promise<User | undefined> {
    const r = (await db('users').where({ email: email.toLowerCase() }).first()) as UserRow | undefined;
    return userRows.one(r);
  },
  async insert(db: Knex, u: Pick<User, 'id' | 'email' | 'name' | 'passwordHash' | 'hasConfirmedEmail' | 'createdAt'>): Promise<void> {
    await db('users').insert({
      id: u.id,
      email: u.email.toLowerCase(),
      name: u.name,
      password_hash: u.passwordHash,
      has_confirmed_email: u.hasConfirmedEmail,
      failed_logins: 0,
      created_at: u.createdAt,
      updated_at: u.createdAt,
    });
  },
  async setPassword(db: Knex, id: string, passwordHash: string, now: Date): Promise<void> {
    await db('users').where({ id }).update({ password_hash: passwordHash, failed_logins: 0, locked_until: null, updated_at: now });
  },
  /**
   * Claims one password check for the user before the password is verified: one guarded
   * UPDATE, so concurrent sign-ins in any number of processes cannot claim more than
   * `maxChecks` between two successes. `failed_logins` counts the checks claimed since the last
   * success: the failed ones and those still running.
   *
   * - `claimed`: counted. After a lock that has passed, the count starts again at 1.
   * - `locked`: `locked_until` is after `now`; nothing changes.
   * - `busy`: `maxChecks` checks are claimed and not all have failed (some are still running),
   *   so the e-mail is not locked: the caller waits for their outcome (a success frees the
   *   budget, the failures lock it) instead of being refused.
   */
  async claimPasswordCheck(db: Knex, id: string, now: Date, maxChecks: number): Promise<'claimed' | 'locked' | 'busy'> {
    const updated = await db('users')
      .where({ id })
      .andWhere((q) => {
        void q
          .where((free) => {
            void free.whereNull('locked_until').andWhere('failed_logins', '<', maxChecks);
          })
          .orWhere('locked_until', '<=', now);
      })
      .update({
        failed_logins: db.raw('case when locked_until is null then failed_logins + 1 else 1 end'),
        locked_until: null,
      });
    if (updated === 1) return 'claimed';
    const row: { locked_until: Date | string | number | null } | undefined = await db('users').where({ id }).first('locked_until');
    return row?.locked_until != null ? 'locked' : 'busy';
  },
  /**
   * After a wrong password: locks the user until `lockUntil` when all `maxChecks` checks are
   * claimed (this failure was among them), unless a lock is already set. The check stays
   * counted. `lockUntil` is also how a caller that waited too long for `busy` checks counts
   * them as failed (their process may have died).
   */
  async lockIfChecksSpent(db: Knex, id: string, maxChecks: number, lockUntil: Date): Promise<void> {
    await db('users').where({ id }).whereNull('locked_until').andWhere('failed_logins', '>=', maxChecks).update({ locked_until: lockUntil });
  },
  /** After a successful sign-in: no checks counted, no lock (a wrong password checked at the same time may have set it). */
  async clearFailedLogins(db: Knex, id: string): Promise<void> {
    await db('users').where({ id }).andWhere('failed_logins', '>', 0).update({ failed_logins: 0, locked_until: null });
  },
  /** Every user, oldest first (admin CLI). */
  async all(db: Knex): Promise<User[]> {
    return userRows.many(await db('users').orderBy([{ column: 'created_at' }, { column: 'id' }]));
  },
};

export const teamsStore = {
  async insert(db: Knex, t: Pick<Team, 'id' | 'name' | 'apiEnabled' | 'billingType' | 'createdAt'>): Promise<void> {
    await db('teams').insert({
      id: t.id,
      name: t.name,
      api_enabled: t.apiEnabled,
      billing_type: t.billingType,
      created_at: t.createdAt,
      updated_at: t.createdAt,
    });
  },
  async byId(db: Knex, id: string): Promise<Team | undefined> {
    const r = (await db('teams').where({ id }).first()) as TeamRow | undefined;
    return teamRows.one(r);
  },
  async update(db: Knex, id: string, changes: Partial<Pick<Team, 'name' | 'apiEnabled' | 'billingType'>>, now: Date): Promise<void> {
    await db('teams')
      .where({ id })
      .update({
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.apiEnabled !== undefined ? { api_enabled: changes.apiEnabled } : {}),
        ...(changes.billingType !== undefined ? { billing_type: changes.billingType } : {}),
        updated_at: now,
      });
  },
  async addMember(db: Knex, teamId: string, userId: string, role: 'owner' | 'member', now: Date): Promise<void> {
    await db('memberships').insert({ team_id: teamId, user_id: userId, role, created_at: now }).onConflict(['team_id', 'user_id']).ignore();
  },
  /** The team if the user is a member of it. */
  async memberTeam(db: Knex, userId: string, teamId: string): Promise<Team | undefined> {
    const q = teamChoiceSql({ userId, teamId });
    const [r] = (await readRows(db, q.sql, q.bindings)) as TeamRow[];
    return teamRows.one(r);
  },
  /** The user's oldest API-enabled team. */
  async defaultTeam(db: Knex, userId: string): Promise<Team | undefined> {
    const q = teamChoiceSql({ userId });
    const [r] = (await readRows(db, q.sql, q.bindings)) as TeamRow[];
    return teamRows.one(r);
  },
  pageForUser(db: Knex, userId: string, req: PageRequest) {
    const base = db('teams').join('memberships', 'memberships.team_id', 'teams.id').where('memberships.user_id', userId);
    return fetchPage(base, req, teamRows.from, 'teams');
  },
  /** Every team, oldest first (admin CLI). */
  async all(db: Knex): Promise<Team[]> {
    return teamRows.many(await db('teams').orderBy([{ column: 'created_at' }, { column: 'id' }]));
  },
  /** Every membership with the member's e-mail (admin CLI). */
  async allMemberships(db: Knex): Promise<MembershipRow[]> {
    const rows: { team_id: string; user_id: string; email: string; role: MembershipRow['role'] }[] = await db('memberships')
      .join('users', 'users.id', 'memberships.user_id')
      .orderBy([{ column: 'memberships.created_at' }, { column: 'users.email' }])
      .select('memberships.team_id', 'memberships.user_id', 'users.email', 'memberships.role');
    return rows.map((r) => ({ teamId: r.team_id, userId: r.user_id, email: r.email, role: r.role }));
  },
};

/**
 * Which team an operation acts on: `teamId` when the user is a member of it (API-enabled or
 * not: the caller tells the cases apart), else the user's default team, the oldest API-enabled
 * team (created_at, then id). Without `teamId`, a user without an API-enabled team has none.
 */
export interface TeamChoice {
  userId: string;
  teamId?: string;
}

/** The team columns `toTeam` reads. */
export const TEAM_COLUMNS = ['id', 'name', 'api_enabled', 'billing_type', 'created_at', 'updated_at'] as const;

/**
 * SQL for the chosen team (at most one row of TEAM_COLUMNS), one indexed lookup through
 * memberships (user_id); also used as a subquery where the team is resolved in the same
 * statement as what is read for it.
 */
export function teamChoiceSql(choice: TeamChoice): { sql: string; bindings: Knex.RawBinding[] } {
  const cols = TEAM_COLUMNS.map((c) => `teams.${c}`).join(', ');
  const from = `select ${cols} from teams inner join memberships on memberships.team_id = teams.id where memberships.user_id = ?`;
  return choice.teamId !== undefined
    ? { sql: `${from} and teams.id = ? limit 1`, bindings: [choice.userId, choice.teamId] }
    : { sql: `${from} and teams.api_enabled = ? order by teams.created_at asc, teams.id asc limit 1`, bindings: [choice.userId, true] };
}

/** Subquery: ids of the API-enabled teams a user belongs to (for list filters). */
export function apiTeamIdsOf(db: Knex, userId: string): Knex.QueryBuilder {
  return db('memberships').join('teams', 'teams.id', 'memberships.team_id').where({ 'memberships.user_id': userId, 'teams.api_enabled': true }).select('memberships.team_id');
}
