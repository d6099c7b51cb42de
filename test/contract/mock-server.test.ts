// test-databases: one
// (SQLite only: its subject is the mock server (openapi-backend), compared with the app on one database.)
/**
 * The mock server (scripts/mock-server.ts, `npm run mock`) started in-process on a random port:
 * success statuses and bodies are the contract's examples, bad input is a 400 VALIDATION_ERROR,
 * unknown paths a 404 NOT_FOUND, both with the contract's `Error` body; one list of bad requests
 * (credentials, teams, upload size, parameters, bodies, paths) runs against the mock and the real
 * app and gets the same status and errorCode from both; every answer of the mock carries the
 * headers the contract marks required (every operation walked with its example request); the
 * upload flow runs against the mock's own tus endpoint.
 */
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DEFAULT_MOCK_PASSWORD, MockCredentials, mockCredentials, MockServer, mockSettings, startMockServer } from '../../scripts/mock-server';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { scaled } from '../helpers/timeouts';

const contract = JSON.parse(readFileSync(path.resolve(__dirname, '..', '..', 'generated', 'openapi.json'), 'utf8'));
const errorSchema = contract.components.schemas.Error;

function resolve(node: any): any {
  return node?.$ref
    ? resolve(
        node.$ref
          .split('/')
          .slice(1)
          .reduce((o: any, k: string) => o[k], contract),
      )
    : node;
}

/** The JSON example of an operation's response with the given status, read from generated/openapi.json. */
function example(pathName: string, method: string, status: number): unknown {
  const response = resolve(contract.paths[pathName][method].responses[String(status)]);
  const value = response.content['application/json'].example;
  assert.notEqual(value, undefined, `${method} ${pathName} ${status} has no example`);
  return value;
}

const creds: MockCredentials = mockCredentials({}, contract);
const KEY = { 'x-api-key': creds.apiKey };
const basic = (email: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}` });

async function call(base: string, method: string, p: string, body?: unknown, headers: Record<string, string> = KEY) {
  const res = await fetch(base + p, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

function assertErrorBody(res: Awaited<ReturnType<typeof call>>, status: number, errorCode: string, requestPath: string): void {
  assert.equal(res.status, status, res.text);
  assert.match(String(res.headers.get('content-type')), /application\/json/);
  for (const field of errorSchema.required) assert.ok(field in res.body, `Error body lacks ${field}: ${res.text}`);
  assert.equal(res.body.errorCode, errorCode);
  assert.equal(res.body.statusCode, status);
  assert.equal(res.body.requestPath, requestPath);
  assert.equal(res.body.requestId, res.headers.get('x-request-id'));
  assert.match(res.body.requestId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.ok(!Number.isNaN(Date.parse(res.body.timestamp)), res.body.timestamp);
}

/** The operation a request path names (literal templates before templated ones, as both servers route), or undefined. */
function operationOf(method: string, requestPath: string): any {
  if (!requestPath.startsWith('/api/')) return undefined;
  const p = requestPath.split('?')[0]!.slice('/api'.length);
  const templates = Object.keys(contract.paths).sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  const template = templates.find((t) => new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+')}$`).test(p));
  return template === undefined ? undefined : contract.paths[template][method.toLowerCase()];
}

/** Asserts every header the contract marks required on the response of this status (X-Request-Id when no operation is named). */
function assertRequiredHeaders(method: string, requestPath: string, res: { status: number; headers: Headers }): void {
  const op = operationOf(method, requestPath);
  const response = op && resolve(op.responses[String(res.status)]);
  if (op) assert.ok(response, `${method} ${requestPath}: ${res.status} is not a response of ${op.operationId}`);
  const required = response
    ? Object.entries<any>(response.headers ?? {})
        .filter(([, hd]) => resolve(hd).required)
        .map(([name]) => name)
    : ['X-Request-Id'];
  for (const name of required) assert.ok(res.headers.get(name) !== null, `${method} ${requestPath} ${res.status} lacks ${name}`);
  for (const name of required.filter((n) => n.startsWith('X-RateLimit-'))) assert.match(String(res.headers.get(name)), /^\d+$/, name);
}

describe('mock server (npm run mock)', () => {
  let mock: MockServer;
  before(async () => {
    mock = await startMockServer({ host: '127.0.0.1', port: 0 });
  });
  after(() => mock?.close());

  it('listens on the requested host with a random port and the /api base path', () => {
    assert.match(mock.url, /^http:\/\/127\.0\.0\.1:\d+\/api$/);
    assert.notEqual(new URL(mock.url).port, '0');
  });

  it('GET /v1/account answers 200 with the getAccount example', async () => {
    const res = await call(mock.url, 'GET', '/v1/account');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, example('/v1/account', 'get', 200));
  });

  it('POST /v1/projects with a valid body answers 201 with the createProject example', async () => {
    const res = await call(mock.url, 'POST', '/v1/projects', { name: 'Holiday footage' });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body, example('/v1/projects', 'post', 201));
  });

  it('POST /v1/projects with {} answers 400 VALIDATION_ERROR naming the missing field', async () => {
    const res = await call(mock.url, 'POST', '/v1/projects', {});
    assertErrorBody(res, 400, 'VALIDATION_ERROR', '/api/v1/projects');
    assert.ok(Array.isArray(res.body.validationErrors) && res.body.validationErrors.length > 0, res.text);
    const nameError = res.body.validationErrors.find((e: any) => e.field === 'body.name');
    assert.ok(nameError, `no validation error for body.name: ${res.text}`);
    assert.match(nameError.message, /name/);
    for (const e of res.body.validationErrors) assert.deepEqual(Object.keys(e).sort(), ['field', 'message']);
  });

  it('validates parameters too: a malformed uuid in the path is 400 VALIDATION_ERROR', async () => {
    const res = await call(mock.url, 'GET', '/v1/projects/not-a-uuid');
    assertErrorBody(res, 400, 'VALIDATION_ERROR', '/api/v1/projects/not-a-uuid');
    assert.deepEqual(res.body.validationErrors, [{ field: 'path.id', value: 'not-a-uuid', message: 'must match format "uuid"' }]);
  });

  it('POST /v1/projects without a body is 400 MISSING_REQUEST_BODY, as on the real server', async () => {
    const res = await call(mock.url, 'POST', '/v1/projects');
    assertErrorBody(res, 400, 'MISSING_REQUEST_BODY', '/api/v1/projects');
  });

  it('GET /v1/projects/default: the literal route wins over /v1/projects/{id}', async () => {
    const res = await call(mock.url, 'GET', '/v1/projects/default');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, example('/v1/projects/default', 'get', 200));
    assert.notDeepEqual(res.body, example('/v1/projects/{id}', 'get', 200));
  });

  it('DELETE /v1/projects/{id} answers 204 without a body', async () => {
    const res = await call(mock.url, 'DELETE', '/v1/projects/3fa85f64-5717-4562-b3fc-2c963f66afa6');
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
  });

  it('an unknown path is 404 NOT_FOUND with the Error body', async () => {
    const res = await call(mock.url, 'GET', '/v1/nope');
    assertErrorBody(res, 404, 'NOT_FOUND', '/api/v1/nope');
  });

  it('a required body that is missing is 400 MISSING_REQUEST_BODY even with a JSON Content-Type (empty, or empty chunked); {} stays 400 VALIDATION_ERROR', async () => {
    const empty = await fetch(`${mock.url}/v1/projects`, { method: 'POST', headers: { ...KEY, 'content-type': 'application/json' }, body: '' });
    const emptyBody = (await empty.json()) as any;
    assert.deepEqual([empty.status, emptyBody.errorCode], [400, 'MISSING_REQUEST_BODY']);
    const chunked = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const url = new URL(`${mock.url}/v1/projects`);
      const req = http.request(url, { method: 'POST', headers: { ...KEY, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.deepEqual([chunked.status, chunked.body.errorCode], [400, 'MISSING_REQUEST_BODY']);
    assertErrorBody(await call(mock.url, 'POST', '/v1/projects', {}), 400, 'VALIDATION_ERROR', '/api/v1/projects');
  });

  describe('bad requests: the same status and errorCode as the real server', () => {
    let h: Harness;
    let u: TestUser;
    before(async () => {
      h = await createHarness();
      u = await h.user();
    });
    after(() => h.close());

    /** Credentials of a case: the caller's own (a key, or Basic on /v1/api-keys), none, or wrong ones. */
    type Auth = 'key' | 'none' | 'bogus-key' | 'unknown-key' | 'basic' | 'no-basic' | 'malformed-basic' | 'wrong-password' | 'key-for-basic';
    const STRANGER_TEAM = randomUUID();
    const CASES: Array<{ what: string; method: string; path: string; auth?: Auth; type?: string; body?: string }> = [
      { what: 'no X-API-Key', method: 'GET', path: '/api/v1/account', auth: 'none' },
      { what: 'a bogus X-API-Key', method: 'GET', path: '/api/v1/projects', auth: 'bogus-key' },
      { what: 'a well-formed X-API-Key that was never issued', method: 'GET', path: '/api/v1/account', auth: 'unknown-key' },
      { what: 'no X-API-Key on an unknown path (authentication first)', method: 'GET', path: '/api/v1/nope', auth: 'none' },
      { what: 'no X-API-Key with a bad body (authentication first)', method: 'POST', path: '/api/v1/projects', auth: 'none', type: 'application/json', body: '{"name":' },
      { what: 'no Basic credentials on /v1/api-keys', method: 'GET', path: '/api/v1/api-keys', auth: 'no-basic' },
      { what: 'no Basic credentials on POST /v1/api-keys', method: 'POST', path: '/api/v1/api-keys', auth: 'no-basic', type: 'application/json', body: '{"name":"k","active":true}' },
      { what: 'an X-API-Key instead of Basic on /v1/api-keys', method: 'GET', path: '/api/v1/api-keys', auth: 'key-for-basic' },
      { what: 'a malformed Basic header', method: 'GET', path: '/api/v1/api-keys', auth: 'malformed-basic' },
      { what: 'a wrong password', method: 'GET', path: '/api/v1/api-keys', auth: 'wrong-password' },
      { what: 'a bad uuid on /v1/api-keys/{id} with Basic', method: 'GET', path: '/api/v1/api-keys/not-a-uuid', auth: 'basic' },
      { what: 'a teamId of another team', method: 'GET', path: `/api/v1/projects?teamId=${STRANGER_TEAM}` },
      { what: 'a teamId of another team on the listener list', method: 'GET', path: `/api/v1/webhooks/listeners?teamId=${STRANGER_TEAM}` },
      { what: 'a selectTeamId of another team', method: 'POST', path: `/api/v1/projects?selectTeamId=${STRANGER_TEAM}`, type: 'application/json', body: '{"name":"x"}' },
      { what: 'a teamId that is not a uuid', method: 'GET', path: '/api/v1/projects?teamId=abc' },
      { what: 'an upload size over 500 GB', method: 'POST', path: '/api/v1/videos/in/uploads', type: 'application/json', body: '{"name":"big","size":500000000001}' },
      {
        what: 'an upload size over 500 GB in another team',
        method: 'POST',
        path: `/api/v1/videos/in/uploads?selectTeamId=${STRANGER_TEAM}`,
        type: 'application/json',
        body: '{"name":"big","size":500000000001}',
      },
      {
        what: 'an upload size of 500 GB and a name too long (the size first)',
        method: 'POST',
        path: '/api/v1/videos/in/uploads',
        type: 'application/json',
        body: `{"name":"${'n'.repeat(300)}","size":500000000001}`,
      },
      {
        what: 'a text/plain body on an operation that takes none',
        method: 'POST',
        path: `/api/v1/videos/${STRANGER_TEAM}/processing/appraisals/create/${STRANGER_TEAM}`,
        type: 'text/plain',
        body: 'x',
      },
      {
        what: 'a JSON body on an operation that takes none',
        method: 'POST',
        path: `/api/v1/videos/${STRANGER_TEAM}/processing/appraisals/create/${STRANGER_TEAM}`,
        type: 'application/json',
        body: '{}',
      },
      { what: 'a body on a DELETE', method: 'DELETE', path: `/api/v1/projects/${STRANGER_TEAM}`, type: 'application/octet-stream', body: 'x' },
      { what: 'an upload size of 0', method: 'POST', path: '/api/v1/videos/in/uploads', type: 'application/json', body: '{"name":"empty","size":0}' },
      { what: 'no body', method: 'POST', path: '/api/v1/projects' },
      { what: 'an empty JSON object', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: '{}' },
      { what: 'a JSON array', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: '[]' },
      { what: 'malformed JSON', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: '{"name":' },
      { what: 'JSON null', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: 'null' },
      { what: 'a text/plain body', method: 'POST', path: '/api/v1/projects', type: 'text/plain', body: 'name=x' },
      { what: 'an unknown property', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: '{"name":"x","colour":"red"}' },
      { what: 'a wrong type', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: '{"name":7}' },
      { what: 'a malformed uuid in the path', method: 'GET', path: '/api/v1/projects/not-a-uuid' },
      { what: 'a malformed uuid in a listener path', method: 'GET', path: '/api/v1/webhooks/listeners/not-a-uuid' },
      { what: 'a query parameter out of range', method: 'GET', path: '/api/v1/projects?pageSize=101' },
      { what: 'a query parameter that is not an integer', method: 'GET', path: '/api/v1/webhooks/listeners?pageNumber=abc' },
      { what: 'a sortBy outside its enum', method: 'GET', path: '/api/v1/projects?sortBy=name' },
      { what: 'an unknown query parameter', method: 'GET', path: '/api/v1/projects?colour=red' },
      { what: 'an unknown path under /api', method: 'GET', path: '/api/v1/nope' },
      { what: 'a path without /api', method: 'GET', path: '/v1/projects' },
      { what: 'a method the path lacks', method: 'PUT', path: '/api/v1/projects', type: 'application/json', body: '{}' },
    ];
    const headersFor = (auth: Auth, own: { apiKey: string; email: string; password: string }): Record<string, string> => {
      switch (auth) {
        case 'key':
        case 'key-for-basic':
          return { 'x-api-key': own.apiKey };
        case 'none':
        case 'no-basic':
          return {};
        case 'bogus-key':
          return { 'x-api-key': 'bogus' };
        case 'unknown-key':
          return { 'x-api-key': `vmk_${'A'.repeat(43)}` };
        case 'basic':
          return basic(own.email, own.password);
        case 'malformed-basic':
          return { authorization: 'Basic !!!' };
        case 'wrong-password':
          return basic(own.email, `${own.password}-wrong`);
      }
    };

    it(`the list covers at least 26 kinds of bad request (${CASES.length})`, () => assert.ok(CASES.length >= 26));
    for (const c of CASES) {
      it(`${c.what}: ${c.method} ${c.path}`, async () => {
        const origin = mock.url.slice(0, -'/api'.length);
        const auth = c.auth ?? 'key';
        const m = await fetch(origin + c.path, { method: c.method, headers: { ...headersFor(auth, creds), ...(c.type ? { 'content-type': c.type } : {}) }, body: c.body });
        const mockBody = (await m.json()) as any;
        let r = (h.request as any)[c.method.toLowerCase()](c.path).set(headersFor(auth, u));
        if (c.type) r = r.set('Content-Type', c.type);
        const server = c.body === undefined ? await r : await r.send(c.body);
        assert.deepEqual([m.status, mockBody.errorCode], [server.status, server.body.errorCode], `mock ${JSON.stringify(mockBody)} server ${JSON.stringify(server.body)}`);
        assert.ok(m.status >= 400, `${m.status} is not an error`);
        if (c.path === '/v1/projects') assert.equal(mockBody.message, 'API paths start with /api: did you mean /api/v1/projects?');
        assertRequiredHeaders(c.method, c.path, m);
        if (m.status === 401) assert.equal(m.headers.get('www-authenticate'), server.headers['www-authenticate'] ?? null, 'the Basic challenge as on the server');
      });
    }
  });

  it('every operation answered with its example request carries the headers the contract marks required (X-Request-Id, X-RateLimit-*)', async () => {
    const checked: string[] = [];
    for (const [template, item] of Object.entries<any>(contract.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (method === 'parameters') continue;
        const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(resolve);
        const pathName = template.replace(/\{(\w+)\}/g, (_m, name: string) => {
          const schema = params.find((p: any) => p.in === 'path' && p.name === name)?.schema ?? {};
          return encodeURIComponent(schema.format === 'uuid' ? '3fa85f64-5717-4562-b3fc-2c963f66afa6' : (schema.example ?? 'agreement-1'));
        });
        const query = new URLSearchParams();
        for (const p of params.filter((x: any) => x.in === 'query' && x.required)) query.set(p.name, String(p.example ?? p.schema.example ?? p.schema.enum?.[0] ?? p.schema.default));
        const requestBody = resolve(op.requestBody);
        const body = requestBody?.content?.['application/json']?.example;
        const headers = template.startsWith('/v1/api-keys') ? basic(creds.email, creds.password) : KEY;
        const url = `${pathName}${query.size ? `?${query.toString()}` : ''}`;
        const res = await call(mock.url, method.toUpperCase(), url, requestBody?.required && body === undefined ? {} : body, headers);
        assert.ok(res.status >= 200 && res.status < 300, `${method.toUpperCase()} ${url}: ${res.status} ${res.text}`);
        assertRequiredHeaders(method.toUpperCase(), `/api${url}`, { status: res.status, headers: res.headers });
        checked.push(op.operationId);
      }
    }
    assert.ok(checked.length > 80, `${checked.length} operations`);
  });

  it('401 without credentials carries only X-Request-Id of the rate headers: no X-RateLimit-* (the server counts no request it cannot charge)', async () => {
    const res = await call(mock.url, 'GET', '/v1/account', undefined, {});
    assertErrorBody(res, 401, 'MISSING_API_KEY', '/api/v1/account');
    assert.equal(res.headers.get('x-ratelimit-limit'), null);
    const ok = await call(mock.url, 'GET', '/v1/account');
    assert.equal(ok.headers.get('x-ratelimit-limit'), '600');
    assert.match(String(ok.headers.get('x-ratelimit-remaining')), /^\d+$/);
  });

  it('credentials: the createApiKey example key and the getAccount e-mail with "mock-password", unless VIDMILL_MOCK_* say otherwise', async () => {
    assert.equal(creds.apiKey, (example('/v1/api-keys', 'post', 201) as any).apiKey);
    assert.equal(creds.email, (example('/v1/account', 'get', 200) as any).user.email);
    assert.equal(creds.password, DEFAULT_MOCK_PASSWORD);
    assert.deepEqual(mockCredentials({ VIDMILL_MOCK_API_KEY: 'k', VIDMILL_MOCK_EMAIL: 'e@x.org', VIDMILL_MOCK_PASSWORD: 'p' }, contract), { apiKey: 'k', email: 'e@x.org', password: 'p' });
    const custom = await startMockServer({ host: '127.0.0.1', port: 0, credentials: { apiKey: 'my-key', email: 'me@example.org', password: 'secret' } });
    try {
      assert.equal((await call(custom.url, 'GET', '/v1/account', undefined, { 'x-api-key': 'my-key' })).status, 200);
      assertErrorBody(await call(custom.url, 'GET', '/v1/account'), 401, 'INVALID_API_KEY', '/api/v1/account');
      assert.equal((await call(custom.url, 'GET', '/v1/api-keys', undefined, basic('me@example.org', 'secret'))).status, 200);
      assertErrorBody(await call(custom.url, 'GET', '/v1/api-keys', undefined, basic(creds.email, creds.password)), 401, 'INVALID_CREDENTIALS', '/api/v1/api-keys');
    } finally {
      await custom.close();
    }
  });

  it('the upload flow works against the mock: uploadUrl on the mock itself, a tus 1.0 endpoint that takes exactly size bytes', async () => {
    const created = await call(mock.url, 'POST', '/v1/videos/in/uploads', { name: 'clip', size: 10 });
    assert.equal(created.status, 201, created.text);
    const uploadUrl = new URL(created.body.uploadUrl);
    assert.equal(uploadUrl.origin, new URL(mock.url).origin);
    assert.match(uploadUrl.pathname, /^\/tus\/uploads\/[0-9a-f]{32}$/);
    assert.equal(uploadUrl.pathname.slice(-32), created.body.videoId.replace(/-/g, ''));
    assert.equal(created.body.size, 10);
    const tus = { 'tus-resumable': '1.0.0' };
    const head = async () => fetch(uploadUrl, { method: 'HEAD', headers: tus });
    assert.deepEqual([(await head()).status, (await head()).headers.get('upload-offset'), (await head()).headers.get('upload-length')], [200, '0', '10']);
    const patch = (offset: number, bytes: Buffer, url: URL | string = uploadUrl) =>
      fetch(url, { method: 'PATCH', headers: { ...tus, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, body: bytes });
    const first = await patch(0, Buffer.alloc(6));
    assert.deepEqual([first.status, first.headers.get('upload-offset')], [204, '6']);
    assert.equal((await patch(0, Buffer.alloc(1))).status, 409, 'a wrong offset');
    assert.equal((await patch(6, Buffer.alloc(5))).status, 413, 'bytes past size');
    const last = await patch(6, Buffer.alloc(4));
    assert.deepEqual([last.status, last.headers.get('upload-offset')], [204, '10']);
    assert.equal((await head()).headers.get('upload-offset'), '10');
    const noToken = new URL(uploadUrl);
    noToken.search = '';
    assert.equal((await fetch(noToken, { method: 'HEAD', headers: tus })).status, 403);
    assert.equal((await fetch(uploadUrl, { method: 'DELETE', headers: tus })).status, 204);
    assert.equal((await head()).status, 404);
    const options = await fetch(`${uploadUrl.origin}/tus/uploads`, { method: 'OPTIONS' });
    assert.deepEqual([options.status, options.headers.get('tus-version')], [204, '1.0.0']);
  });

  it('settings: --port and --host, else VIDMILL_MOCK_PORT / VIDMILL_MOCK_HOST, else 127.0.0.1:4010; a bad port is refused', () => {
    assert.deepEqual(mockSettings([], {}), { help: false, host: '127.0.0.1', port: 4010 });
    assert.deepEqual(mockSettings([], { VIDMILL_MOCK_PORT: '5000', VIDMILL_MOCK_HOST: '0.0.0.0' }), { help: false, host: '0.0.0.0', port: 5000 });
    assert.deepEqual(mockSettings(['--port', '6000'], { VIDMILL_MOCK_PORT: '5000' }), { help: false, host: '127.0.0.1', port: 6000 });
    assert.throws(() => mockSettings(['--port', 'http'], {}), /port must be a number/);
    assert.throws(() => mockSettings(['--bogus'], {}), /Unknown option/);
  });

  it('npm run mock -- --help prints the usage and exits', function () {
    this.timeout(scaled(30_000));
    const root = path.resolve(__dirname, '..', '..');
    // As package.json's `mock` script starts it: node with tsx's loader.
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/mock-server.ts', '--help'], { cwd: root, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^usage: npm run mock/);
    assert.match(r.stdout, /VIDMILL_MOCK_PORT, else 4010/);
  });
});
