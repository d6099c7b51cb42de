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
import { TransactionalService } from '../../db/transactional';

export const MAX_ACTIVE_API_KEYS = 2;
export const API_KEY_IDLE_DAYS = 90;

export interface ApiKeyView extends ApiKeyRecord {
  /** Earliest date (UTC, YYYY-MM-DD) on which the key may be deleted if unused until then. */
  deletionEligibleAt: string;
}

const utcDay = (d: Date) => d.toISOString().slice(0, 10);

/**
 * How long a successful key lookup is reused by this process. Deactivation, deletion and the
 * idle sweep clear it at once in the process that makes them; other processes (scale-out) see
 * the change within this time.
 */
export const AUTH_CACHE_MS = 5_000;
const AUTH_CACHE_SIZE = 10_000;

interface CachedKey {
  userId: string;
  apiKeyId: string;
  lastUsedDay?: string;
  /** [start, end) of lastUsedDay in epoch ms: inside it, today's use is already recorded. */
  lastUsedDayStart: number;
  lastUsedDayEnd: number;
  expiresAt: number;
}

/** Start and end (exclusive) of the UTC day `day` (YYYY-MM-DD) in epoch ms; empty when undefined. */
function dayBounds(day: string | undefined): { start: number; end: number } {
  if (!day) return { start: 0, end: 0 };
  const start = Date.parse(day + 'T00:00:00.000Z');
  return { start, end: start + DAY_MS };
}

export interface ApiKeysServiceDeps {
  db: Db;
  clock: Clock;
}

export class ApiKeysService extends TransactionalService {
  private readonly clock: Clock;
  /** SHA-256 digest -> the active key it authenticated recently. */
  private readonly authCache = new Map<string, CachedKey>();

  constructor(deps: ApiKeysServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
  }

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
    await this.transactional(async (trx) => {
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
    return this.transactional(async (trx) => {
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
    this.forgetAuthentication(id);
    return this.view({ ...key, active: false, updatedAt: now });
  }

  async delete(userId: string, id: string): Promise<void> {
    await this.transactional(async (trx) => {
      // Under the user's lock, as activate: a key activated meanwhile is seen active here.
      await apiKeysStore.lockUser(trx, userId);
      const key = await this.find(trx, userId, id);
      if (key.active) throw new ConflictError('ACTIVE_API_KEY_CANNOT_BE_DELETED', 'Deactivate the API key before deleting it');
      await apiKeysStore.delete(trx, id);
    });
    this.forgetAuthentication(id);
  }

  /**
   * The synchronous fast path of `authenticate`: the principal of a key looked up within
   * AUTH_CACHE_MS whose use today is already recorded, else undefined (then call
   * `authenticate`, which may read or write the database). Same answer as `authenticate`.
   */
  cachedPrincipal(secret: string): { userId: string; apiKeyId: string } | undefined {
    if (!looksLikeApiKey(secret)) return undefined;
    const cached = this.authCache.get(digestApiKey(secret));
    if (cached === undefined) return undefined;
    const now = this.clock.now().getTime();
    if (cached.expiresAt <= now || now < cached.lastUsedDayStart || now >= cached.lastUsedDayEnd) return undefined;
    return { userId: cached.userId, apiKeyId: cached.apiKeyId };
  }

  /**
   * Authenticates an `X-API-Key` value: one indexed lookup by SHA-256 digest, reused for
   * AUTH_CACHE_MS. The last use is written at most once per key and UTC day (the 90-day rule
   * counts whole days).
   */
  async authenticate(secret: string): Promise<{ userId: string; apiKeyId: string }> {
    if (!looksLikeApiKey(secret)) throw new UnauthorizedError('INVALID_API_KEY', 'The API key is invalid or inactive');
    const digest = digestApiKey(secret);
    const now = this.clock.now();
    let cached = this.authCache.get(digest);
    if (!cached || cached.expiresAt <= now.getTime()) {
      const key = await apiKeysStore.activeByDigest(this.db, digest);
      if (!key) {
        this.authCache.delete(digest);
        throw new UnauthorizedError('INVALID_API_KEY', 'The API key is invalid or inactive');
      }
      if (this.authCache.size >= AUTH_CACHE_SIZE) this.authCache.clear();
      const lastUsedDay = key.lastUsedAt && utcDay(key.lastUsedAt);
      const bounds = dayBounds(lastUsedDay);
      cached = { userId: key.userId, apiKeyId: key.id, lastUsedDay, lastUsedDayStart: bounds.start, lastUsedDayEnd: bounds.end, expiresAt: now.getTime() + AUTH_CACHE_MS };
      this.authCache.set(digest, cached);
    }
    const today = utcDay(now);
    if (cached.lastUsedDay !== today) {
      await apiKeysStore.recordUse(this.db, cached.apiKeyId, now);
      const bounds = dayBounds(today);
      cached.lastUsedDay = today;
      cached.lastUsedDayStart = bounds.start;
      cached.lastUsedDayEnd = bounds.end;
    }
    return { userId: cached.userId, apiKeyId: cached.apiKeyId };
  }

  private forgetAuthentication(apiKeyId?: string): void {
    for (const [digest, entry] of this.authCache) if (!apiKeyId || entry.apiKeyId === apiKeyId) this.authCache.delete(digest);
  }

  /** Deletes every key whose deletionEligibleAt date has come. Returns how many. */
  async sweepIdleKeys(): Promise<number> {
    const today = new Date(utcDay(this.clock.now()) + 'T00:00:00.000Z');
    // eligible when date(lastUse + 90d) <= today, i.e. lastUse < today - 89d (start of day)
    const cutoff = new Date(today.getTime() - (API_KEY_IDLE_DAYS - 1) * DAY_MS - 1);
    const deleted = await apiKeysStore.deleteUnusedSince(this.db, cutoff);
    if (deleted) this.forgetAuthentication();
    return deleted;
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
