/**
 * Users, teams and memberships: bootstrap of an empty installation, Basic authentication with
 * lockout, team selection rules, and the operations behind the admin CLI.
 */
import { randomUUID } from 'node:crypto';
import { lockNamed, type Db } from '../../db/database';
import type { Clock } from '../../shared/clock';
import { ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from '../../shared/errors';
import type { PageRequest } from '../../shared/paging';
import { assertValidName } from '../../shared/names';
import { decoyHash, generatePassword, hashPassword, verifyPassword } from '../../security/passwords';
import { BillingType, Team, User, teamsStore, usersStore } from './accounts.store';
import type { TeamScope } from './team-scope';
import { TransactionalService } from '../../db/transactional';

/** How often a sign-in waiting for password checks in other processes looks again. */
const CHECK_POLL_MS = 25;
/** How long a sign-in waits for running password checks before counting them as failed. */
const CHECK_WAIT_MS = 10_000;

/** Runs in the transaction that creates a team (the projects feature gives it its Default Project). */
export type TeamCreatedHook = (db: Db, team: Team) => Promise<void>;

/** The owner user created on the first start. */
export interface FirstOwner {
  userId: string;
  teamId: string;
  email: string;
  /** Set when no password was configured: to be shown once, never logged. */
  generatedPassword?: string;
}

export interface AccountsServiceOptions {
  login: { maxFailures: number; lockMinutes: number };
}

export interface AccountsServiceDeps {
  db: Db;
  clock: Clock;
  options: AccountsServiceOptions;
}

export class AccountsService extends TransactionalService {
  private readonly clock: Clock;
  private readonly options: AccountsServiceOptions;
  constructor(deps: AccountsServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.options = deps.options;
  }

  private readonly teamCreatedHooks: TeamCreatedHook[] = [];

  /** Registers work done in the same transaction as every new team. */
  onTeamCreated(hook: TeamCreatedHook): void {
    this.teamCreatedHooks.push(hook);
  }

  /**
   * On an empty database: creates the owner user, a team and its Default Project. Returns what
   * it created, with the generated password when none was configured (the caller shows it once;
   * it is never logged); undefined when the database has users already.
   */
  async bootstrap(opts: { email?: string; password?: string }): Promise<FirstOwner | undefined> {
    if ((await usersStore.count(this.db)) > 0) return undefined;
    const email = opts.email ?? 'owner@vidmill.local';
    const password = opts.password ?? generatePassword();
    const passwordHash = await hashPassword(password);
    // Processes starting together on an empty database: one makes the owner, the others find it
    // under the lock (before, the second insert of the owner's e-mail failed its start).
    const created = await this.transactional(async (trx) => {
      await lockNamed(trx, 'vidmill.bootstrap');
      if ((await usersStore.count(trx)) > 0) return undefined;
      return this.insertUserWithTeam(trx, { email, passwordHash, name: 'Owner', teamName: 'My team' });
    });
    if (!created) return undefined;
    return { userId: created.user.id, teamId: created.team.id, email: created.user.email, ...(opts.password ? {} : { generatedPassword: password }) };
  }

  async createUserWithTeam(input: { email: string; password: string; name: string; teamName: string; billingType?: BillingType }): Promise<{ user: User; team: Team }> {
    const passwordHash = await hashPassword(input.password);
    return this.transactional((trx) => this.insertUserWithTeam(trx, { ...input, passwordHash }));
  }

  private async insertUserWithTeam(trx: Db, input: { email: string; passwordHash: string; name: string; teamName: string; billingType?: BillingType }): Promise<{ user: User; team: Team }> {
    const user = await this.insertUser(trx, input.email, input.name, input.passwordHash);
    const team = await this.insertTeam(trx, input.teamName, input.billingType ?? 'WALLET');
    await teamsStore.addMember(trx, team.id, user.id, 'owner', this.clock.now());
    return { user, team };
  }

  async createUser(input: { email: string; password: string; name: string }): Promise<User> {
    const passwordHash = await hashPassword(input.password);
    return this.insertUser(this.db, input.email, input.name, passwordHash);
  }

  async createTeam(input: { name: string; billingType?: BillingType; apiEnabled?: boolean; ownerEmail?: string }): Promise<Team> {
    return this.transactional(async (trx) => {
      const team = await this.insertTeam(trx, input.name, input.billingType ?? 'WALLET', input.apiEnabled ?? true);
      if (input.ownerEmail) {
        const owner = await usersStore.byEmail(trx, input.ownerEmail);
        if (!owner) throw new NotFoundError(`No user with e-mail ${input.ownerEmail}`, 'NOT_FOUND');
        await teamsStore.addMember(trx, team.id, owner.id, 'owner', this.clock.now());
      }
      return team;
    });
  }

  async addMember(teamId: string, email: string, role: 'owner' | 'member' = 'member'): Promise<void> {
    const user = await usersStore.byEmail(this.db, email);
    if (!user) throw new NotFoundError(`No user with e-mail ${email}`, 'NOT_FOUND');
    if (!(await teamsStore.byId(this.db, teamId))) throw new NotFoundError(`No team ${teamId}`, 'TEAM_NOT_FOUND');
    await teamsStore.addMember(this.db, teamId, user.id, role, this.clock.now());
  }

  /** Every team with its members (admin CLI: where a top-up's team id comes from). */
  async listTeams(): Promise<Array<Team & { members: Array<{ email: string; role: 'owner' | 'member' }> }>> {
    const [teams, memberships] = await Promise.all([teamsStore.all(this.db), teamsStore.allMemberships(this.db)]);
    return teams.map((t) => ({ ...t, members: memberships.filter((m) => m.teamId === t.id).map(({ email, role }) => ({ email, role })) }));
  }

  /** Every user with the teams they belong to (admin CLI). */
  async listUsers(): Promise<Array<User & { teams: Array<{ teamId: string; role: 'owner' | 'member' }> }>> {
    const [users, memberships] = await Promise.all([usersStore.all(this.db), teamsStore.allMemberships(this.db)]);
    return users.map((u) => ({ ...u, teams: memberships.filter((m) => m.userId === u.id).map(({ teamId, role }) => ({ teamId, role })) }));
  }

  async updateTeam(teamId: string, changes: { name?: string; apiEnabled?: boolean; billingType?: BillingType }): Promise<void> {
    if (changes.name !== undefined) assertValidName('name', changes.name);
    if (!(await teamsStore.byId(this.db, teamId))) throw new NotFoundError(`No team ${teamId}`, 'TEAM_NOT_FOUND');
    await teamsStore.update(this.db, teamId, changes, this.clock.now());
  }

  async resetPassword(email: string, password?: string): Promise<string> {
    const user = await usersStore.byEmail(this.db, email);
    if (!user) throw new NotFoundError(`No user with e-mail ${email}`, 'NOT_FOUND');
    const next = password ?? generatePassword();
    await usersStore.setPassword(this.db, user.id, await hashPassword(next), this.clock.now());
    return next;
  }

  /**
   * HTTP Basic authentication with the sign-in lock (docs/security.md, "Sign-in limits"). The
   * check is claimed in the database before the password is verified, so no more than
   * `maxFailures` passwords are ever verified for an e-mail between two successful sign-ins,
   * however many requests arrive at once and in however many processes. The lock is set by
   * failures: a wrong password checked while every check of the budget is claimed locks the
   * e-mail for `lockMinutes`. A sign-in that finds the budget claimed by checks still running
   * waits for their outcome (`awaitChecks`) instead of being refused, so any number of
   * simultaneous sign-ins with the right password succeed. A locked e-mail is refused
   * (`ACCOUNT_LOCKED`) without verifying the password, the right one included. A success clears
   * the count and the lock. An unknown e-mail costs one verification, as a known one.
   */
  async authenticateBasic(email: string, password: string): Promise<User> {
    const user = await usersStore.byEmail(this.db, email);
    if (!user) {
      await this.checkPassword(password, await decoyHash());
      throw new UnauthorizedError('INVALID_CREDENTIALS', 'Invalid e-mail or password');
    }
    if (!(await this.claimCheck(user.id))) {
      const lockedUntil = (await usersStore.byId(this.db, user.id))?.lockedUntil;
      throw new UnauthorizedError('ACCOUNT_LOCKED', `Too many failed sign-ins; try again after ${(lockedUntil ?? this.clock.now()).toISOString()}`);
    }
    try {
      if (!(await this.checkPassword(password, user.passwordHash))) {
        await usersStore.lockIfChecksSpent(this.db, user.id, this.options.login.maxFailures, this.lockUntil());
        throw new UnauthorizedError('INVALID_CREDENTIALS', 'Invalid e-mail or password');
      }
      await usersStore.clearFailedLogins(this.db, user.id);
      return user;
    } finally {
      this.checkEnded(user.id);
    }
  }

  /** False when the e-mail is locked. Waits while the budget is claimed by checks still running. */
  private async claimCheck(userId: string): Promise<boolean> {
    const { maxFailures } = this.options.login;
    const giveUpAt = Date.now() + CHECK_WAIT_MS;
    for (;;) {
      const claim = await usersStore.claimPasswordCheck(this.db, userId, this.clock.now(), maxFailures);
      if (claim !== 'busy') return claim === 'claimed';
      if (Date.now() >= giveUpAt) {
        // Checks that run this long belong to a process that died: count them as failed.
        await usersStore.lockIfChecksSpent(this.db, userId, maxFailures, this.lockUntil());
        return false;
      }
      await this.awaitChecks(userId);
    }
  }

  private lockUntil(): Date {
    return new Date(this.clock.now().getTime() + this.options.login.lockMinutes * 60_000);
  }

  private readonly checkWaiters = new Map<string, Set<() => void>>();

  /**
   * Waits until a password check of the user in this process ends, or a short poll interval
   * for checks in other processes (tests wrap it to see who waits).
   */
  awaitChecks(userId: string): Promise<void> {
    return new Promise((resolve) => {
      let waiters = this.checkWaiters.get(userId);
      if (!waiters) this.checkWaiters.set(userId, (waiters = new Set()));
      const set = waiters;
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0 && this.checkWaiters.get(userId) === set) this.checkWaiters.delete(userId);
        resolve();
      };
      const timer = setTimeout(done, CHECK_POLL_MS);
      set.add(done);
    });
  }

  private checkEnded(userId: string): void {
    for (const wake of [...(this.checkWaiters.get(userId) ?? [])]) wake();
  }

  /** Verifies a password against a stored hash (scrypt): every sign-in's one expensive step. */
  checkPassword(password: string, passwordHash: string): Promise<boolean> {
    return verifyPassword(password, passwordHash);
  }

  async user(userId: string): Promise<User> {
    const user = await usersStore.byId(this.db, userId);
    if (!user) throw new UnauthorizedError('INVALID_CREDENTIALS', 'The user of this credential no longer exists');
    return user;
  }

  async defaultTeam(userId: string): Promise<Team> {
    const team = await teamsStore.defaultTeam(this.db, userId);
    if (!team) throw new ForbiddenError('DEFAULT_TEAM_NOT_API_ENABLED', 'None of your teams is enabled for API use');
    return team;
  }

  /** The team an operation acts on: `selectTeamId`, else the user's default team. */
  async selectTeam(userId: string, selectTeamId?: string): Promise<Team> {
    if (!selectTeamId) return this.defaultTeam(userId);
    return this.accessibleTeam(userId, selectTeamId);
  }

  /** A list filter: one team (`teamId`) or every API-enabled team of the user. */
  async listScope(userId: string, teamId?: string): Promise<TeamScope> {
    if (!teamId) return { memberUserId: userId };
    await this.accessibleTeam(userId, teamId);
    return { teamId };
  }

  /**
   * A team the user may act on. A team that does not exist gets the same answer as a team of
   * someone else (403 FORBIDDEN, same message), so no caller can probe which team ids exist.
   */
  private async accessibleTeam(userId: string, teamId: string): Promise<Team> {
    const team = await teamsStore.memberTeam(this.db, userId, teamId);
    if (!team) throw new ForbiddenError('FORBIDDEN', `You are not a member of team ${teamId}`);
    if (!team.apiEnabled) throw new ForbiddenError('ACCESS_DENIED', `Team ${teamId} is not enabled for API use`);
    return team;
  }

  /** A team the user belongs to (any team of another user is 404). */
  async teamOfMember(userId: string, teamId: string): Promise<Team> {
    const team = await teamsStore.memberTeam(this.db, userId, teamId);
    if (!team) throw new NotFoundError('Team not found', 'TEAM_NOT_FOUND');
    return team;
  }

  teamsOfMember(userId: string, req: PageRequest) {
    return teamsStore.pageForUser(this.db, userId, req);
  }

  private async insertUser(db: Db, email: string, name: string, passwordHash: string): Promise<User> {
    if (await usersStore.byEmail(db, email)) throw new ConflictError('CONFLICT', `A user with e-mail ${email} exists`);
    const now = this.clock.now();
    const user = { id: randomUUID(), email: email.toLowerCase(), name, passwordHash, hasConfirmedEmail: true, createdAt: now };
    await usersStore.insert(db, user);
    return { ...user, failedLogins: 0, updatedAt: now };
  }

  private async insertTeam(db: Db, name: string, billingType: BillingType, apiEnabled = true): Promise<Team> {
    assertValidName('name', name);
    const now = this.clock.now();
    const team: Team = { id: randomUUID(), name, apiEnabled, billingType, createdAt: now, updatedAt: now };
    await teamsStore.insert(db, team);
    for (const hook of this.teamCreatedHooks) await hook(db, team);
    return team;
  }
}
