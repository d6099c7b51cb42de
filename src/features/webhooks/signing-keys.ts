/**
 * Webhook signing keys: ECDSA P-256, private halves sealed at rest with the master key.
 *
 * A key is published before it signs. Rotation (the periodic task when the signing key's period
 * is nearly over, or the admin command) inserts the next key with `activates_at` at least the
 * publish-ahead time in the future, and in the same transaction sets the signing key's
 * `retired_at` to that instant and `expires_at` to it plus the grace period. From then on every
 * state follows from the clock, so every process switches at the same instant without another
 * write:
 *
 *   pending   now < activates_at                    listed with activatesAt and expiresAt
 *   signing   activates_at <= now < retired_at      listed without expiresAt (the only one)
 *   replaced  retired_at <= now < expires_at        listed with expiresAt
 *   gone      expires_at <= now                     404, deleted by the sweep
 *
 * The list is oldest first. Clients built like the reference client keep the key without
 * `expiresAt` as the signing key and the last key with `expiresAt` as the other one; in this
 * order that is the pending key while one is published, else the most recently replaced key.
 * A pending key carries `expiresAt` (activation plus grace, a time it surely verifies until) so
 * that exactly one listed key lacks it: the one that signs now. See docs/webhooks.md.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, randomUUID } from 'node:crypto';
import { exportJWK } from 'jose';
import type { Knex } from 'knex';
import { asDate, asOptionalDate, Db, lockNamed } from '../../db/database';
import type { SecretBox } from '../../security/secret-box';
import { Clock, DAY_MS } from '../../shared/clock';
import { NotFoundError } from '../../shared/errors';
import { TransactionalService } from '../../db/transactional';
import { DbTimestamp, Nullable, rowMapper } from '../../db/store';

export interface SigningKeyPolicy {
  rotationDays: number;
  graceHours: number;
  /** How long a new key is listed (and in the JWKS) before it signs. */
  publishAheadMinutes: number;
}

export const DEFAULT_SIGNING_KEY_POLICY: SigningKeyPolicy = { rotationDays: 90, graceHours: 24, publishAheadMinutes: 10 };

export interface PublicKeyView {
  id: string;
  algorithm: 'EC';
  /** Standard base64 of the DER SubjectPublicKeyInfo. */
  publicKey: string;
  createdAt: Date;
  updatedAt: Date;
  /** Set on a replaced key (and on a pending one, see above); absent on the signing key. */
  expiresAt?: Date;
  /** Set only while the key is published but does not sign yet. */
  activatesAt?: Date;
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

/** What a rotation did: the next key, and whether it was already pending before this call. */
export interface Rotation {
  key: PublicKeyView;
  activatesAt: Date;
  alreadyPending: boolean;
}

const TABLE = 'webhook_signing_keys';

interface KeyRow {
  id: string;
  publicKey: string;
  privateKeySealed: string;
  activatesAt: Date;
  retiredAt?: Date;
  expiresAt?: Date;
  createdAt: Date;
  updatedAt: Date;
}

/** A row as the drivers return it (see src/db/store.ts). */
interface SigningKeyRow {
  id: string;
  public_key: string;
  private_key_sealed: string;
  activates_at: DbTimestamp;
  retired_at: Nullable<DbTimestamp>;
  expires_at: Nullable<DbTimestamp>;
  created_at: DbTimestamp;
  updated_at: DbTimestamp;
}

function toRow(r: SigningKeyRow): KeyRow {
  return {
    id: r.id,
    publicKey: r.public_key,
    privateKeySealed: r.private_key_sealed,
    activatesAt: asDate(r.activates_at),
    retiredAt: asOptionalDate(r.retired_at),
    expiresAt: asOptionalDate(r.expires_at),
    createdAt: asDate(r.created_at),
    updatedAt: asDate(r.updated_at),
  };
}
const signingKeyRows = rowMapper(toRow);

const signingKeysStore = {
  /** The newest key: the one no other key replaces yet (pending or signing). */
  async newest(db: Knex): Promise<KeyRow | undefined> {
    const r = (await db(TABLE).whereNull('retired_at').orderBy('activates_at', 'desc').first()) as SigningKeyRow | undefined;
    return signingKeyRows.one(r);
  },
  /**
   * The key that signs at `at`: the newest key whose activation has come; before the earliest
   * key's activation, the earliest key. That case is the first key of an installation seen from
   * a process whose instant is a little before its creation (processes starting together race to
   * create it and the loser's instant was taken first, or its clock is behind): nothing was
   * published before that key, so nobody can miss it, and it signs from the start.
   */
  async signerAt(db: Knex, at: Date): Promise<KeyRow | undefined> {
    const r = ((await db(TABLE)
      .where('activates_at', '<=', at)
      .orderBy([{ column: 'activates_at', order: 'desc' }, { column: 'id' }])
      .first()) ??
      (await db(TABLE)
        .orderBy([{ column: 'activates_at', order: 'asc' }, { column: 'id' }])
        .first())) as SigningKeyRow | undefined;
    return signingKeyRows.one(r);
  },
  /** Keys not past their grace period, oldest first. */
  async unexpired(db: Knex, now: Date): Promise<KeyRow[]> {
    const rows = await db(TABLE)
      .where((w) => {
        w.whereNull('expires_at').orWhere('expires_at', '>', now);
      })
      .orderBy([{ column: 'activates_at', order: 'asc' }, { column: 'id' }]);
    return signingKeyRows.many(rows);
  },
  async insert(db: Knex, k: KeyRow): Promise<void> {
    await db(TABLE).insert({
      id: k.id,
      algorithm: 'EC',
      public_key: k.publicKey,
      private_key_sealed: k.privateKeySealed,
      activates_at: k.activatesAt,
      retired_at: null,
      expires_at: null,
      created_at: k.createdAt,
      updated_at: k.updatedAt,
    });
  },
  async retire(db: Knex, id: string, at: Date, expiresAt: Date, now: Date): Promise<void> {
    await db(TABLE).where({ id }).whereNull('retired_at').update({ retired_at: at, expires_at: expiresAt, updated_at: now });
  },
  async deleteExpired(db: Knex, now: Date): Promise<number> {
    return db(TABLE).whereNotNull('expires_at').where('expires_at', '<=', now).delete();
  },
  /** Serialises key creation and rotation across processes. */
  lock(trx: Knex.Transaction): Promise<void> {
    return lockNamed(trx, 'vidmill.webhook_signing_keys');
  },
};

export interface SigningKeysDeps {
  db: Db;
  clock: Clock;
  secretBox: SecretBox;
  policy?: SigningKeyPolicy;
}

export class SigningKeys extends TransactionalService {
  private readonly clock: Clock;
  private readonly secretBox: SecretBox;
  private readonly policy: SigningKeyPolicy;
  private readonly privateKeys = new Map<string, KeyObject>();

  constructor(deps: SigningKeysDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.secretBox = deps.secretBox;
    this.policy = deps.policy ?? DEFAULT_SIGNING_KEY_POLICY;
  }

  /**
   * The key that signs at `at` (the signing instant; now by default). The key rows are read for
   * every signature, never from a cache: another process (the admin command, with any
   * publish-ahead time, even 0) may have published a key that activates at any instant, and the
   * key of a signature must be the one active at that instant. Only the unsealed private keys
   * are kept, by id. The first key is created on first need.
   */
  async current(at: Date = this.clock.now()): Promise<ActiveSigningKey> {
    let row = await signingKeysStore.signerAt(this.db, at);
    if (!row) {
      await this.transactional(async (trx) => {
        await signingKeysStore.lock(trx);
        if (!(await signingKeysStore.newest(trx))) await this.insertKey(trx, at, at);
      });
      row = await signingKeysStore.signerAt(this.db, at);
      if (!row) throw new Error(`No webhook signing key is active at ${at.toISOString()}`);
    }
    let privateKey = this.privateKeys.get(row.id);
    if (!privateKey) {
      privateKey = createPrivateKey(this.secretBox.open(row.privateKeySealed, sealingContext(row.id)));
      this.privateKeys.set(row.id, privateKey);
    }
    return { id: row.id, privateKey };
  }

  /**
   * Rotation on demand (admin): publishes the next key now; it signs `publishAheadMinutes`
   * later. When a key is already pending, that key is the answer and nothing changes.
   */
  async rotate(): Promise<Rotation> {
    return (await this.publishNext(true))!;
  }

  /**
   * Rotation on schedule (periodic task): publishes the next key once the signing key's
   * rotation period is over but for the publish-ahead time, so the new key signs when the
   * period ends (or the publish-ahead time from now, when the task ran late). Undefined when
   * nothing was due (or the next key is published already).
   */
  async rotateWhenDue(): Promise<Rotation | undefined> {
    return this.publishNext(false);
  }

  /** Every key that verifies now or will sign soon, oldest first (see the top of this file). */
  async publicKeys(): Promise<PublicKeyView[]> {
    await this.current();
    const now = this.clock.now();
    return (await signingKeysStore.unexpired(this.db, now)).map((k) => this.toView(k, now));
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

  private async publishNext(onDemand: boolean): Promise<Rotation | undefined> {
    return this.transactional(async (trx): Promise<Rotation | undefined> => {
      await signingKeysStore.lock(trx);
      const now = this.clock.now();
      const newest = await signingKeysStore.newest(trx);
      if (!newest) {
        // Nothing was ever published, so nobody can miss this key: it signs at once.
        const first = await this.insertKey(trx, now, now);
        return { key: this.toView(first, now), activatesAt: first.activatesAt, alreadyPending: false };
      }
      if (newest.activatesAt > now) return onDemand ? { key: this.toView(newest, now), activatesAt: newest.activatesAt, alreadyPending: true } : undefined;
      const ahead = this.policy.publishAheadMinutes * 60_000;
      const periodEnd = newest.activatesAt.getTime() + this.policy.rotationDays * DAY_MS;
      if (!onDemand && now.getTime() < periodEnd - ahead) return undefined;
      // Later than the key it replaces, even within its first millisecond: one key signs at each instant.
      const activatesAt = new Date(Math.max(onDemand ? now.getTime() + ahead : Math.max(now.getTime() + ahead, periodEnd), newest.activatesAt.getTime() + 1));
      await signingKeysStore.retire(trx, newest.id, activatesAt, new Date(activatesAt.getTime() + this.graceMs()), now);
      const next = await this.insertKey(trx, now, activatesAt);
      return { key: this.toView(next, now), activatesAt, alreadyPending: false };
    });
  }

  private graceMs(): number {
    return this.policy.graceHours * 3_600_000;
  }

  private async insertKey(trx: Knex, now: Date, activatesAt: Date): Promise<KeyRow> {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const id = randomUUID();
    const row: KeyRow = {
      id,
      publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
      privateKeySealed: this.secretBox.seal(privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, sealingContext(id)),
      activatesAt,
      createdAt: now,
      updatedAt: now,
    };
    await signingKeysStore.insert(trx, row);
    return row;
  }

  private toView(k: KeyRow, now: Date): PublicKeyView {
    const view: PublicKeyView = { id: k.id, algorithm: 'EC', publicKey: k.publicKey, createdAt: k.createdAt, updatedAt: k.updatedAt };
    if (k.activatesAt > now) return { ...view, activatesAt: k.activatesAt, expiresAt: new Date(k.activatesAt.getTime() + this.graceMs()) };
    if (k.retiredAt && k.retiredAt <= now) return { ...view, expiresAt: k.expiresAt };
    return view;
  }
}

/** Binds a sealed private key to its key id. */
export function sealingContext(keyId: string): string {
  return `webhook-signing-key:${keyId}`;
}
