import type { components } from '../../../generated/api';
import type { HandlerMap } from '../../http/operations';
import { pageRequest } from '../../shared/paging';
import type { BucketLocation, LocationChanges, LocationsService, NewLocation } from './locations.service';

type Schemas = components['schemas'];

/** Input and output locations share one shape; the response never carries a credential. */
function toDto(l: BucketLocation): Schemas['BucketLocation'] {
  return {
    id: l.id,
    createdAt: l.createdAt.toISOString(),
    updatedAt: l.updatedAt.toISOString(),
    teamId: l.teamId,
    name: l.name,
    bucket: l.bucket,
    accessKeyHidden: l.accessKeyHidden,
    secretAccessKeyHidden: l.secretAccessKeyHidden,
    ...(l.endpoint !== undefined ? { endpoint: l.endpoint } : {}),
    ...(l.region !== undefined ? { region: l.region } : {}),
    forcePathStyle: l.forcePathStyle,
  };
}

function toNewLocation(b: Schemas['BucketLocationPost']): NewLocation {
  return {
    name: b.name,
    bucket: b.bucket,
    endpoint: b.endpoint,
    region: b.region,
    forcePathStyle: b.forcePathStyle,
    accessKey: b.accessKey,
    secretAccessKey: b.secretAccessKey,
  };
}

function toChanges(b: Schemas['BucketLocationPatch']): LocationChanges {
  return {
    name: b.name,
    bucket: b.bucket,
    endpoint: b.endpoint,
    region: b.region,
    forcePathStyle: b.forcePathStyle,
    accessKey: b.accessKey,
    secretAccessKey: b.secretAccessKey,
  };
}

export function locationsHandlers(locations: LocationsService) {
  return {
    async createBucketInputLocation({ principal, query, body }) {
      return { status: 201, body: toDto(await locations.create(principal.userId, 'input', query.selectTeamId, toNewLocation(body))) };
    },
    async getBucketInputLocations({ principal, query }) {
      const page = await locations.list(principal.userId, 'input', query.teamId, pageRequest(query));
      return { status: 200, body: { ...page, items: page.items.map(toDto) } };
    },
    async getBucketInputLocationById({ principal, path }) {
      return { status: 200, body: toDto(await locations.get(principal.userId, 'input', path.id)) };
    },
    async patchBucketInputLocation({ principal, path, body }) {
      return { status: 200, body: toDto(await locations.update(principal.userId, 'input', path.id, toChanges(body))) };
    },
    async deleteBucketInputLocationById({ principal, path }) {
      await locations.delete(principal.userId, 'input', path.id);
      return { status: 204 };
    },

    async createBucketOutputLocation({ principal, query, body }) {
      return { status: 201, body: toDto(await locations.create(principal.userId, 'output', query.selectTeamId, toNewLocation(body))) };
    },
    async getBucketOutputLocations({ principal, query }) {
      const page = await locations.list(principal.userId, 'output', query.teamId, pageRequest(query));
      return { status: 200, body: { ...page, items: page.items.map(toDto) } };
    },
    async getBucketOutputLocationById({ principal, path }) {
      return { status: 200, body: toDto(await locations.get(principal.userId, 'output', path.id)) };
    },
    async patchBucketOutputLocation({ principal, path, body }) {
      return { status: 200, body: toDto(await locations.update(principal.userId, 'output', path.id, toChanges(body))) };
    },
    async deleteBucketOutputLocationById({ principal, path }) {
      await locations.delete(principal.userId, 'output', path.id);
      return { status: 204 };
    },
  } satisfies HandlerMap<
    | 'createBucketInputLocation'
    | 'getBucketInputLocations'
    | 'getBucketInputLocationById'
    | 'patchBucketInputLocation'
    | 'deleteBucketInputLocationById'
    | 'createBucketOutputLocation'
    | 'getBucketOutputLocations'
    | 'getBucketOutputLocationById'
    | 'patchBucketOutputLocation'
    | 'deleteBucketOutputLocationById'
  >;
}
