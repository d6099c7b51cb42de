/**
 * Walks every implemented operation of the contract with bad input and expects a 4xx with the
 * `Error` body and a precise errorCode, never a 5xx. Requests are derived from the contract.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import express from 'express';
import supertest, { type Test } from 'supertest';
import { echoedValue, errorMapper, MAX_ECHOED_VALUE } from '../../src/http/error-mapper';
import { loadContract } from '../../src/composition';
import { bodyMaximumsOf } from '../../src/http/body-maximums';
import { MAX_BODY_DEPTH } from '../../src/http/json-body';
import { requestId } from '../../src/http/request-id';
import { contractOperations, ContractOperation, resolveRef } from '../helpers/contract-operations';
import { TEST_DIALECT } from '../helpers/database';
import { INTEGER_LOOKALIKES } from '../helpers/fuzzing';
import { basic, createHarness, expectError, Harness, TestUser, withoutBodyFraming } from '../helpers/harness';

type Op = ContractOperation;

/** A string property with maxLength somewhere in the body schema, to overflow. */
function boundedString(schema: any): { name: string; maxLength: number } | undefined {
  const s = resolveRef(schema);
  for (const part of [s, ...(s?.allOf ?? []).map((x: any) => resolveRef(x))]) {
    for (const [name, prop] of Object.entries<any>(part?.properties ?? {})) {
      const p = resolveRef(prop);
      if (p.type === 'string' && p.maxLength && !p.format) return { name, maxLength: p.maxLength };
    }
  }
  return undefined;
}

describe(`Bad input on every implemented operation (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  /** The app on a port of its own, for requests without body framing. */
  let agent: supertest.Agent;
  before(async () => {
    // Over a thousand requests with one key in well under a minute: the per-key rate limit
    // (which counts rejected bodies too) is not what this file tests.
    h = await createHarness({ bodyLimitBytes: 4096, rateLimitPerMinute: 100_000 });
    u = await h.user();
    agent = await h.listen();
  });
  after(() => h.close());

  const ops = contractOperations();
  const withAuth = (op: Op, t: Test) => (op.path.startsWith('/v1/api-keys') ? t.set('Authorization', basic(u.email, u.password)) : t.set('X-API-Key', u.apiKey));
  const fill = (path: string, value: string = randomUUID()) => path.replace(/\{[^}]+\}/g, value);
  const call = (op: Op, path: string, on: supertest.Agent = h.request) => withAuth(op, (on as any)[op.method](`/api${path}`));

  it('covers the implemented operations', () => {
    assert.ok(ops.length >= 16, `only ${ops.length} operations walked`);
  });

  for (const op of ops) {
    describe(`${op.operationId} (${op.method.toUpperCase()} ${op.path})`, () => {
      // Only uuid path parameters (an agreement id is a free string of 1..128 characters).
      if (op.params.some((p) => p.in === 'path' && resolveRef(p.schema)?.format === 'uuid')) {
        it('invalid uuid in the path is 400 VALIDATION_ERROR', async () => {
          const req = call(op, fill(op.path, 'not-a-uuid'));
          const res = await (op.bodySchema ? req.send({ name: 'valid' }) : req);
          expectError(res, 400, 'VALIDATION_ERROR');
          assert.ok(
            res.body.validationErrors?.some((e: any) => e.field.startsWith('path.')),
            JSON.stringify(res.body),
          );
        });
      }

      if (op.path.includes('{')) {
        it('a malformed percent-escape in the path is 400 INVALID_REQUEST_PATH', async () => {
          for (const bad of ['%ZZ', 'a%E0%A4%A', '%ED%A0%80', '%']) expectError(await call(op, fill(op.path, bad)), 400, 'INVALID_REQUEST_PATH');
        });
      }

      for (const p of op.params.filter((p) => p.in === 'query')) {
        const schema = resolveRef(p.schema);
        const bad: string[] = [];
        if (schema.format === 'uuid') bad.push('not-a-uuid');
        if (schema.type === 'integer') bad.push('abc', String((schema.minimum ?? 0) - 1));
        if (schema.type === 'integer' && schema.maximum !== undefined) bad.push(String(schema.maximum + 1));
        if (schema.enum) bad.push('NOT_A_VALUE');
        for (const value of bad) {
          it(`query ${p.name}=${value} is 400 VALIDATION_ERROR naming the field`, async () => {
            const req = call(op, `${fill(op.path)}?${p.name}=${encodeURIComponent(value)}`);
            const res = await (op.bodySchema ? req.send({}) : req);
            expectError(res, 400, 'VALIDATION_ERROR');
            assert.ok(
              res.body.validationErrors.some((e: any) => e.field === `query.${p.name}`),
              JSON.stringify(res.body.validationErrors),
            );
          });
        }
      }

      for (const p of op.params.filter((p) => resolveRef(p.schema)?.type === 'integer')) {
        const schema = resolveRef(p.schema);
        it(`integer ${p.in} parameter ${p.name}: every loose, infinite, out-of-range or repeated form is 400 VALIDATION_ERROR naming it; its bounds are read`, async () => {
          const send = async (values: string[]) => {
            const query = values.map((v) => `${p.name}=${encodeURIComponent(v)}`).join('&');
            const req = call(op, `${fill(op.path)}?${query}`);
            return op.bodySchema ? req.send(op.bodyExample ?? {}) : req;
          };
          const names = (res: supertest.Response) => res.status === 400 && res.body.validationErrors?.some((e: any) => e.field === `${p.in}.${p.name}`);
          const min = BigInt(schema.minimum ?? (schema.format === 'int32' ? -(2 ** 31) : Number.MIN_SAFE_INTEGER));
          const max = BigInt(schema.maximum ?? (schema.format === 'int32' ? 2 ** 31 - 1 : Number.MAX_SAFE_INTEGER));
          // A lookalike that is a plain decimal within the bounds (2147483648 for an int64) is valid there.
          const withinBounds = (v: string) => /^(0|-?[1-9]\d*)$/.test(v) && BigInt(v) >= min && BigInt(v) <= max;
          const bad = [...INTEGER_LOOKALIKES.filter((v) => !withinBounds(v)), String(min - 1n), String(max + 1n)].map((v) => [v]);
          bad.push([String(min), String(min)], [String(min), 'x']); // given twice
          for (const values of bad) {
            const res = await send(values);
            expectError(res, 400, 'VALIDATION_ERROR');
            assert.ok(names(res), `${p.name}=${values.join(',')}: ${JSON.stringify(res.body.validationErrors)}`);
          }
          for (const v of [String(min), String(max)]) {
            const res = await send([v]);
            assert.ok(res.status < 500 && !names(res), `${p.name}=${v} is within the contract's bounds: ${res.status} ${res.text.slice(0, 300)}`);
          }
        });
      }

      if (op.method === 'post') {
        for (const [what, key] of [
          ['of 256 characters', 'k'.repeat(256)],
          ['that is empty', ''],
        ] as const) {
          it(`an Idempotency-Key ${what} is 400 VALIDATION_ERROR naming the header`, async () => {
            const req = call(op, fill(op.path)).set('Idempotency-Key', key);
            const res = await (op.bodySchema ? req.send({}) : req);
            expectError(res, 400, 'VALIDATION_ERROR');
            assert.ok(
              res.body.validationErrors.some((e: any) => e.field === 'headers.idempotency-key'),
              JSON.stringify(res.body.validationErrors),
            );
          });
        }
      }

      it('an unknown query parameter is 400 VALIDATION_ERROR', async () => {
        const req = call(op, `${fill(op.path)}?surprise=1`);
        expectError(await (op.bodySchema ? req.send({}) : req), 400, 'VALIDATION_ERROR');
      });

      // The JSON parser reads any body, so these hold for operations without a request body too.
      it('a JSON body in an unsupported Content-Encoding is 415 UNSUPPORTED_CONTENT_ENCODING', async () => {
        expectError(await call(op, fill(op.path)).set('Content-Type', 'application/json').set('Content-Encoding', 'x-unknown').send('{}'), 415, 'UNSUPPORTED_CONTENT_ENCODING');
      });
      if (!op.bodySchema) {
        it('a JSON body over the size limit is 413 PAYLOAD_TOO_LARGE (the operation takes none)', async () => {
          expectError(await call(op, fill(op.path)).send({ name: 'x'.repeat(10_000) }), 413, 'PAYLOAD_TOO_LARGE');
        });
        it('any body is 415 UNEXPECTED_REQUEST_BODY (the operation takes none): JSON, {}, text/plain, octet-stream, chunked', async () => {
          for (const [type, body] of [
            ['application/json', '{}'],
            ['application/json', '{"name":"x"}'],
            ['text/plain', 'name=x'],
            ['application/octet-stream', 'x'],
          ]) {
            const res = await call(op, fill(op.path)).set('Content-Type', type!).send(body);
            expectError(res, 415, 'UNEXPECTED_REQUEST_BODY');
            assert.match(res.body.message, /takes no request body/);
          }
          const chunked = call(op, fill(op.path), agent).set('Content-Type', 'text/plain').set('Transfer-Encoding', 'chunked');
          chunked.write('x');
          expectError(await chunked, 415, 'UNEXPECTED_REQUEST_BODY');
        });
        return;
      }
      const target = fill(op.path);
      for (const limit of bodyMaximumsOf(loadContract()).get(op.operationId) ?? []) {
        it(`body.${limit.property} over its maximum (${limit.maximum}) is 400 ${limit.errorCode} naming the field; at the maximum it is not`, async () => {
          const over = await call(op, target).send({ ...(op.bodyExample as object), [limit.property]: limit.maximum + 1 });
          expectError(over, 400, limit.errorCode);
          assert.deepEqual(over.body.validationErrors, [{ field: `body.${limit.property}`, value: String(limit.maximum + 1), message: `must be <= ${limit.maximum}` }]);
          const at = await call(op, target).send({ ...(op.bodyExample as object), [limit.property]: limit.maximum });
          assert.ok(at.status < 500 && at.body?.errorCode !== limit.errorCode && at.body?.errorCode !== 'VALIDATION_ERROR', `${at.status} ${at.text.slice(0, 300)}`);
        });
      }
      it('malformed JSON is 400 INVALID_REQUEST_BODY', async () => {
        expectError(await call(op, target).set('Content-Type', 'application/json').send('{"name": '), 400, 'INVALID_REQUEST_BODY');
      });
      it('a body sent as text/plain is 415 UNSUPPORTED_CONTENT_TYPE', async () => {
        expectError(await call(op, target).set('Content-Type', 'text/plain').send('{"name":"x"}'), 415, 'UNSUPPORTED_CONTENT_TYPE');
      });
      if (op.bodyRequired) {
        it('a missing body is 400 MISSING_REQUEST_BODY', async () => {
          expectError(await call(op, target), 400, 'MISSING_REQUEST_BODY');
        });
        it('a body announced by neither Content-Length nor Transfer-Encoding is missing: 400 MISSING_REQUEST_BODY', async () => {
          expectError(await withoutBodyFraming(call(op, target, agent).set('Content-Type', 'application/json')), 400, 'MISSING_REQUEST_BODY');
        });
        it('an empty chunked body is missing: 400 MISSING_REQUEST_BODY', async () => {
          const req = call(op, target, agent).set('Content-Type', 'application/json').set('Transfer-Encoding', 'chunked');
          req.write('');
          expectError(await req, 400, 'MISSING_REQUEST_BODY');
        });
      }
      it(`a body nested deeper than ${MAX_BODY_DEPTH} levels is 400 REQUEST_BODY_TOO_DEEP`, async () => {
        for (const deep of ['['.repeat(1000) + ']'.repeat(1000), '{"a":'.repeat(600) + '1' + '}'.repeat(600)]) {
          expectError(await call(op, target).set('Content-Type', 'application/json').send(deep), 400, 'REQUEST_BODY_TOO_DEEP');
        }
      });
      it('Content-Encoding: gzip on a body that is not gzip is 400 INVALID_REQUEST_BODY', async () => {
        const res = await call(op, target).set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').send(JSON.stringify(op.bodyExample));
        expectError(res, 400, 'INVALID_REQUEST_BODY');
      });
      it('an unknown property is 400 VALIDATION_ERROR', async () => {
        const res = await call(op, target).send({ unexpected: true });
        expectError(res, 400, 'VALIDATION_ERROR');
      });
      it('a JSON array instead of an object is 400 VALIDATION_ERROR; a bare scalar is 400 INVALID_REQUEST_BODY', async () => {
        expectError(await call(op, target).set('Content-Type', 'application/json').send('[1,2]'), 400, 'VALIDATION_ERROR');
        expectError(await call(op, target).set('Content-Type', 'application/json').send('"text"'), 400, 'INVALID_REQUEST_BODY');
      });
      it('a body over the size limit is 413 PAYLOAD_TOO_LARGE', async () => {
        expectError(await call(op, target).send({ name: 'x'.repeat(10_000) }), 413, 'PAYLOAD_TOO_LARGE');
      });
      const bounded = boundedString(op.bodySchema);
      if (bounded) {
        it(`${bounded.name} over ${bounded.maxLength} characters is 400 VALIDATION_ERROR with the field and value`, async () => {
          const res = await call(op, target).send({ [bounded.name]: 'x'.repeat(bounded.maxLength + 1) });
          expectError(res, 400, 'VALIDATION_ERROR');
          const issue = res.body.validationErrors.find((e: any) => e.field === `body.${bounded.name}`);
          assert.ok(issue, JSON.stringify(res.body.validationErrors));
          // Echoed back shortened past MAX_ECHOED_VALUE characters (objectKeyPrefix allows 1024).
          const sent = 'x'.repeat(bounded.maxLength + 1);
          assert.equal(issue.value, sent.length > MAX_ECHOED_VALUE ? sent.slice(0, MAX_ECHOED_VALUE) + '…' : sent);
        });
      }
      if (bounded) {
        it(`a number where ${bounded.name} wants a string is 400 VALIDATION_ERROR (bodies are not coerced)`, async () => {
          const res = await call(op, target).send({ [bounded.name]: 12345678 });
          expectError(res, 400, 'VALIDATION_ERROR');
          assert.ok(
            res.body.validationErrors.some((e: any) => e.field === `body.${bounded.name}`),
            JSON.stringify(res.body.validationErrors),
          );
        });
      }
      if (op.method === 'patch') {
        it('an empty PATCH body is 400 VALIDATION_ERROR', async () => {
          expectError(await call(op, target).send({}), 400, 'VALIDATION_ERROR');
        });
      }
    });
  }

  it('a rejected secret is never echoed back in validationErrors', async () => {
    const secret = 'S'.repeat(300);
    const res = await h.request.post('/api/v1/input-locations/bucket').set('X-API-Key', u.apiKey).send({ name: 'n', bucket: 'bucket', accessKey: 'AKIAEXAMPLE', secretAccessKey: secret });
    expectError(res, 400, 'VALIDATION_ERROR');
    const issue = res.body.validationErrors.find((e: any) => e.field === 'body.secretAccessKey');
    assert.ok(issue, JSON.stringify(res.body.validationErrors));
    assert.equal(issue.value, undefined);
    assert.doesNotMatch(res.text, /SSSSSSSS/);
  });

  it('validationErrors redact secret-named fields at any depth: an unknown property holding a secretAccessKey and a nested password, on every operation with a body', async () => {
    const unknown = { secretAccessKey: 'S3CR3T', nested: { password: 'x' } };
    let echoed = 0;
    for (const op of ops.filter((o) => o.bodySchema)) {
      const example = op.bodyExample;
      const body = example !== null && typeof example === 'object' && !Array.isArray(example) ? { ...example, extraSettings: unknown } : { extraSettings: unknown };
      const res = await call(op, fill(op.path)).send(body);
      const where = `${op.method.toUpperCase()} ${op.path}: ${res.status} ${res.text}`;
      assert.ok(res.status >= 400 && res.status < 500, where);
      assert.doesNotMatch(res.text, /S3CR3T/, where);
      assert.doesNotMatch(res.text, /\\?"x\\?"/, where);
      const issue = res.body.validationErrors?.find((e: any) => e.field === 'body.extraSettings');
      if (issue?.value === undefined) continue;
      echoed++;
      assert.equal(issue.value, JSON.stringify({ secretAccessKey: '[redacted]', nested: { password: '[redacted]' } }), where);
    }
    // The unknown object is echoed (redacted) by most operations, not dropped.
    assert.ok(echoed >= 10, `echoed by ${echoed} operations`);
  });

  it(`a body nested exactly ${MAX_BODY_DEPTH} levels is read (and validated)`, async () => {
    const res = await h.request
      .post('/api/v1/projects')
      .set('X-API-Key', u.apiKey)
      .set('Content-Type', 'application/json')
      .send(`{"name":"deep","description":${'['.repeat(MAX_BODY_DEPTH - 1)}${']'.repeat(MAX_BODY_DEPTH - 1)}}`);
    expectError(res, 400, 'VALIDATION_ERROR');
  });

  it(`MAX_BODY_DEPTH (${MAX_BODY_DEPTH}) is above the deepest request body the contract allows`, () => {
    const depths = Object.fromEntries(ops.filter((op) => op.bodySchema).map((op) => [op.operationId, schemaDepth(op.bodySchema)]));
    for (const [id, depth] of Object.entries(depths)) assert.ok(depth < MAX_BODY_DEPTH, `${id} allows bodies ${depth} deep`);
  });

  describe('Malformed input rules', () => {
    const project = () => h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).set('Content-Type', 'application/json');

    it('a malformed percent-escape anywhere (media links, /docs, /openapi.json, /healthz, unknown paths) is 400 INVALID_REQUEST_PATH, as JSON', async () => {
      for (const path of [
        '/media/v1/videos/%ZZ/download',
        `/media/v1/videos/${randomUUID()}/assets/%E0%A4%A`,
        '/media/v1/compare/%ZZ/x',
        '/docs/%ZZ',
        '/openapi.json%ZZ',
        '/healthz%',
        '/%ZZ',
        '/api/%ZZ',
      ]) {
        expectError(await h.request.get(path), 400, 'INVALID_REQUEST_PATH');
      }
    });

    it('a body compressed with gzip, deflate or br is read', async () => {
      for (const [encoding, compress] of [
        ['gzip', gzipSync],
        ['deflate', deflateSync],
        ['br', brotliCompressSync],
      ] as const) {
        const res = await project()
          .set('Content-Encoding', encoding)
          .serialize((x: any) => x)
          .send(compress(Buffer.from(JSON.stringify({ name: `sent as ${encoding}` }))));
        assert.equal(res.status, 201, res.text);
        assert.equal(res.body.name, `sent as ${encoding}`);
      }
    });

    it('a compressed body that does not decode (cut short, or another coding) is 400 INVALID_REQUEST_BODY', async () => {
      const gz = gzipSync(Buffer.from(JSON.stringify({ name: 'x' })));
      expectError(
        await project()
          .set('Content-Encoding', 'gzip')
          .serialize((x: any) => x)
          .send(gz.subarray(0, gz.length - 6)),
        400,
        'INVALID_REQUEST_BODY',
      );
      expectError(
        await project()
          .set('Content-Encoding', 'br')
          .serialize((x: any) => x)
          .send(gz),
        400,
        'INVALID_REQUEST_BODY',
      );
    });

    it('an unknown Content-Encoding is 415 UNSUPPORTED_CONTENT_ENCODING', async () => {
      for (const encoding of ['compress', 'x-gzip', 'gzip, gzip', 'bogus']) {
        expectError(await project().set('Content-Encoding', encoding).send('{"name":"x"}'), 415, 'UNSUPPORTED_CONTENT_ENCODING');
      }
    });

    it('a Content-Encoding on an empty body is no body: 400 MISSING_REQUEST_BODY', async () => {
      expectError(await project().set('Content-Encoding', 'gzip').set('Content-Length', '0'), 400, 'MISSING_REQUEST_BODY');
    });

    it('a missing body reaches no handler: PATCH of an API key without a body changes nothing', async () => {
      const before = await h.services.apiKeys.get(u.userId, u.apiKeyId);
      const res = await withoutBodyFraming(agent.patch(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', basic(u.email, u.password)).set('Content-Type', 'application/json'));
      expectError(res, 400, 'MISSING_REQUEST_BODY');
      assert.deepEqual(await h.services.apiKeys.get(u.userId, u.apiKeyId), before);
    });

    it('a string holding U+0000 is 400 VALIDATION_ERROR naming the field, in the body, the path and the query', async () => {
      const body = await project().send('{"name":"a\\u0000b"}');
      expectError(body, 400, 'VALIDATION_ERROR');
      assert.deepEqual(body.body.validationErrors, [{ field: 'body.name', message: 'must not contain the character U+0000' }]);
      const market = await h.user({ billingType: 'CLOUD_MARKETPLACE' });
      const path = await h.request.get('/api/v2/cloud-marketplace/subscriptions/a%00b').set('X-API-Key', market.apiKey);
      expectError(path, 400, 'VALIDATION_ERROR');
      assert.equal(path.body.validationErrors[0].field, 'path.agreementId');
      const query = await h.request.get('/api/v1/videos?videoDescription=%00').set('X-API-Key', u.apiKey);
      expectError(query, 400, 'VALIDATION_ERROR');
      assert.equal(query.body.validationErrors[0].field, 'query.videoDescription');
    });

    it('a uuid, date or date-time that a database column or a Date cannot hold is 400 VALIDATION_ERROR', async () => {
      const cases: [string, string][] = [
        [`/api/v1/projects/urn:uuid:${randomUUID()}`, 'path.id'],
        ['/api/v2/wallet/billing-periods?fromDate=2026-19-39', 'query.fromDate'],
        ['/api/v1/webhooks/events?occurredAtFrom=2026-12-31T23:59:60Z', 'query.occurredAtFrom'],
        ['/api/v1/webhooks/events?occurredAtFrom=2026-19-39T29:59:59Z', 'query.occurredAtFrom'],
        ['/api/v1/webhooks/events?occurredAtFrom=2026-01-01T00:00:00%2B0100', 'query.occurredAtFrom'],
      ];
      for (const [path, field] of cases) {
        const res = await h.request.get(path).set('X-API-Key', u.apiKey);
        expectError(res, 400, 'VALIDATION_ERROR');
        assert.ok(
          res.body.validationErrors.some((e: any) => e.field === field),
          JSON.stringify(res.body),
        );
      }
      const body = await h.request.post('/api/v1/webhooks/events/replay').set('X-API-Key', u.apiKey).send({ occurredAtFrom: '2026-01-01T24:61:00Z', occurredAtUntil: '2026-01-02T00:00:00Z' });
      expectError(body, 400, 'VALIDATION_ERROR');
    });

    it('a field name that is not a valid percent-escape is named as sent', async () => {
      const query = await h.request.get('/api/v1/projects?%ZZ=1').set('X-API-Key', u.apiKey);
      expectError(query, 400, 'VALIDATION_ERROR');
      assert.ok(
        query.body.validationErrors.some((e: any) => e.field === 'query.%ZZ'),
        JSON.stringify(query.body),
      );
      const body = await project().send('{"name":"x","a%ZZ":1}');
      expectError(body, 400, 'VALIDATION_ERROR');
      assert.ok(
        body.body.validationErrors.some((e: any) => e.field === 'body.a%ZZ'),
        JSON.stringify(body.body),
      );
    });

    it('a rejected value too deep to serialise is not echoed', () => {
      let deep: unknown = 1;
      for (let i = 0; i < 100_000; i++) deep = [deep];
      assert.equal(echoedValue({ body: { v: deep } }, ['body', 'v']), undefined);
    });

    it('the error mapper never throws: a failure while mapping answers a minimal JSON 500', async () => {
      const app = express();
      app.use(requestId);
      const unmappable = Object.defineProperty(new Error('boom'), 'status', {
        get() {
          throw new Error('a getter that throws');
        },
      });
      app.get('/x', (_req, _res, next) => next(unmappable));
      app.use(errorMapper);
      expectError(await supertest(app).get('/x'), 500, 'INTERNAL_SERVER_ERROR');
    });

    it("a request Node's HTTP parser refuses is answered with the Error body too (400 BAD_REQUEST, 431 REQUEST_HEADERS_TOO_LARGE)", async () => {
      const { port } = new URL(agent.get('/').url);
      const raw = (text: string) =>
        new Promise<string>((resolve, reject) => {
          let out = '';
          const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
          socket
            .on('data', (d) => (out += d.toString()))
            .on('close', () => resolve(out))
            .on('error', reject);
        });
      const cases: [string, number, string][] = [
        ['GET /api/v1/projects HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', 400, 'BAD_REQUEST'],
        ['POST /api/v1/projects HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}', 400, 'BAD_REQUEST'],
        [`GET /api/v1/projects HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'REQUEST_HEADERS_TOO_LARGE'],
      ];
      for (const [request, status, code] of cases) {
        const answer = await raw(request);
        const [head = '', body = ''] = answer.split('\r\n\r\n');
        assert.match(head, new RegExp(`^HTTP/1.1 ${status} `), answer);
        assert.match(head, /content-type: application\/json/i);
        const error = JSON.parse(body);
        assert.equal(error.errorCode, code);
        assert.equal(error.statusCode, status);
        assert.equal(error.requestId, /x-request-id: (\S+)/i.exec(head)?.[1]);
      }
    });

    it('whatever NODE_ENV, no error is answered with HTML or a stack', async () => {
      const env = h.app.get('env');
      h.app.set('env', 'development'); // Express's final handler would print the stack as HTML
      try {
        for (const res of [
          await h.request.get('/api/v1/videos/%ZZ').set('X-API-Key', u.apiKey),
          await project().send('['.repeat(1000) + ']'.repeat(1000)),
          await project().set('Content-Encoding', 'gzip').send('{"name":"x"}'),
          await h.request.get('/docs/%ZZ'),
        ]) {
          assert.match(String(res.headers['content-type']), /^application\/json/);
          assert.doesNotMatch(res.text, /<html|<pre>|\n\s+at |\.ts:\d+/i);
        }
      } finally {
        h.app.set('env', env);
      }
    });
  });
});

/** Deepest nesting of arrays and objects a body valid against `schema` can have (Infinity: unbounded). */
function schemaDepth(schema: any, path: Set<any> = new Set()): number {
  const s = resolveRef(schema);
  if (s === true || (s && typeof s === 'object' && Object.keys(s).length === 0)) return Infinity; // any JSON
  if (!s || typeof s !== 'object') return 0;
  if (path.has(s)) return Infinity; // a recursive schema
  path.add(s);
  const sameLevel = [...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])].map((x) => schemaDepth(x, path));
  const types = [s.type].flat();
  const container = types.includes('object') || types.includes('array') || s.properties || s.items;
  const free = types.includes('object') && !s.properties && s.additionalProperties === undefined; // any object
  const inner = [...Object.values(s.properties ?? {}), s.items, typeof s.additionalProperties === 'object' ? s.additionalProperties : s.additionalProperties === true ? true : undefined]
    .filter((x) => x !== undefined)
    .map((x) => schemaDepth(x, path));
  path.delete(s);
  return Math.max(0, ...sameLevel, free ? Infinity : container ? 1 + Math.max(0, ...inner) : 0);
}
