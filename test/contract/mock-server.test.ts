// test-databases: one
// (SQLite only: its subject is the mock server (openapi-backend), compared with the app on one database.)
/**
 * The mock server (scripts/mock-server.ts, `npm run mock`) started in-process on a random port:
 * success statuses and bodies are the contract's examples, bad input is a 400 VALIDATION_ERROR,
 * unknown paths a 404 NOT_FOUND, both with the contract's `Error` body; bad requests get the
 * same status and errorCode as from the real server.
 */
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { MockServer, mockSettings, startMockServer } from '../../scripts/mock-server';
import { createHarness, Harness, TestUser } from '../helpers/harness';

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

async function call(base: string, method: string, p: string, body?: unknown) {
  const res = await fetch(base + p, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
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
    const empty = await fetch(`${mock.url}/v1/projects`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' });
    const emptyBody = (await empty.json()) as any;
    assert.deepEqual([empty.status, emptyBody.errorCode], [400, 'MISSING_REQUEST_BODY']);
    const chunked = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const url = new URL(`${mock.url}/v1/projects`);
      const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
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

    const CASES: Array<{ what: string; method: string; path: string; type?: string; body?: string }> = [
      { what: 'no body', method: 'POST', path: '/api/v1/projects' },
      { what: 'an empty JSON object', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: '{}' },
      { what: 'a JSON array', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: '[]' },
      { what: 'malformed JSON', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: '{"name":' },
      { what: 'JSON null', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: 'null' },
      { what: 'a text/plain body', method: 'POST', path: '/api/v1/projects', type: 'text/plain', body: 'name=x' },
      { what: 'an unknown property', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: '{"name":"x","colour":"red"}' },
      { what: 'a wrong type', method: 'POST', path: '/api/v1/projects', type: 'application/json', body: '{"name":7}' },
      { what: 'a malformed uuid in the path', method: 'GET', path: '/api/v1/projects/not-a-uuid' },
      { what: 'a query parameter out of range', method: 'GET', path: '/api/v1/projects?pageSize=101' },
      { what: 'an unknown path under /api', method: 'GET', path: '/api/v1/nope' },
      { what: 'a path without /api', method: 'GET', path: '/v1/projects' },
      { what: 'a method the path lacks', method: 'PUT', path: '/api/v1/projects', type: 'application/json', body: '{}' },
    ];
    for (const c of CASES) {
      it(`${c.what}: ${c.method} ${c.path}`, async () => {
        const origin = mock.url.slice(0, -'/api'.length);
        const m = await fetch(origin + c.path, { method: c.method, headers: c.type ? { 'content-type': c.type } : {}, body: c.body });
        const mockBody = (await m.json()) as any;
        let r = (h.request as any)[c.method.toLowerCase()](c.path).set('X-API-Key', u.apiKey);
        if (c.type) r = r.set('Content-Type', c.type);
        const server = c.body === undefined ? await r : await r.send(c.body);
        assert.deepEqual([m.status, mockBody.errorCode], [server.status, server.body.errorCode], `mock ${JSON.stringify(mockBody)} server ${JSON.stringify(server.body)}`);
        if (c.path === '/v1/projects') assert.equal(mockBody.message, 'API paths start with /api: did you mean /api/v1/projects?');
      });
    }
  });

  it('settings: --port and --host, else VIDMILL_MOCK_PORT / VIDMILL_MOCK_HOST, else 127.0.0.1:4010; a bad port is refused', () => {
    assert.deepEqual(mockSettings([], {}), { help: false, host: '127.0.0.1', port: 4010 });
    assert.deepEqual(mockSettings([], { VIDMILL_MOCK_PORT: '5000', VIDMILL_MOCK_HOST: '0.0.0.0' }), { help: false, host: '0.0.0.0', port: 5000 });
    assert.deepEqual(mockSettings(['--port', '6000'], { VIDMILL_MOCK_PORT: '5000' }), { help: false, host: '127.0.0.1', port: 6000 });
    assert.throws(() => mockSettings(['--port', 'http'], {}), /port must be a number/);
    assert.throws(() => mockSettings(['--bogus'], {}), /Unknown option/);
  });

  it('npm run mock -- --help prints the usage and exits', function () {
    this.timeout(30_000);
    const root = path.resolve(__dirname, '..', '..');
    const r = spawnSync(path.join(root, 'node_modules', '.bin', 'tsx'), ['scripts/mock-server.ts', '--help'], { cwd: root, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^usage: npm run mock/);
    assert.match(r.stdout, /VIDMILL_MOCK_PORT, else 4010/);
  });
});
