/**
 * API keys: at most 2 active per user (holds under concurrent creates and activations), the
 * full key shown once, authentication by digest, and deletion after 90 days without use.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/database';
import { Clock, DAY_MS } from '../../shared/clock';
import { ConflictError, NotFoundError, UnauthorizedError } from '../../shared/errors';
import type { PageRequest } from '../../shared/paging';
import { digestApiKey, generateApiKey, looksLikeApiKey } from '../../security/api-key-token';
import { ApiKeyRecord, apiKeysStore } from './api-keys.store';

export const MAX_ACTIVE_API_KEYS = 2;
export const API_KEY_IDLE_DAYS = 90;

export interface ApiKeyView extends ApiKeyRecord {
  /** Earliest date (UTC, YYYY-MM-DD) on which the key may be deleted if unused until then. */
  deletionEligibleAt: string;
}

const utcDay = (d: Date) => d.toISOString().slice(0, 10);

export class ApiKeysService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  private view(k: ApiKeyRecord): ApiKeyView {
    const lastUse = k.lastUsedAt ?? k.createdAt;
    return { ...k, deletionEligibleAt: utcDay(new Date(lastUse.getTime() + API_KEY_IDLE_DAYS * DAY_MS)) };
  }

  async create(userId: string, input: { name: string; description?: string; active: boolean }): Promise<{ key: ApiKeyView; secret: string }> {
    const secret = generateApiKey();
    const now = this.clock.now();
    const record: ApiKeyRecord = {
      id: randomUUID(),
      userId,
      name: input.name,
      description: input.description,
      active: input.active,
      lastChars: secret.slice(-3),
      keyLength: secret.length,
      createdAt: now,
      updatedAt: now,
    };
    await this.db.transaction(async (trx) => {
      await apiKeysStore.lockUser(trx, userId);
      if (input.active) await this.assertRoomForActiveKey(trx, userId);
      await apiKeysStore.insert(trx, { ...record, digest: digestApiKey(secret) });
    });
    return { key: this.view(record), secret };
  }

  async list(userId: string, req: PageRequest) {
    const page = await apiKeysStore.page(this.db, userId, req);
    return { ...page, items: page.items.map((k) => this.view(k)) };
  }

  async get(userId: string, id: string): Promise<ApiKeyView> {
    return this.view(await this.find(this.db, userId, id));
  }

  async patch(userId: string, id: string, changes: { name?: string; description?: string }): Promise<ApiKeyView> {
    const key = await this.find(this.db, userId, id);
    const now = this.clock.now();
    await apiKeysStore.update(this.db, id, changes, now);
    return this.view({ ...key, ...changes, updatedAt: now });
  }

  async activate(userId: string, id: string): Promise<ApiKeyView> {
    return this.db.transaction(async (trx) => {
      await apiKeysStore.lockUser(trx, userId);
      const key = await this.find(trx, userId, id);
      if (key.active) return this.view(key);
      await this.assertRoomForActiveKey(trx, userId);
      const now = this.clock.now();
      await apiKeysStore.update(trx, id, { active: true }, now);
      return this.view({ ...key, active: true, updatedAt: now });
    });
  }

  async deactivate(userId: string, id: string): Promise<ApiKeyView> {
    const key = await this.find(this.db, userId, id);
    if (!key.active) return this.view(key);
    const now = this.clock.now();
    await apiKeysStore.update(this.db, id, { active: false }, now);
    return this.view({ ...key, active: false, updatedAt: now });
  }

  async delete(userId: string, id: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      const key = await this.find(trx, userId, id);
      if (key.active) throw new ConflictError('ACTIVE_API_KEY_CANNOT_BE_DELETED', 'Deactivate the API key before deleting it');
      await apiKeysStore.delete(trx, id);
    });
  }

  /**
   * Authenticates an `X-API-Key` value: one indexed lookup by SHA-256 digest. The last use is
   * written at most once per key and UTC day (the 90-day rule counts whole days).
   */
  async authenticate(secret: string): Promise<{ userId: string; apiKeyId: string }> {
    const key = looksLikeApiKey(secret) ? await apiKeysStore.activeByDigest(this.db, digestApiKey(secret)) : undefined;
    if (!key) throw new UnauthorizedError('INVALID_API_KEY', 'The API key is invalid or inactive');
    const now = this.clock.now();
    if (!key.lastUsedAt || utcDay(key.lastUsedAt) !== utcDay(now)) await apiKeysStore.recordUse(this.db, key.id, now);
    return { userId: key.userId, apiKeyId: key.id };
  }

  /** Deletes every key whose deletionEligibleAt date has come. Returns how many. */
  async sweepIdleKeys(): Promise<number> {
    const today = new Date(utcDay(this.clock.now()) + 'T00:00:00.000Z');
    // eligible when date(lastUse + 90d) <= today, i.e. lastUse < today - 89d (start of day)
    const cutoff = new Date(today.getTime() - (API_KEY_IDLE_DAYS - 1) * DAY_MS - 1);
    return apiKeysStore.deleteUnusedSince(this.db, cutoff);
  }

  private async find(db: Db, userId: string, id: string): Promise<ApiKeyRecord> {
    const key = await apiKeysStore.byIdOfUser(db, id, userId);
    if (!key) throw new NotFoundError('API key not found');
    return key;
  }

  private async assertRoomForActiveKey(db: Db, userId: string): Promise<void> {
    if ((await apiKeysStore.countActive(db, userId)) >= MAX_ACTIVE_API_KEYS) {
      throw new ConflictError('MAXIMUM_AMOUNT_OF_ACTIVE_API_KEYS_REACHED', `A user may hold at most ${MAX_ACTIVE_API_KEYS} active API keys`);
    }
  }
}
