import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type supertest from 'supertest';
import { sealingContext } from '../../src/features/locations/testing';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, expectError, Harness, TestUser } from '../helpers/harness';
import { LocalS3, randomKeyPair, S3KeyPair, startLocalS3 } from '../helpers/s3-server';

const DIRECTIONS = [
  { direction: 'input', path: '/api/v1/input-locations/bucket', other: '/api/v1/output-locations/bucket' },
  { direction: 'output', path: '/api/v1/output-locations/bucket', other: '/api/v1/input-locations/bucket' },
] as const;
const INPUTS = DIRECTIONS[0].path;
const OUTPUTS = DIRECTIONS[1].path;

const masked = (secret: string) => '*'.repeat(secret.length - 3) + secret.slice(-3);

describe(`Bucket input and output locations (${TEST_DIALECT})`, () => {
  let s3: LocalS3;
  let keys: S3KeyPair;
  let rotated: S3KeyPair;
  let h: Harness;
  let u: TestUser;

  /** A body for a bucket the local S3 server holds, with the credentials it accepts. */
  const body = (overrides: Record<string, unknown> = {}) => ({
    name: 'Camera uploads',
    bucket: 'media-in',
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    accessKey: keys.accessKey,
    secretAccessKey: keys.secretAccessKey,
    ...overrides,
  });
  const as = (user: TestUser) => ({
    post: (path: string, b: object) => h.request.post(path).set('X-API-Key', user.apiKey).send(b),
    get: (path: string) => h.request.get(path).set('X-API-Key', user.apiKey),
    patch: (path: string, b: object) => h.request.patch(path).set('X-API-Key', user.apiKey).send(b),
    delete: (path: string) => h.request.delete(path).set('X-API-Key', user.apiKey),
  });
  const created = async (path: string, b: object = body(), user = u): Promise<any> => {
    const res = await as(user).post(path, b);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };
  const headBucketCalls = () => s3.requests.filter((r) => r.method === 'HEAD').length;

  before(async () => {
    keys = randomKeyPair();
    rotated = randomKeyPair();
    s3 = await startLocalS3({ buckets: ['media-in', 'media-out', 'archive'], keyPairs: [keys, rotated] });
    // The local S3 server is on 127.0.0.1: private addresses allowed (test/scenarios/outbound-guard.test.ts covers the default).
    h = await createHarness({ allowPrivateUrls: true });
  });
  after(async () => {
    await h.close();
    await s3.close();
  });
  beforeEach(async () => {
    u = await h.user();
  });

  describe('create', () => {
    for (const { direction, path } of DIRECTIONS) {
      it(`create${direction === 'input' ? 'BucketInputLocation' : 'BucketOutputLocation'}: a reachable bucket is 201 with teamId and masked credentials`, async () => {
        const before = headBucketCalls();
        const res = await as(u).post(path, body({ name: `My ${direction}` }));
        assert.equal(res.status, 201, JSON.stringify(res.body));
        assert.equal(headBucketCalls(), before + 1, 'access was checked with HeadBucket');
        assert.equal(s3.requests.at(-1)?.refusedWith, undefined);
        const l = res.body;
        assert.match(l.id, /^[0-9a-f-]{36}$/);
        assert.equal(l.teamId, u.teamId);
        assert.equal(l.name, `My ${direction}`);
        assert.equal(l.bucket, 'media-in');
        assert.equal(l.endpoint, s3.endpoint);
        assert.equal(l.region, s3.region);
        assert.equal(l.forcePathStyle, true);
        assert.equal(l.accessKeyHidden, masked(keys.accessKey));
        assert.equal(l.secretAccessKeyHidden, masked(keys.secretAccessKey));
        assert.equal(l.createdAt, l.updatedAt);
        assert.ok(!('accessKey' in l) && !('secretAccessKey' in l));
        assert.deepEqual((await as(u).get(`${path}/${l.id}`)).body, l);
      });
    }

    it('without region or forcePathStyle the location reports forcePathStyle false and no region', async () => {
      const { region: _region, forcePathStyle: _style, ...rest } = body();
      const l = await created(INPUTS, rest);
      assert.equal(l.forcePathStyle, false);
      assert.ok(!('region' in l));
    });

    it('selectTeamId creates the location in that team', async () => {
      h.clock.advance(1000); // the first team stays the default (oldest) team
      const second = await h.services.accounts.createTeam({ name: 'Second team', ownerEmail: u.email });
      const l = await created(`${OUTPUTS}?selectTeamId=${second.id}`);
      assert.equal(l.teamId, second.id);
    });

    it('selectTeamId of a team the user is not a member of is 403 FORBIDDEN', async () => {
      const other = await h.user();
      expectError(await as(u).post(`${INPUTS}?selectTeamId=${other.teamId}`, body()), 403, 'FORBIDDEN');
    });

    it('a bucket that does not exist is 404 BUCKET_NOT_FOUND and nothing is stored', async () => {
      for (const { path } of DIRECTIONS) {
        const res = await as(u).post(path, body({ bucket: 'no-such-bucket' }));
        expectError(res, 404, 'BUCKET_NOT_FOUND');
        assert.match(res.body.message, /no-such-bucket/);
        assert.equal((await as(u).get(path)).body.totalElements, 0);
      }
    });

    it('a wrong secret access key is 400 HEAD_BUCKET_ERROR: the server refused the signature', async () => {
      const res = await as(u).post(INPUTS, body({ secretAccessKey: rotated.secretAccessKey }));
      expectError(res, 400, 'HEAD_BUCKET_ERROR');
      assert.equal(s3.requests.at(-1)?.refusedWith, 'SignatureDoesNotMatch');
      assert.match(res.body.message, /refused/);
      assert.equal((await as(u).get(INPUTS)).body.totalElements, 0);
    });

    it('an unknown access key is 400 HEAD_BUCKET_ERROR', async () => {
      expectError(await as(u).post(OUTPUTS, body({ accessKey: 'AKUNKNOWN0000000' })), 400, 'HEAD_BUCKET_ERROR');
      assert.equal(s3.requests.at(-1)?.refusedWith, 'InvalidAccessKeyId');
    });

    it('an unreachable endpoint is 400 HEAD_BUCKET_ERROR with the one "could not be reached" message, no network detail', async () => {
      const closed = await startLocalS3();
      const endpoint = closed.endpoint;
      await closed.close();
      const res = await as(u).post(INPUTS, body({ endpoint }));
      expectError(res, 400, 'HEAD_BUCKET_ERROR');
      assert.equal(res.body.message, `Bucket "media-in" at ${new URL(endpoint).host} could not be reached`);
    });

    it('a non-HTTP endpoint is 400 INVALID_BUCKET_ENDPOINT, even with private URLs allowed', async () => {
      const before = s3.requests.length;
      for (const { path } of DIRECTIONS) expectError(await as(u).post(path, body({ endpoint: 'ftp://127.0.0.1/' })), 400, 'INVALID_BUCKET_ENDPOINT');
      assert.equal(s3.requests.length, before);
    });
  });

  describe('list', () => {
    it('getBucketInputLocations pages and sorts by createdAt or updatedAt; outputs are listed apart', async () => {
      const ids: string[] = [];
      for (const name of ['a', 'b', 'c']) {
        h.clock.advance(1000);
        ids.push((await created(INPUTS, body({ name }))).id);
      }
      await created(OUTPUTS);

      const first = await as(u).get(`${INPUTS}?pageNumber=0&pageSize=2&sortBy=createdAt&sortDirection=ASC`);
      assert.equal(first.status, 200);
      assert.deepEqual({ ...first.body, items: first.body.items.map((l: any) => l.id) }, { pageNumber: 0, pageSize: 2, numberOfElements: 2, totalPages: 2, totalElements: 3, items: ids.slice(0, 2) });
      const second = await as(u).get(`${INPUTS}?pageNumber=1&pageSize=2`);
      assert.deepEqual(
        second.body.items.map((l: any) => l.id),
        ids.slice(2),
      );
      const desc = await as(u).get(`${INPUTS}?sortDirection=DESC`);
      assert.deepEqual(
        desc.body.items.map((l: any) => l.id),
        [...ids].reverse(),
      );

      h.clock.advance(1000);
      assert.equal((await as(u).patch(`${INPUTS}/${ids[0]}`, { name: 'a, renamed' })).status, 200);
      const byUpdate = await as(u).get(`${INPUTS}?sortBy=updatedAt&sortDirection=ASC`);
      assert.deepEqual(
        byUpdate.body.items.map((l: any) => l.id),
        [ids[1], ids[2], ids[0]],
      );

      const outputs = await as(u).get(OUTPUTS);
      assert.equal(outputs.body.totalElements, 1);
      assert.ok(!outputs.body.items.some((l: any) => ids.includes(l.id)));
    });

    it('teamId filters to one team; without it every team of the caller is listed', async () => {
      h.clock.advance(1000); // the first team stays the default (oldest) team
      const second = await h.services.accounts.createTeam({ name: 'Second team', ownerEmail: u.email });
      const mine = await created(OUTPUTS);
      const theirs = await created(`${OUTPUTS}?selectTeamId=${second.id}`);
      const stranger = await h.user();
      await created(OUTPUTS, body(), stranger);

      const all = await as(u).get(OUTPUTS);
      assert.deepEqual(all.body.items.map((l: any) => l.id).sort(), [mine.id, theirs.id].sort());
      const filtered = await as(u).get(`${OUTPUTS}?teamId=${second.id}`);
      assert.deepEqual(
        filtered.body.items.map((l: any) => l.id),
        [theirs.id],
      );
    });

    it('teamId of a team the user is not a member of is 403 FORBIDDEN', async () => {
      const other = await h.user();
      for (const { path } of DIRECTIONS) expectError(await as(u).get(`${path}?teamId=${other.teamId}`), 403, 'FORBIDDEN');
    });
  });

  describe('team and direction boundaries', () => {
    it("another team's location is 404 RESOURCE_NOT_FOUND for get, patch and delete", async () => {
      const other = await h.user();
      for (const { path } of DIRECTIONS) {
        const l = await created(path, body(), other);
        expectError(await as(u).get(`${path}/${l.id}`), 404, 'RESOURCE_NOT_FOUND');
        expectError(await as(u).patch(`${path}/${l.id}`, { name: 'mine now' }), 404, 'RESOURCE_NOT_FOUND');
        expectError(await as(u).delete(`${path}/${l.id}`), 404, 'RESOURCE_NOT_FOUND');
        assert.equal((await as(other).get(`${path}/${l.id}`)).body.name, 'Camera uploads', 'untouched');
      }
    });

    it('an input location id is not found via the output paths, and vice versa', async () => {
      for (const { path, other } of DIRECTIONS) {
        const l = await created(path);
        expectError(await as(u).get(`${other}/${l.id}`), 404, 'RESOURCE_NOT_FOUND');
        expectError(await as(u).patch(`${other}/${l.id}`, { name: 'x' }), 404, 'RESOURCE_NOT_FOUND');
        expectError(await as(u).delete(`${other}/${l.id}`), 404, 'RESOURCE_NOT_FOUND');
        assert.equal((await as(u).get(`${path}/${l.id}`)).status, 200);
      }
    });

    it('an id that exists nowhere is 404 RESOURCE_NOT_FOUND', async () => {
      expectError(await as(u).get(`${INPUTS}/${randomUUID()}`), 404, 'RESOURCE_NOT_FOUND');
    });
  });

  describe('patch', () => {
    it('patching only the name needs no HeadBucket and moves updatedAt', async () => {
      const l = await created(INPUTS);
      h.clock.advance(5000);
      const before = headBucketCalls();
      const res = await as(u).patch(`${INPUTS}/${l.id}`, { name: 'Renamed' });
      assert.equal(res.status, 200);
      assert.equal(headBucketCalls(), before);
      assert.deepEqual(res.body, { ...l, name: 'Renamed', updatedAt: new Date(Date.parse(l.updatedAt) + 5000).toISOString() });
    });

    it('patching with the values already stored changes nothing and needs no HeadBucket', async () => {
      const l = await created(OUTPUTS);
      h.clock.advance(5000);
      const before = headBucketCalls();
      const res = await as(u).patch(`${OUTPUTS}/${l.id}`, { bucket: l.bucket, accessKey: keys.accessKey, secretAccessKey: keys.secretAccessKey });
      assert.equal(res.status, 200);
      assert.equal(headBucketCalls(), before);
      assert.deepEqual(res.body, l);
    });

    it('patching a credential re-checks access: a wrong secret is 400 HEAD_BUCKET_ERROR and nothing changes', async () => {
      const l = await created(INPUTS);
      h.clock.advance(5000);
      const before = headBucketCalls();
      expectError(await as(u).patch(`${INPUTS}/${l.id}`, { name: 'New name', secretAccessKey: rotated.secretAccessKey }), 400, 'HEAD_BUCKET_ERROR');
      assert.equal(headBucketCalls(), before + 1);
      assert.equal(s3.requests.at(-1)?.refusedWith, 'SignatureDoesNotMatch');
      assert.deepEqual((await as(u).get(`${INPUTS}/${l.id}`)).body, l);
      const stored = await h.services.locations.bucketSettings(u.userId, 'input', l.id);
      assert.equal(stored.credentials.secretAccessKey, keys.secretAccessKey);
    });

    it('patching both credentials to another accepted key pair checks them with the stored bucket and keeps them sealed', async () => {
      const l = await created(OUTPUTS, body({ bucket: 'media-out' }));
      const res = await as(u).patch(`${OUTPUTS}/${l.id}`, { accessKey: rotated.accessKey, secretAccessKey: rotated.secretAccessKey });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(s3.requests.at(-1)?.url.startsWith('/media-out'), true, 'HeadBucket used the stored bucket');
      assert.equal(res.body.accessKeyHidden, masked(rotated.accessKey));
      assert.equal(res.body.secretAccessKeyHidden, masked(rotated.secretAccessKey));
      const stored = await h.services.locations.bucketSettings(u.userId, 'output', l.id);
      assert.deepEqual(stored.credentials, rotated);
    });

    it('patching the bucket to one that does not exist is 404 BUCKET_NOT_FOUND and nothing changes', async () => {
      const l = await created(INPUTS);
      expectError(await as(u).patch(`${INPUTS}/${l.id}`, { bucket: 'no-such-bucket' }), 404, 'BUCKET_NOT_FOUND');
      assert.deepEqual((await as(u).get(`${INPUTS}/${l.id}`)).body, l);
    });

    it('patching the bucket to one that exists re-checks it with the stored credentials', async () => {
      const l = await created(INPUTS);
      const res = await as(u).patch(`${INPUTS}/${l.id}`, { bucket: 'archive' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.bucket, 'archive');
      assert.deepEqual(s3.requests.at(-1), { method: 'HEAD', url: '/archive/', refusedWith: undefined });
    });

    it('an empty PATCH body is 400 VALIDATION_ERROR', async () => {
      const l = await created(INPUTS);
      expectError(await as(u).patch(`${INPUTS}/${l.id}`, {}), 400, 'VALIDATION_ERROR');
    });
  });

  describe('delete', () => {
    it('deleteBucket*LocationById is 204, then the location is 404', async () => {
      for (const { path } of DIRECTIONS) {
        const l = await created(path);
        const res = await as(u).delete(`${path}/${l.id}`);
        assert.equal(res.status, 204);
        assert.equal(res.text, '');
        expectError(await as(u).get(`${path}/${l.id}`), 404, 'RESOURCE_NOT_FOUND');
        expectError(await as(u).delete(`${path}/${l.id}`), 404, 'RESOURCE_NOT_FOUND');
      }
      const rows = await h.database.db('bucket_locations').where({ team_id: u.teamId });
      assert.equal(rows.length, 0, 'the sealed credentials went with the row');
    });
  });

  describe('credentials at rest', () => {
    it('credentials are stored sealed, bound to their row, and open back to the originals', async () => {
      const a = await created(INPUTS);
      const b = await created(OUTPUTS);
      const row = await h.database.db('bucket_locations').where({ id: a.id }).first();
      const everyColumn = JSON.stringify(row);
      assert.ok(!everyColumn.includes(keys.secretAccessKey), 'no plaintext secret access key in any column');
      assert.ok(!everyColumn.includes(keys.accessKey), 'no plaintext access key in any column');
      assert.match(row.secret_key_sealed, /^v1:/);

      const box = h.services.secretBox;
      assert.equal(box.open(row.secret_key_sealed, sealingContext(a.id, 'secretAccessKey')), keys.secretAccessKey);
      assert.equal(box.open(row.access_key_sealed, sealingContext(a.id, 'accessKey')), keys.accessKey);
      assert.throws(() => box.open(row.secret_key_sealed, sealingContext(b.id, 'secretAccessKey')), 'sealed for another row');
      assert.throws(() => box.open(row.secret_key_sealed, sealingContext(a.id, 'accessKey')), 'sealed for another field');
    });

    it('credentials shorter than 8 characters are masked entirely', async () => {
      const short = { accessKey: 'AKSHORT', secretAccessKey: 's3cr' };
      const local = await startLocalS3({ buckets: ['tiny'], keyPairs: [short] });
      try {
        const l = await created(INPUTS, { name: 'tiny', bucket: 'tiny', endpoint: local.endpoint, forcePathStyle: true, ...short });
        assert.equal(l.accessKeyHidden, '*******');
        assert.equal(l.secretAccessKeyHidden, '****');
      } finally {
        await local.close();
      }
    });
  });
});

describe(`Bucket location credentials never reach logs or response bodies (${TEST_DIALECT})`, () => {
  let s3: LocalS3;
  let h: Harness;
  let u: TestUser;
  const logLines: string[] = [];
  const bodies: string[] = [];
  const keys = randomKeyPair();
  const wrong = randomKeyPair();

  before(async () => {
    s3 = await startLocalS3({ buckets: ['media-in'], keyPairs: [keys] });
    const logger = pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) });
    h = await createHarness({ allowPrivateUrls: true }, { logger });
    u = await h.user();
  });
  after(async () => {
    await h.close();
    await s3.close();
  });

  const send = async (req: supertest.Test) => {
    const res = await req.set('X-API-Key', u.apiKey);
    bodies.push(res.text ?? '');
    return res;
  };

  it('a full round of calls, including refused credentials, logs and answers no credential', async () => {
    const good = { name: 'Camera', bucket: 'media-in', endpoint: s3.endpoint, forcePathStyle: true, ...keys };
    const path = '/api/v1/input-locations/bucket';
    const l = (await send(h.request.post(path).send(good))).body;
    assert.match(l.id, /^[0-9a-f-]{36}$/);
    expectError(await send(h.request.post(path).send({ ...good, secretAccessKey: wrong.secretAccessKey })), 400, 'HEAD_BUCKET_ERROR');
    expectError(await send(h.request.post(path).send({ ...good, ...wrong })), 400, 'HEAD_BUCKET_ERROR');
    expectError(await send(h.request.post(path).send({ ...good, bucket: 'no-such-bucket' })), 404, 'BUCKET_NOT_FOUND');
    expectError(await send(h.request.patch(`${path}/${l.id}`).send({ secretAccessKey: wrong.secretAccessKey })), 400, 'HEAD_BUCKET_ERROR');
    expectError(await send(h.request.patch(`${path}/${l.id}`).send({ accessKey: wrong.accessKey })), 400, 'HEAD_BUCKET_ERROR');
    assert.equal((await send(h.request.patch(`${path}/${l.id}`).send({ name: 'Renamed' }))).status, 200);
    assert.equal((await send(h.request.get(`${path}/${l.id}`))).status, 200);
    assert.equal((await send(h.request.get(path))).status, 200);
    // A service failure with credentials in flight is logged as an unexpected error.
    // eslint-disable-next-line @typescript-eslint/unbound-method -- saved only to be restored
    const original = h.services.locations.create;
    h.services.locations.create = async () => {
      throw new Error('storage exploded');
    };
    try {
      expectError(await send(h.request.post(path).send(good)), 500, 'INTERNAL_SERVER_ERROR');
    } finally {
      h.services.locations.create = original;
    }

    assert.ok(logLines.length >= bodies.length, 'the app logged every request');
    const everything = [...logLines, ...bodies].join('\n');
    for (const secret of [keys.secretAccessKey, keys.accessKey, wrong.secretAccessKey, wrong.accessKey]) {
      assert.ok(!everything.includes(secret), `a credential (${secret.slice(-3)}) appears in a log line or response body`);
    }
  });
});
