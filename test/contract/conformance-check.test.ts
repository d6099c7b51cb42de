/**
 * The response-conformance check the harness installs (test/helpers/contract-conformance.ts),
 * run on a small app with a small contract: it must catch an undeclared status, a missing
 * required header, and anything but 404/405 (or 401) outside the contract.
 */
import { strict as assert } from 'node:assert';
import express from 'express';
import supertest from 'supertest';
import { conformanceCheck, takeViolations } from '../helpers/contract-conformance';

const contract = {
  paths: {
    '/v1/things': {
      get: {
        operationId: 'getThings',
        responses: {
          '200': { description: 'ok', headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' }, 'X-Optional': { required: false } } },
          '404': { $ref: '#/components/responses/NotFound' },
        },
      },
    },
    '/v1/things/special': { get: { operationId: 'getSpecial', responses: { '200': { description: 'ok' } } } },
    '/v1/things/{id}': { get: { operationId: 'getThing', responses: { '404': { description: 'no' } } } },
  },
  components: {
    headers: { 'X-Request-Id': { required: true, schema: { type: 'string' } } },
    responses: { NotFound: { description: 'no', headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } } } },
  },
};

function app(answer: (req: express.Request, res: express.Response) => void) {
  const a = express();
  a.use((_req, res, next) => {
    res.setHeader('X-Request-Id', 'r-' + Math.random());
    next();
  });
  a.use(conformanceCheck(contract));
  a.use(answer);
  return supertest(a);
}

const statusApp = (status: number, headers: Record<string, string> = {}) =>
  app((_req, res) => {
    res.set(headers).status(status).end();
  });

describe('response-conformance check (test helper)', () => {
  afterEach(() => takeViolations());

  it('passes a declared status with its required headers, and ignores paths outside /api', async () => {
    await statusApp(200).get('/api/v1/things');
    await statusApp(404).get('/api/v1/things');
    await statusApp(500).get('/healthz');
    assert.deepEqual(takeViolations(), []);
  });

  it('reports a status the operation does not declare, attributed to the response', async () => {
    const res = await statusApp(409).get('/api/v1/things');
    assert.deepEqual(takeViolations(res.headers['x-request-id']), ['GET /api/v1/things -> 409: getThings does not declare 409 (declared: 200, 404)']);
  });

  it('reports a missing required header (resolved through $ref), not a missing optional one', async () => {
    const bare = app((_req, res) => {
      res.removeHeader('X-Request-Id');
      res.status(404).end();
    });
    const violations = (await bare.get('/api/v1/things'), takeViolations());
    assert.deepEqual(violations, ['GET /api/v1/things -> 404: has no X-Request-Id', 'GET /api/v1/things -> 404: getThings 404 lacks the required header X-Request-Id']);
  });

  it('headers passed to writeHead count', async () => {
    const direct = app((_req, res) => {
      res.removeHeader('X-Request-Id');
      res.writeHead(200, { 'X-Request-Id': 'given' }).end();
    });
    await direct.get('/api/v1/things');
    assert.deepEqual(takeViolations(), []);
  });

  it('literal path segments win over templated ones', async () => {
    await statusApp(200).get('/api/v1/things/special');
    assert.deepEqual(takeViolations(), []);
    await statusApp(200).get('/api/v1/things/3fa85f64');
    assert.match(takeViolations()[0]!, /getThing does not declare 200/);
  });

  it('outside the contract: 404 for an unknown path, 405 with Allow for an unknown method, or 401', async () => {
    await statusApp(404).get('/api/v1/nothing');
    await statusApp(401).get('/api/v1/nothing');
    await statusApp(405, { Allow: 'GET' }).put('/api/v1/things');
    await statusApp(401).put('/api/v1/things');
    assert.deepEqual(takeViolations(), []);
    await statusApp(200).get('/api/v1/nothing');
    await statusApp(404).put('/api/v1/things');
    await statusApp(405).put('/api/v1/things');
    assert.deepEqual(takeViolations(), [
      'GET /api/v1/nothing -> 200: answered 200; outside the contract only 404 (or 401) is documented',
      'PUT /api/v1/things -> 404: answered 404; outside the contract only 405 (or 401) is documented',
      'PUT /api/v1/things -> 405: 405 without Allow',
    ]);
  });
});
