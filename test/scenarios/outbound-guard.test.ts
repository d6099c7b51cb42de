/**
 * The SSRF matrix: with the default policy (VIDMILL_ALLOW_PRIVATE_URLS unset) every field that
 * names a bucket host refuses every spelling of a non-public address with 400
 * INVALID_BUCKET_ENDPOINT, before any connection: a real TCP listener on loopback (127.0.0.1,
 * and ::1 on the same port where there is IPv6), whose port the cases target, must receive none.
 *
 * Fields: input and output location create and patch, bucket video in (given, and through an
 * input location), bucket video out (given, and through an output location). A location cannot
 * be created with such an endpoint any more, so the "through a location" cases use locations
 * stored directly (as one stored before the rule, or while the flag was on, would be).
 */
import { strict as assert } from 'node:assert';
import net from 'node:net';
import type supertest from 'supertest';
import { LocationsService } from '../../src/features/locations';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, expectError, Harness, TestUser } from '../helpers/harness';
import { storedVideo } from '../helpers/stored-video';
import { scaled } from '../helpers/timeouts';

/** Every address form, as `host[:port]` with `PORT` standing for the listener's port. */
const ADDRESS_FORMS: Array<{ form: string; host: string }> = [
  { form: '127.0.0.1 with the port', host: '127.0.0.1:PORT' },
  { form: 'localhost', host: 'localhost:PORT' },
  { form: '[::1]', host: '[::1]:PORT' },
  { form: 'decimal 2130706433', host: '2130706433:PORT' },
  { form: 'octal 0177.0.0.1', host: '0177.0.0.1:PORT' },
  { form: 'hex 0x7f.0.0.1', host: '0x7f.0.0.1:PORT' },
  { form: 'hex 0x7f000001', host: '0x7f000001:PORT' },
  { form: 'short 127.1', host: '127.1:PORT' },
  { form: 'private 10.0.0.1', host: '10.0.0.1:PORT' },
  { form: 'metadata 169.254.169.254', host: '169.254.169.254' },
  { form: 'unique local [fd00::1]', host: '[fd00::1]:PORT' },
  { form: 'CGNAT 100.64.0.1', host: '100.64.0.1:PORT' },
  { form: 'multicast 224.0.0.1', host: '224.0.0.1:PORT' },
  { form: 'unspecified 0.0.0.0', host: '0.0.0.0:PORT' },
  { form: 'IPv4-mapped [::ffff:127.0.0.1]', host: '[::ffff:127.0.0.1]:PORT' },
  { form: 'IPv4-mapped [::ffff:7f00:1]', host: '[::ffff:7f00:1]:PORT' },
  { form: 'a *.localhost name', host: 'vidmill-ssrf.localhost:PORT' },
];
/** Besides https to every form: the scheme rule, http to loopback. */
const SCHEMES = ['https', 'http'] as const;

const FIELDS = [
  'input-location create',
  'output-location create',
  'input-location patch',
  'output-location patch',
  'bucket video in',
  'video in through an input location',
  'bucket video out',
  'video out through an output location',
] as const;
type Field = (typeof FIELDS)[number];

describe(`Outbound guard: a bucket endpoint at a non-public address is 400 INVALID_BUCKET_ENDPOINT before any connection (${TEST_DIALECT})`, function () {
  this.timeout(scaled(60_000));
  let h: Harness;
  let u: TestUser;
  let listener: net.Server;
  let listener6: net.Server;
  let port: number;
  let connections = 0;
  let videoId: string;
  /** Locations stored without the guard: one per direction with a public endpoint (patch cases), and one per endpoint tried. */
  let storedLocations: LocationsService;
  const good = { input: '', output: '' };
  const tried: Array<{ field: Field; form: string; endpoint: string }> = [];

  const keys = { accessKey: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
  const s3Bucket = (endpoint: string) => ({ bucket: 'media-in', endpoint, forcePathStyle: true, ...keys });
  const api = (req: supertest.Test) => req.set('X-API-Key', u.apiKey);
  const storeLocation = async (direction: 'input' | 'output', endpoint: string) =>
    (await storedLocations.create(u.userId, direction, undefined, { name: `stored ${direction}`, ...s3Bucket(endpoint) })).id;

  async function send(field: Field, endpoint: string): Promise<supertest.Response> {
    switch (field) {
      case 'input-location create':
        return api(h.request.post('/api/v1/input-locations/bucket').send({ name: 'x', ...s3Bucket(endpoint) }));
      case 'output-location create':
        return api(h.request.post('/api/v1/output-locations/bucket').send({ name: 'x', ...s3Bucket(endpoint) }));
      case 'input-location patch':
        return api(h.request.patch(`/api/v1/input-locations/bucket/${good.input}`).send({ endpoint }));
      case 'output-location patch':
        return api(h.request.patch(`/api/v1/output-locations/bucket/${good.output}`).send({ endpoint }));
      case 'bucket video in':
        return api(h.request.post('/api/v1/videos/in/bucket').send({ name: 'x', objectKey: 'in/a.mp4', s3Bucket: s3Bucket(endpoint) }));
      case 'video in through an input location':
        return api(h.request.post(`/api/v1/videos/in/bucket/${await storeLocation('input', endpoint)}`).send({ name: 'x', objectKey: 'in/a.mp4' }));
      case 'bucket video out':
        return api(h.request.post(`/api/v1/videos/${videoId}/out/bucket`).send({ s3Bucket: s3Bucket(endpoint), objectKeyPrefix: 'out' }));
      case 'video out through an output location':
        return api(h.request.post(`/api/v1/videos/${videoId}/out/bucket/${await storeLocation('output', endpoint)}`).send({ objectKeyPrefix: 'out' }));
    }
  }

  before(async () => {
    listener = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    port = (listener.address() as net.AddressInfo).port;
    // The same port on ::1 too, where the machine has IPv6 loopback, for the [::1] forms.
    listener6 = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((r) => listener6.once('error', () => r()).listen(port, '::1', r));
    h = await createHarness(); // the default policy: VIDMILL_ALLOW_PRIVATE_URLS unset
    assert.equal(h.config.allowPrivateUrls, false);
    u = await h.user();
    videoId = await storedVideo(h, u);
    // As a location stored before the rule: no endpoint check and no HeadBucket.
    storedLocations = new LocationsService({
      db: h.services.db,
      clock: h.clock,
      accounts: h.services.accounts,
      secretBox: h.services.secretBox,
      policy: { allowPrivateUrls: true },
      checkAccess: async () => ({ outcome: 'accessible' }),
    });
    good.input = await storeLocation('input', 'https://s3.example.com');
    good.output = await storeLocation('output', 'https://s3.example.com');
  });
  after(async () => {
    await h.close();
    await new Promise<void>((r) => listener.close(() => r()));
    if (listener6.listening) await new Promise<void>((r) => listener6.close(() => r()));
    const forms = new Set(tried.map((t) => t.form)).size;
    const fields = new Set(tried.map((t) => t.field)).size;
    console.log(
      `      SSRF matrix (${TEST_DIALECT}): ${fields} fields x ${forms} address forms = ${tried.length} cases, each 400 INVALID_BUCKET_ENDPOINT; connections received by the loopback listener: ${connections}`,
    );
  });

  it('malformed endpoints are 400, never 5xx', async () => {
    for (const endpoint of ['https://', 'https://[::1', 'not a url', 'https://a b', 'https://%zz', `https://${'a'.repeat(300)}.example`, 'http://']) {
      for (const field of ['input-location create', 'bucket video in', 'bucket video out'] as const) {
        const res = await send(field, endpoint);
        assert.equal(res.status, 400, `${field} ${endpoint}: ${res.status} ${JSON.stringify(res.body)}`);
      }
    }
    assert.equal(connections, 0);
  });

  for (const field of FIELDS) {
    describe(field, () => {
      for (const { form, host } of ADDRESS_FORMS) {
        for (const scheme of SCHEMES) {
          if (scheme === 'http' && !host.startsWith('127.0.0.1')) continue;
          it(`${scheme}://${form} is refused`, async () => {
            const endpoint = `${scheme}://${host.replace('PORT', String(port))}`;
            const res = await send(field, endpoint);
            expectError(res, 400, 'INVALID_BUCKET_ENDPOINT');
            assert.match(res.body.message, scheme === 'http' ? /must use https/ : /non-public address/);
            tried.push({ field, form: `${scheme}://${form}`, endpoint });
            assert.equal(connections, 0, 'the loopback listener received a connection');
          });
        }
      }
    });
  }

  // Mocha runs a describe's own tests before its nested ones: these checks sit in a describe of their own, after the matrix.
  describe('after every case of the matrix', () => {
    it('nothing was stored or started by a refused request: the patched locations keep their endpoint, no video or copy was created', async () => {
      for (const direction of ['input', 'output'] as const) {
        const res = await api(h.request.get(`/api/v1/${direction}-locations/bucket/${good[direction]}`));
        assert.equal(res.body.endpoint, 'https://s3.example.com');
      }
      const created = await api(h.request.get('/api/v1/input-locations/bucket'));
      assert.ok(
        created.body.items.every((l: any) => l.name === 'stored input'),
        'no location was created through the API',
      );
      const count = async (table: string) => Number((await h.services.db(table).count({ n: '*' }).first())?.n);
      assert.equal(await count('videos'), 1, 'only the stored video exists');
      assert.equal(await count('video_out_operations'), 0);
      assert.equal(await count('jobs'), 0);
    });

    it('the loopback listener received no connection at all', () => {
      assert.equal(tried.length, FIELDS.length * (ADDRESS_FORMS.length + 1));
      assert.equal(connections, 0);
    });
  });
});
