/**
 * Processing configurations: a team's saved options (validated like a processing start) and the
 * built-in ones every team can use, which cannot be deleted. Configurations never change after
 * creation, so a processed video's options stay what they were.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/database';
import type { Clock } from '../../shared/clock';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { PageRequest } from '../../shared/paging';
import type { AccountsService } from '../accounts';
import { BuiltInMode, configurationsStore, ProcessingConfiguration } from './configurations.store';
import { TransactionalService } from '../../db/transactional';

export interface BuiltInConfiguration {
  id: string;
  name: string;
  description: string;
  options: Record<string, unknown>;
}

/** A configuration as shown to a caller: built-ins appear in the caller's team. */
export interface ShownConfiguration extends ProcessingConfiguration {
  teamId: string;
}

export interface ConfigurationsServiceDeps {
  db: Db;
  clock: Clock;
  accounts: AccountsService;
  engine: { prepare(): Promise<void>; validate(options: Record<string, unknown>, fieldPrefix?: string): void };
  builtIns: readonly BuiltInConfiguration[];
}

export class ConfigurationsService extends TransactionalService {
  private readonly clock: Clock;
  private readonly accounts: AccountsService;
  private readonly engine: { prepare(): Promise<void>; validate(options: Record<string, unknown>, fieldPrefix?: string): void };
  private readonly builtIns: readonly BuiltInConfiguration[];
  constructor(deps: ConfigurationsServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.accounts = deps.accounts;
    this.engine = deps.engine;
    this.builtIns = deps.builtIns;
  }

  /** Writes the built-in configurations (at start; idempotent). */
  async ensureBuiltIns(): Promise<void> {
    const at = new Date('2026-01-01T00:00:00Z');
    await configurationsStore.upsertBuiltIns(
      this.db,
      this.builtIns.map((b) => ({ ...b, builtin: true, createdAt: at, updatedAt: at })),
    );
  }

  async create(userId: string, selectTeamId: string | undefined, input: { name: string; description?: string; options: Record<string, unknown> }): Promise<ShownConfiguration> {
    const team = await this.accounts.selectTeam(userId, selectTeamId);
    await this.engine.prepare();
    this.engine.validate(input.options, 'body.options');
    const now = this.clock.now();
    const c: ProcessingConfiguration = { id: randomUUID(), teamId: team.id, name: input.name, description: input.description, options: input.options, builtin: false, createdAt: now, updatedAt: now };
    await configurationsStore.insert(this.db, c);
    return { ...c, teamId: team.id };
  }

  async list(userId: string, teamId: string | undefined, mode: BuiltInMode, req: PageRequest) {
    const scope = await this.accounts.listScope(userId, teamId);
    const shownTeam =
      teamId ??
      (await this.accounts.defaultTeam(userId).then(
        (t) => t.id,
        () => undefined,
      ));
    const page = await configurationsStore.page(this.db, scope, mode, req);
    return { ...page, items: page.items.map((c) => this.shown(c, shownTeam)) };
  }

  /** A configuration the caller may use (a built-in or one of their teams'), else 404. */
  async get(userId: string, id: string): Promise<ShownConfiguration> {
    const c = await configurationsStore.byIdInScope(this.db, id, { memberUserId: userId });
    if (!c) throw new NotFoundError('Processing configuration not found');
    const shownTeam =
      c.teamId ??
      (await this.accounts.defaultTeam(userId).then(
        (t) => t.id,
        () => undefined,
      ));
    return this.shown(c, shownTeam);
  }

  async delete(userId: string, id: string): Promise<void> {
    const c = await this.get(userId, id);
    if (c.builtin) throw new ConflictError('BUILT_IN_CONFIGURATION_CANNOT_BE_DELETED', `${c.name} is a built-in configuration; it cannot be deleted`);
    await configurationsStore.delete(this.db, id);
  }

  private shown(c: ProcessingConfiguration, fallbackTeam: string | undefined): ShownConfiguration {
    // Built-ins belong to no team; they are shown in the team they are listed for.
    return { ...c, teamId: c.teamId ?? fallbackTeam ?? '00000000-0000-0000-0000-000000000000' };
  }
}
