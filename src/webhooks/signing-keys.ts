/**
 * Webhook signing keys: ECDSA P-256, created on first need, private halves sealed at rest with
 * the master key. The current key is replaced after the rotation period (or on demand); the
 * replaced key keeps verifying for the grace period and shows `expiresAt` meanwhile.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, randomUUID } from 'node:crypto';
import { exportJWK } from 'jose';
import type { Knex } from 'knex';
import { asDate, asOptionalDate, Db, isPostgres } from '../db/database';
import type { SecretBox } from '../security/secret-box';
import { Clock, DAY_MS } from '../shared/clock';
import { NotFoundError } from '../shared/errors';

export interface SigningKeyPolicy {
  rotationDays: number;
  graceHours: number;
}

export const DEFAULT_SIGNING_KEY_POLICY: SigningKeyPolicy = { rotationDays: 90, graceHours: 24 };

export interface PublicKeyView {
  id: string;
  algorithm: 'EC';
  /** Standard base64 of the DER SubjectPublicKeyInfo. */
  publicKey: string;
  createdAt: Date;
  updatedAt: Date;
  expiresAt?: Date;
}

export interface Jwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid: string;
  alg: 'ES256';
  use: 'sig';
}

export interface ActiveSigningKey {
  id: string;
  privateKey: KeyObject;
}

const TABLE = 'webhook_signing_keys';
/** Other processes may rotate; a cached key is re-read at least this often. */
const RECHECK_MS = 60_000;

interface KeyRow {
  id: string;
  publicKey: string;
  privateKeySealed: string;
  retiredAt?: Date;
  expiresAt?: Date;
  createdAt: Date;
  updatedAt: Date;
}

function toRow(r: any): KeyRow {
  return {
    id: r.id,
    publicKey: r.public_key,
    privateKeySealed: r.private_key_sealed,
    retiredAt: asOptionalDate(r.retired_at),
    expiresAt: asOptionalDate(r.expires_at),
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}

const signingKeysStore = {
  async current(db: Knex): Promise<KeyRow | undefined> {
    const r = await db(TABLE).whereNull('retired_at').orderBy('created_at', 'desc').first();
    return r && toRow(r);
  },
  async valid(db: Knex, now: Date): Promise<KeyRow[]> {
    const rows = await db(TABLE)
      .where((w) => w.whereNull('retired_at').orWhere('expires_at', '>', now))
      .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id' }]);
    return rows.map(toRow);
  },
  async insert(db: Knex, k: KeyRow): Promise<void> {
    await db(TABLE).insert({
      id: k.id,
      algorithm: 'EC',
      public_key: k.publicKey,
      private_key_sealed: k.privateKeySealed,
      retired_at: null,
      expires_at: null,
      created_at: k.createdAt,
      updated_at: k.updatedAt,
    });
  },
  async retire(db: Knex, id: string, now: Date, expiresAt: Date): Promise<void> {
    await db(TABLE).where({ id }).whereNull('retired_at').update({ retired_at: now, expires_at: expiresAt, updated_at: now });
  },
  async deleteExpired(db: Knex, now: Date): Promise<number> {
    return db(TABLE).whereNotNull('retired_at').where('expires_at', '<=', now).delete();
  },
  /** Serialises key creation and rotation across processes (SQLite has one writer anyway). */
  async lock(db: Knex): Promise<void> {
    if (isPostgres(db)) await db.raw(`select pg_advisory_xact_lock(hashtext('vidmill.webhook_signing_keys'))`);
  },
};

export class SigningKeys {
  private cached?: { key: ActiveSigningKey; recheckAt: number };

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly secretBox: SecretBox,
    private readonly policy: SigningKeyPolicy = DEFAULT_SIGNING_KEY_POLICY,
  ) {}

  /** The key that signs now; created on first need and rotated when its period is over. */
  async current(): Promise<ActiveSigningKey> {
    const now = this.clock.now().getTime();
    if (this.cached && now < this.cached.recheckAt) return this.cached.key;
    const row = await this.db.transaction(async (trx) => {
      const existing = await signingKeysStore.current(trx);
      if (existing && !this.due(existing)) return existing;
      await signingKeysStore.lock(trx);
      const again = await signingKeysStore.current(trx);
      if (again && !this.due(again)) return again;
      return this.replace(trx, again);
    });
    const key = { id: row.id, privateKey: createPrivateKey(this.secretBox.open(row.privateKeySealed, sealingContext(row.id))) };
    this.cached = { key, recheckAt: Math.min(row.createdAt.getTime() + this.rotationMs(), now + RECHECK_MS) };
    return key;
  }

  /** Rotates now (admin CLI): a new current key; the previous one enters its grace period. */
  async rotate(): Promise<PublicKeyView> {
    const row = await this.db.transaction(async (trx) => {
      await signingKeysStore.lock(trx);
      return this.replace(trx, await signingKeysStore.current(trx));
    });
    this.cached = undefined;
    return toView(row);
  }

  /** Every key that verifies now: the current one first, then keys in their grace period. */
  async publicKeys(): Promise<PublicKeyView[]> {
    await this.current();
    return (await signingKeysStore.valid(this.db, this.clock.now())).map(toView);
  }

  async publicKey(id: string): Promise<PublicKeyView> {
    const key = (await this.publicKeys()).find((k) => k.id === id);
    if (!key) throw new NotFoundError('Webhook public key not found');
    return key;
  }

  async jwks(): Promise<{ keys: Jwk[] }> {
    const keys = await this.publicKeys();
    return {
      keys: await Promise.all(
        keys.map(async (k) => {
          const jwk = await exportJWK(createPublicKey({ key: Buffer.from(k.publicKey, 'base64'), format: 'der', type: 'spki' }));
          return { kty: 'EC' as const, crv: 'P-256' as const, x: jwk.x!, y: jwk.y!, kid: k.id, alg: 'ES256' as const, use: 'sig' as const };
        }),
      ),
    };
  }

  /** Removes keys past their grace period. */
  sweepExpired(): Promise<number> {
    return signingKeysStore.deleteExpired(this.db, this.clock.now());
  }

  private due(k: KeyRow): boolean {
    return this.clock.now().getTime() >= k.createdAt.getTime() + this.rotationMs();
  }

  private rotationMs(): number {
    return this.policy.rotationDays * DAY_MS;
  }

  private async replace(trx: Knex, previous: KeyRow | undefined): Promise<KeyRow> {
    const now = this.clock.now();
    if (previous) await signingKeysStore.retire(trx, previous.id, now, new Date(now.getTime() + this.policy.graceHours * 3_600_000));
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const id = randomUUID();
    const row: KeyRow = {
      id,
      publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
      privateKeySealed: this.secretBox.seal(privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, sealingContext(id)),
      createdAt: now,
      updatedAt: now,
    };
    await signingKeysStore.insert(trx, row);
    return row;
  }
}

/** Binds a sealed private key to its key id. */
export function sealingContext(keyId: string): string {
  return `webhook-signing-key:${keyId}`;
}

function toView(k: KeyRow): PublicKeyView {
  return { id: k.id, algorithm: 'EC', publicKey: k.publicKey, createdAt: k.createdAt, updatedAt: k.updatedAt, expiresAt: k.expiresAt };
}
