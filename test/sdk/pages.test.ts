// test-databases: one
// (SQLite only: its subject is the SDK's paging helpers.)
/** The SDK's page iterators (sdk/src/pages.ts) walking the real app's pages. */
import { strict as assert } from 'node:assert';
import { listAll, pages, paginate, unwrap, type ListItem, type VidmillClient } from '../../sdk/src';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { sdkClient } from './sdk-harness';

describe(`SDK pages (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  let client: VidmillClient;
  let requested: string[];
  beforeEach(async () => {
    h = await createHarness();
    u = await h.user();
    requested = [];
    client = await sdkClient(h, u, {
      fetch: (input, init) => {
        const request = new Request(input, init);
        if (request.method === 'GET') requested.push(new URL(request.url).search);
        return fetch(request);
      },
    });
    for (let i = 1; i <= 7; i++) unwrap(await client.api.POST('/v1/projects', { body: { name: `Project ${i}` } }));
  });
  afterEach(() => h.close());

  it('listAll walks every page of a list, one request per page, with its filters', async () => {
    const names: string[] = [];
    for await (const project of listAll(client, '/v1/projects', { query: { pageSize: 3, sortDirection: 'ASC' } })) names.push(project.name);
    assert.equal(names.length, 8, 'the Default Project and 7 more');
    assert.equal(new Set(names).size, 8, 'no item twice');
    for (let i = 1; i <= 7; i++) assert.ok(names.includes(`Project ${i}`));
    assert.deepEqual(
      requested.map((q) => new URLSearchParams(q).get('pageNumber')),
      ['0', '1', '2'],
    );
    assert.ok(requested.every((q) => new URLSearchParams(q).get('pageSize') === '3'));
  });

  it('pages yields whole pages; paginate their items; an empty list is one request', async () => {
    const fetchPage = async (pageNumber: number) => unwrap(await client.api.GET('/v1/projects', { params: { query: { pageNumber, pageSize: 5 } } }));
    const seen: Array<[number, number, number]> = [];
    for await (const page of pages(fetchPage)) seen.push([page.pageNumber, page.items.length, page.totalPages]);
    assert.deepEqual(seen, [
      [0, 5, 2],
      [1, 3, 2],
    ]);
    let count = 0;
    for await (const project of paginate(fetchPage)) count += project.id ? 1 : 0;
    assert.equal(count, 8);

    requested = [];
    const none: unknown[] = [];
    for await (const video of listAll(client, '/v1/videos')) none.push(video);
    assert.deepEqual(none, []);
    assert.equal(requested.length, 1);
  });

  it('stopping early fetches no further page', async () => {
    for await (const project of listAll(client, '/v1/projects', { query: { pageSize: 2 } })) {
      assert.ok(project.id);
      break;
    }
    assert.equal(requested.length, 1);
  });
});

// Compile-time: the items are typed by the list's path, and path parameters are required where the path has them.
export type _VideoName = ListItem<'/v1/videos'>['name'];
export function _typed(client: VidmillClient) {
  void listAll(client, '/v1/videos/{videoId}/derived', { path: { videoId: 'x' } });
  // @ts-expect-error the path parameter is required
  void listAll(client, '/v1/videos/{videoId}/derived');
  // @ts-expect-error not a filter of the list
  void listAll(client, '/v1/videos', { query: { notAFilter: 1 } });
  // @ts-expect-error not a list
  void listAll(client, '/v1/account');
}
