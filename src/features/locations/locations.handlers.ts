import type { components } from '../../../generated/api';
import type { HandlerInput, HandlerMap, OperationId } from '../../http/operations';
import { pageRequest } from '../../shared/paging';
import type { BucketLocation, Direction, LocationChanges, LocationsService, NewLocation } from './locations.service';

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

/** The input of either twin operation (the input and output operations share their shapes). */
type Either<I extends OperationId, O extends OperationId> = HandlerInput<I> | HandlerInput<O>;

/** The five operations of one direction; input and output locations share their shapes. */
function directionHandlers(locations: LocationsService, direction: Direction) {
  return {
    create: async ({ principal, query, body }: Either<'createBucketInputLocation', 'createBucketOutputLocation'>) => {
      return { status: 201 as const, body: toDto(await locations.create(principal.userId, direction, query.selectTeamId, toNewLocation(body))) };
    },
    list: async ({ principal, query }: Either<'getBucketInputLocations', 'getBucketOutputLocations'>) => {
      const page = await locations.list(principal.userId, direction, query.teamId, pageRequest(query));
      return { status: 200 as const, body: { ...page, items: page.items.map(toDto) } };
    },
    get: async ({ principal, path }: Either<'getBucketInputLocationById', 'getBucketOutputLocationById'>) => {
      return { status: 200 as const, body: toDto(await locations.get(principal.userId, direction, path.id)) };
    },
    patch: async ({ principal, path, body }: Either<'patchBucketInputLocation', 'patchBucketOutputLocation'>) => {
      return { status: 200 as const, body: toDto(await locations.update(principal.userId, direction, path.id, toChanges(body))) };
    },
    delete: async ({ principal, path }: Either<'deleteBucketInputLocationById', 'deleteBucketOutputLocationById'>) => {
      await locations.delete(principal.userId, direction, path.id);
      return { status: 204 as const };
    },
  };
}

export function locationsHandlers(locations: LocationsService) {
  const input = directionHandlers(locations, 'input');
  const output = directionHandlers(locations, 'output');
  return {
    createBucketInputLocation: input.create,
    getBucketInputLocations: input.list,
    getBucketInputLocationById: input.get,
    patchBucketInputLocation: input.patch,
    deleteBucketInputLocationById: input.delete,
    createBucketOutputLocation: output.create,
    getBucketOutputLocations: output.list,
    getBucketOutputLocationById: output.get,
    patchBucketOutputLocation: output.patch,
    deleteBucketOutputLocationById: output.delete,
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
