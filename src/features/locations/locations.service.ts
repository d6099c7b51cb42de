/**
 * Bucket input and output locations: team rules, the outbound guard on the endpoint and the
 * HeadBucket check before any access setting is stored, and credentials sealed at rest with a
 * context that binds them to their row.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/database';
import { checkBucketEndpoint, OutboundPolicy } from '../../net/outbound-url';
import { maskSecret } from '../../security/api-key-token';
import type { SecretBox } from '../../security/secret-box';
import type { Clock } from '../../shared/clock';
import { BadRequestError, NotFoundError } from '../../shared/errors';
import { mapPage, Page, PageRequest } from '../../shared/paging';
import { BucketAccess, BucketCredentials, BucketSettings, checkBucketAccess } from '../../storage/bucket-access';
import type { AccountsService } from '../accounts';
import { Direction, LocationUpdate, locationsStore, StoredLocation, StoredSecret } from './locations.store';
import { TransactionalService } from '../../db/transactional';

export type { Direction } from './locations.store';

export interface NewLocation {
  name: string;
  bucket: string;
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
  accessKey: string;
  secretAccessKey: string;
}

export type LocationChanges = Partial<NewLocation>;

/** A location as callers see it: credentials only masked. */
export interface BucketLocation {
  id: string;
  teamId: string;
  direction: Direction;
  name: string;
  bucket: string;
  endpoint?: string;
  region?: string;
  forcePathStyle: boolean;
  accessKeyHidden: string;
  secretAccessKeyHidden: string;
  createdAt: Date;
  updatedAt: Date;
}

type CredentialField = keyof BucketCredentials;

/** Secrets shorter than this are masked entirely: three visible characters would give too much away. */
const MIN_LENGTH_WITH_VISIBLE_TAIL = 8;

export interface LocationsServiceDeps {
  db: Db;
  clock: Clock;
  accounts: AccountsService;
  secretBox: SecretBox;
  policy: OutboundPolicy;
  checkAccess?: (settings: BucketSettings) => Promise<BucketAccess>;
}

export class LocationsService extends TransactionalService {
  private readonly clock: Clock;
  private readonly accounts: AccountsService;
  private readonly secretBox: SecretBox;
  private readonly policy: OutboundPolicy;
  private readonly checkAccess: (settings: BucketSettings) => Promise<BucketAccess>;
  constructor(deps: LocationsServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.accounts = deps.accounts;
    this.secretBox = deps.secretBox;
    this.policy = deps.policy;
    this.checkAccess = deps.checkAccess ?? ((settings) => checkBucketAccess(settings, deps.policy));
  }

  async create(userId: string, direction: Direction, selectTeamId: string | undefined, input: NewLocation): Promise<BucketLocation> {
    const team = await this.accounts.selectTeam(userId, selectTeamId);
    const { accessKey, secretAccessKey } = input;
    const forcePathStyle = input.forcePathStyle ?? false;
    await this.requireAccess({ bucket: input.bucket, endpoint: input.endpoint, region: input.region, forcePathStyle, credentials: { accessKey, secretAccessKey } });
    const id = randomUUID();
    const now = this.clock.now();
    const location: StoredLocation = {
      id,
      teamId: team.id,
      direction,
      name: input.name,
      bucket: input.bucket,
      endpoint: input.endpoint,
      region: input.region,
      forcePathStyle,
      accessKey: this.seal(id, 'accessKey', accessKey),
      secretAccessKey: this.seal(id, 'secretAccessKey', secretAccessKey),
      createdAt: now,
      updatedAt: now,
    };
    await locationsStore.insert(this.db, location);
    return toView(location);
  }

  async list(userId: string, direction: Direction, teamId: string | undefined, req: PageRequest): Promise<Page<BucketLocation>> {
    const scope = await this.accounts.listScope(userId, teamId);
    return mapPage(await locationsStore.page(this.db, direction, scope, req), toView);
  }

  async get(userId: string, direction: Direction, id: string): Promise<BucketLocation> {
    return toView(await this.find(userId, direction, id));
  }

  /** Everything needed to reach the bucket of a location the user may use (video in and out). */
  async bucketSettings(userId: string, direction: Direction, id: string): Promise<BucketSettings> {
    const location = await this.find(userId, direction, id);
    return { ...accessFields(location), credentials: this.openCredentials(location) };
  }

  /** Applies the changes; a change to how the bucket is reached is checked with HeadBucket first. */
  async update(userId: string, direction: Direction, id: string, changes: LocationChanges): Promise<BucketLocation> {
    const current = await this.find(userId, direction, id);
    const settingsChange = changedAccessFields(current, changes);
    const credentialsChange = this.changedCredentials(current, changes);
    const nameChange = changes.name !== undefined && changes.name !== current.name ? { name: changes.name } : {};
    if (!Object.keys({ ...settingsChange, ...credentialsChange, ...nameChange }).length) return toView(current);

    if (Object.keys({ ...settingsChange, ...credentialsChange }).length) {
      await this.requireAccess({
        ...accessFields(current),
        ...settingsChange,
        credentials: { ...this.openCredentials(current), ...credentialsChange },
      });
    }
    const update: LocationUpdate = { ...nameChange, ...settingsChange, updatedAt: this.clock.now() };
    if (credentialsChange.accessKey !== undefined) update.accessKey = this.seal(id, 'accessKey', credentialsChange.accessKey);
    if (credentialsChange.secretAccessKey !== undefined) update.secretAccessKey = this.seal(id, 'secretAccessKey', credentialsChange.secretAccessKey);
    if (!(await locationsStore.update(this.db, direction, id, update))) throw notFound(direction);
    return toView({ ...current, ...update });
  }

  async delete(userId: string, direction: Direction, id: string): Promise<void> {
    if (!(await locationsStore.deleteInScope(this.db, direction, id, { memberUserId: userId }))) throw notFound(direction);
  }

  private async find(userId: string, direction: Direction, id: string): Promise<StoredLocation> {
    const location = await locationsStore.byIdInScope(this.db, direction, id, { memberUserId: userId });
    if (!location) throw notFound(direction);
    return location;
  }

  /** 400 INVALID_BUCKET_ENDPOINT before any connection, then HeadBucket (404 BUCKET_NOT_FOUND, 400 HEAD_BUCKET_ERROR). */
  private async requireAccess(settings: BucketSettings): Promise<void> {
    await checkBucketEndpoint(settings.endpoint, this.policy);
    const access = await this.checkAccess(settings);
    if (access.outcome === 'bucket-not-found') throw new NotFoundError(access.message, 'BUCKET_NOT_FOUND');
    if (access.outcome === 'endpoint-not-allowed') throw new BadRequestError('INVALID_BUCKET_ENDPOINT', access.message);
    if (access.outcome === 'refused') throw new BadRequestError('HEAD_BUCKET_ERROR', access.message);
  }

  private changedCredentials(current: StoredLocation, changes: LocationChanges): Partial<BucketCredentials> {
    const changed: Partial<BucketCredentials> = {};
    for (const field of ['accessKey', 'secretAccessKey'] as const) {
      const next = changes[field];
      if (next !== undefined && next !== this.open(current, field)) changed[field] = next;
    }
    return changed;
  }

  private openCredentials(location: StoredLocation): BucketCredentials {
    return { accessKey: this.open(location, 'accessKey'), secretAccessKey: this.open(location, 'secretAccessKey') };
  }

  private open(location: StoredLocation, field: CredentialField): string {
    return this.secretBox.open(location[field].sealed, sealingContext(location.id, field));
  }

  private seal(id: string, field: CredentialField, plaintext: string): StoredSecret {
    const visible = plaintext.length >= MIN_LENGTH_WITH_VISIBLE_TAIL ? plaintext.slice(-3) : '';
    return { sealed: this.secretBox.seal(plaintext, sealingContext(id, field)), lastChars: visible, length: plaintext.length };
  }
}

/** Binds a sealed credential to its row and field: a value copied elsewhere does not open. */
export function sealingContext(locationId: string, field: CredentialField): string {
  return `bucket-location:${locationId}:${field}`;
}

function notFound(direction: Direction): NotFoundError {
  return new NotFoundError(`Bucket ${direction} location not found`);
}

type AccessFields = Pick<BucketSettings, 'bucket' | 'endpoint' | 'region' | 'forcePathStyle'>;

function accessFields(l: StoredLocation): AccessFields {
  return { bucket: l.bucket, endpoint: l.endpoint, region: l.region, forcePathStyle: l.forcePathStyle };
}

function changedAccessFields(current: StoredLocation, changes: LocationChanges): Partial<AccessFields> {
  const changed: Partial<AccessFields> = {};
  if (changes.bucket !== undefined && changes.bucket !== current.bucket) changed.bucket = changes.bucket;
  if (changes.endpoint !== undefined && changes.endpoint !== current.endpoint) changed.endpoint = changes.endpoint;
  if (changes.region !== undefined && changes.region !== current.region) changed.region = changes.region;
  if (changes.forcePathStyle !== undefined && changes.forcePathStyle !== current.forcePathStyle) changed.forcePathStyle = changes.forcePathStyle;
  return changed;
}

function toView(l: StoredLocation): BucketLocation {
  return {
    id: l.id,
    teamId: l.teamId,
    direction: l.direction,
    name: l.name,
    bucket: l.bucket,
    endpoint: l.endpoint,
    region: l.region,
    forcePathStyle: l.forcePathStyle,
    accessKeyHidden: maskSecret(l.accessKey.lastChars, l.accessKey.length),
    secretAccessKeyHidden: maskSecret(l.secretAccessKey.lastChars, l.secretAccessKey.length),
    createdAt: l.createdAt,
    updatedAt: l.updatedAt,
  };
}
