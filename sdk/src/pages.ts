/**
 * Async iterators over the contract's pages (`pageNumber` from 0, `pageSize`, `totalPages`,
 * `items`):
 *   for await (const video of listAll(client, '/v1/videos', { query: { projectId } })) ...
 * `pages(fetchPage)` yields whole pages, `paginate(fetchPage)` their items, for any paged call.
 */
import type { paths } from './generated/api';
import type { VidmillClient } from './client';
import { unwrap } from './client';

/** What every page of the contract has. */
export interface PageOf<T> {
  items: T[];
  pageNumber: number;
  totalPages: number;
}

/** Yields page 0, 1, ... of `fetchPage` until the last page (`totalPages`) or an empty one. */
export async function* pages<P extends PageOf<unknown>>(fetchPage: (pageNumber: number) => Promise<P>): AsyncGenerator<P, void, undefined> {
  for (let pageNumber = 0; ; pageNumber++) {
    const page = await fetchPage(pageNumber);
    yield page;
    if (page.items.length === 0 || pageNumber + 1 >= page.totalPages) return;
  }
}

/** Yields every item of every page of `fetchPage`. */
export async function* paginate<T>(fetchPage: (pageNumber: number) => Promise<PageOf<T>>): AsyncGenerator<T, void, undefined> {
  for await (const page of pages(fetchPage)) yield* page.items;
}

type JsonOk<Op> = Op extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;

/** The paths whose GET answers a page. */
export type ListPath = {
  [P in keyof paths]: paths[P] extends { get: infer Op } ? (JsonOk<Op> extends PageOf<unknown> ? P : never) : never;
}[keyof paths];

type GetOf<P extends ListPath> = paths[P] extends { get: infer Op } ? Op : never;
/** The item type of the page a list path answers. */
export type ListItem<P extends ListPath> = JsonOk<GetOf<P>> extends PageOf<infer T> ? T : never;
type Params<P extends ListPath> = GetOf<P> extends { parameters: infer X } ? X : never;
type QueryOf<P extends ListPath> = Params<P> extends { query?: infer Q } ? NonNullable<Q> : never;
type PathOf<P extends ListPath> = Params<P> extends { path: infer X } ? X : never;

export type ListOptions<P extends ListPath> = {
  /** The list's filters and sort; `pageNumber` is set by the iterator. */
  query?: Omit<QueryOf<P>, 'pageNumber'>;
  /** Stops the iteration between pages and aborts the running request. */
  signal?: AbortSignal;
} & ([PathOf<P>] extends [never] | [undefined] ? { path?: never } : { path: PathOf<P> });

type LooseGet = (path: string, init: { params: { query: Record<string, unknown>; path?: unknown }; signal?: AbortSignal }) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

/** Yields every item of the list at `path` (a GET answering a page), one request per page. */
export function listAll<P extends ListPath>(client: VidmillClient, path: P, ...[options]: OptionalIfNoPath<P>): AsyncGenerator<ListItem<P>, void, undefined> {
  const opts = (options ?? {}) as { query?: Record<string, unknown>; path?: unknown; signal?: AbortSignal };
  // openapi-fetch's overloads cannot be resolved for a path chosen by a type parameter; the
  // parameters are checked by ListOptions<P> above instead.
  const get = client.api.GET.bind(client.api) as unknown as LooseGet;
  return paginate(async (pageNumber) => {
    opts.signal?.throwIfAborted();
    const init = { params: { query: { ...opts.query, pageNumber }, ...(opts.path ? { path: opts.path } : {}) }, signal: opts.signal };
    return unwrap(await get(path, init)) as PageOf<ListItem<P>>;
  });
}

type OptionalIfNoPath<P extends ListPath> = [PathOf<P>] extends [never] | [undefined] ? [options?: ListOptions<P>] : [options: ListOptions<P>];
