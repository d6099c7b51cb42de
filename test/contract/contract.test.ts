import { strict as assert } from 'node:assert';
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { loadContract } from '../../src/composition';
import { assertHandlersMatchContract, contractOperationIds } from '../../src/http/operations';
import { createHandlers } from '../../src/composition';
import { scaled } from '../helpers/timeouts';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const ROOT = path.resolve(__dirname, '..', '..');
/** A package's command from node_modules/.bin, started directly: `npx` costs a start of npm's own CLI first. */
const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
/**
 * Where the type check keeps what it found (tsc --incremental), so that a later run of this file
 * (CI's second Node version, a developer's next run) checks again only the files that changed
 * and those depending on them; it reports every error again, those of unchanged files included.
 * Under node_modules (ignored, and new with every `npm ci`), like the test media cache.
 */
const TYPECHECK_INFO = path.join(ROOT, 'node_modules', '.cache', 'vidmill-typecheck', 'tsconfig.tsbuildinfo');

// Dialect-independent (no test database): runs once, in the dialect-free pass of npm test.
describe('Contract (openapi/ -> generated/)', () => {
  const doc = loadContract();

  it('npm run generate would not change generated/ or the SDK types in sdk/src/generated/ (no drift)', function () {
    this.timeout(scaled(60_000));
    const res = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/generate.ts', '--check'], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(res.status, 0, res.stderr + res.stdout);
  });

  it('redocly lint with the recommended rules reports 0 errors', function () {
    this.timeout(scaled(60_000));
    const res = spawnSync(bin('redocly'), ['lint', '--config', 'openapi/redocly.yaml', '--format', 'summary', 'generated/openapi.json'], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(res.status, 0, res.stdout + res.stderr);
  });

  it('is OpenAPI 3.1, interface version 2.0.0, with one templated server {scheme}://{host}/api and no vendor host', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '2.0.0');
    assert.equal(doc.servers.length, 1);
    const [server] = doc.servers;
    assert.equal(server.url, '{scheme}://{host}/api');
    assert.deepEqual(server.variables.scheme.enum, ['http', 'https']);
    assert.equal(server.variables.scheme.default, 'http');
    assert.equal(server.variables.host.default, '127.0.0.1:8080');
  });

  it('declares what every response carries: X-Request-Id, 413 and 415 everywhere; X-RateLimit-* on every counted response of a limited operation; WWW-Authenticate on Basic 401s', () => {
    const resolve = (x: any): any =>
      x?.$ref
        ? resolve(
            x.$ref
              .split('/')
              .slice(1)
              .reduce((o: any, k: string) => o[k], doc),
          )
        : x;
    const rateLimit = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const where = `${method.toUpperCase()} ${path}`;
        const isKeyOp = path.startsWith('/v1/api-keys');
        for (const s of ['413', '415']) assert.ok(op.responses[s], `${where} does not declare ${s}`);
        for (const [status, response] of Object.entries<any>(op.responses)) {
          const headers = resolve(response).headers ?? {};
          const required = (h: string) => resolve(headers[h])?.required === true;
          assert.ok(required('X-Request-Id'), `${where} ${status}: X-Request-Id`);
          for (const h of rateLimit) {
            if (isKeyOp || status === '401') assert.equal(headers[h], undefined, `${where} ${status}: ${h} is not sent`);
            else if (status === '500') assert.equal(resolve(headers[h])?.required, false, `${where} ${status}: ${h} optional`);
            else assert.ok(required(h), `${where} ${status}: ${h}`);
          }
          if (isKeyOp && status === '401') assert.ok(required('WWW-Authenticate'), `${where} 401: WWW-Authenticate`);
        }
      }
    }
    for (const [name, response] of Object.entries<any>(doc.components.responses)) assert.equal(resolve(response.headers?.['X-Request-Id'])?.required, true, name);
  });

  it("declares the spec's operations with their paths and methods", () => {
    const expected: [string, string, string][] = [
      ['post', '/v1/api-keys', 'createApiKey'],
      ['get', '/v1/api-keys', 'getApiKeys'],
      ['get', '/v1/api-keys/{id}', 'getApiKeyById'],
      ['patch', '/v1/api-keys/{id}', 'patchApiKey'],
      ['delete', '/v1/api-keys/{id}', 'deleteApiKeyById'],
      ['post', '/v1/api-keys/{id}/deactivate', 'deactivateApiKeyById'],
      ['post', '/v1/api-keys/{id}/activate', 'activateApiKeyById'],
      ['get', '/v1/account', 'getAccount'],
      ['get', '/v1/teams', 'getTeams'],
      ['get', '/v1/teams/{id}', 'getTeamById'],
      ['get', '/v2/wallet/financial-details', 'getWalletFinancialDetails'],
      ['get', '/v2/wallet/billing-periods', 'getWalletBillingPeriods'],
      ['get', '/v2/wallet/billing-periods/{id}', 'getWalletBillingPeriodById'],
      ['get', '/v2/wallet/billing-periods/{id}/transactions', 'getWalletTransactionsByBillingPeriodId'],
      ['get', '/v2/wallet/billing-periods/latest/transactions', 'getWalletTransactionsForLatestBillingPeriod'],
      ['get', '/v2/cloud-marketplace/subscriptions', 'getCloudMarketplaceSubscriptions'],
      ['get', '/v2/cloud-marketplace/subscriptions/{agreementId}', 'getCloudMarketplaceSubscriptionByAgreementId'],
      ['get', '/v2/cloud-marketplace/subscriptions/current', 'getCurrentCloudMarketplaceSubscription'],
      ['get', '/v2/cloud-marketplace/credits-usage', 'getCloudMarketplaceCreditsUsage'],
      ['post', '/v1/projects', 'createProject'],
      ['get', '/v1/projects', 'getProjects'],
      ['get', '/v1/projects/default', 'getDefaultProject'],
      ['get', '/v1/projects/{id}', 'getProjectById'],
      ['patch', '/v1/projects/{id}', 'patchProject'],
      ['delete', '/v1/projects/{id}', 'deleteProjectById'],
      ['post', '/v1/input-locations/bucket', 'createBucketInputLocation'],
      ['get', '/v1/input-locations/bucket', 'getBucketInputLocations'],
      ['get', '/v1/input-locations/bucket/{id}', 'getBucketInputLocationById'],
      ['patch', '/v1/input-locations/bucket/{id}', 'patchBucketInputLocation'],
      ['delete', '/v1/input-locations/bucket/{id}', 'deleteBucketInputLocationById'],
      ['post', '/v1/output-locations/bucket', 'createBucketOutputLocation'],
      ['get', '/v1/output-locations/bucket', 'getBucketOutputLocations'],
      ['get', '/v1/output-locations/bucket/{id}', 'getBucketOutputLocationById'],
      ['patch', '/v1/output-locations/bucket/{id}', 'patchBucketOutputLocation'],
      ['delete', '/v1/output-locations/bucket/{id}', 'deleteBucketOutputLocationById'],
      ['post', '/v1/videos/in/https', 'createMasterVideoFromHttps'],
      ['post', '/v1/videos/in/bucket', 'createMasterVideoFromBucket'],
      ['post', '/v1/videos/in/bucket/{inputLocationId}', 'createMasterVideoFromBucketInputLocationId'],
      ['get', '/v1/videos', 'getVideos'],
      ['get', '/v1/videos/{videoId}', 'getVideoById'],
      ['get', '/v1/videos/{videoId}/in/status', 'getVideoInStatus'],
      ['get', '/v1/videos/{videoId}/derived', 'getDerivedVideos'],
      ['post', '/v1/videos/{videoId}/out/bucket/{outputLocationId}', 'copyVideoDataToBucketOutputLocationId'],
      ['post', '/v1/webhooks', 'createWebhook'],
      ['get', '/v1/webhooks/events', 'getWebhookEvents'],
      ['get', '/v1/webhooks/public-keys/{id}', 'getWebhookPublicKeyById'],
    ];
    for (const [method, path, operationId] of expected) {
      assert.equal(doc.paths[path]?.[method]?.operationId, operationId, `${method.toUpperCase()} ${path}`);
    }
  });

  it('every operation: unique operationId, tags, summary, description, examples, the Error body on every error status', () => {
    const ids = contractOperationIds(doc);
    assert.equal(new Set(ids).size, ids.length);
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const where = `${method.toUpperCase()} ${path}`;
        assert.ok(op.tags?.length && op.summary && op.description, `${where} lacks tags/summary/description`);
        const body = op.requestBody?.content?.['application/json'];
        if (body) assert.ok(body.example !== undefined || body.examples, `${where} request body lacks an example`);
        for (const [status, response] of Object.entries<any>(op.responses)) {
          const resolved = response.$ref ? doc.components.responses[response.$ref.split('/').pop()] : response;
          const json = resolved.content?.['application/json'];
          if (status.startsWith('2') && json) assert.ok(json.example !== undefined || json.examples, `${where} ${status} lacks an example`);
          if (/^[45]/.test(status)) assert.equal(json?.schema?.$ref, '#/components/schemas/Error', `${where} ${status} is not the Error body`);
        }
        for (const s of ['400', '401', '429', '500']) assert.ok(op.responses[s], `${where} does not declare ${s}`);
        const isKeyOp = path.startsWith('/v1/api-keys');
        // 429 per API key, or on API key management per sign-in address and e-mail: Retry-After
        // on both, the X-RateLimit headers only with a per-key budget.
        const tooMany = op.responses['429'].$ref ? doc.components.responses[op.responses['429'].$ref.split('/').pop()] : op.responses['429'];
        assert.ok(tooMany.headers?.['Retry-After'], `${where} 429 lacks Retry-After`);
        assert.equal(Boolean(tooMany.headers?.['X-RateLimit-Limit']), !isKeyOp, `${where} 429 X-RateLimit headers`);
        assert.deepEqual(op.security ?? doc.security, isKeyOp ? [{ basic_auth: [] }] : [{ api_key: [] }], `${where} security`);
      }
    }
  });

  it('every POST accepts Idempotency-Key, declares 409 and 422 with the Error body, and Idempotent-Replayed on its success responses', () => {
    let posts = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      const op = item.post;
      if (!op) continue;
      posts++;
      const where = `POST ${path}`;
      assert.ok(
        op.parameters?.some((p: any) => p.$ref === '#/components/parameters/IdempotencyKey'),
        `${where} lacks Idempotency-Key`,
      );
      for (const s of ['409', '422']) assert.ok(op.responses[s], `${where} does not declare ${s}`);
      for (const [status, response] of Object.entries<any>(op.responses)) {
        if (status.startsWith('2')) assert.ok(response.headers?.['Idempotent-Replayed'], `${where} ${status} lacks Idempotent-Replayed`);
      }
    }
    assert.ok(posts >= 20, `only ${posts} POST operations`);
    const param = doc.components.parameters.IdempotencyKey;
    assert.deepEqual([param.name, param.in, param.schema.minLength, param.schema.maxLength], ['Idempotency-Key', 'header', 1, 255]);
    for (const code of ['IDEMPOTENCY_KEY_IN_USE', 'IDEMPOTENCY_KEY_REUSED']) assert.ok(doc.components.schemas.ErrorCodeEnum.enum.includes(code), code);
  });

  it('request bodies are closed (additionalProperties: false)', () => {
    const schemas = doc.components.schemas;
    const closed = (schema: any): boolean => {
      if (schema.$ref) return closed(schemas[schema.$ref.split('/').pop()]);
      if (schema.type === 'array') return true; // arrays of ids
      if (schema.allOf) return schema.allOf.some(closed);
      return schema.additionalProperties === false;
    };
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const method of METHODS) {
        const schema = item[method]?.requestBody?.content?.['application/json']?.schema;
        if (schema) assert.ok(closed(schema), `${method.toUpperCase()} ${path} accepts unknown properties`);
      }
    }
  });

  it('describes the outgoing webhook request with its four signature headers', () => {
    const hook = doc.webhooks.videoEvent.post;
    const headers = hook.parameters
      .filter((p: any) => p.in === 'header')
      .map((p: any) => p.name)
      .sort();
    assert.deepEqual(headers, ['X-Vidmill-Algorithm', 'X-Vidmill-Public-Key-Id', 'X-Vidmill-Signature', 'X-Vidmill-Timestamp']);
    assert.equal(hook.requestBody.content['application/json'].schema.$ref, '#/components/schemas/WebhookEventPayload');
  });

  it('every operation has exactly one handler and every handler an operation (checked at start)', () => {
    const handlers = createHandlers({} as any) as Record<string, unknown>;
    assert.doesNotThrow(() => assertHandlersMatchContract(doc, handlers));
    const { getAccount: _dropped, ...missing } = handlers;
    assert.throws(() => assertHandlersMatchContract(doc, missing), /operation getAccount has no handler/);
    assert.throws(() => assertHandlersMatchContract(doc, { ...handlers, getAcount: async () => undefined }), /handler getAcount matches no operation/);
  });

  it('the generated types compile with the code that uses them (tsc --noEmit, the whole project)', function () {
    // A whole-project compile: 40-70 s beside the rest of npm test on 2 cores, over 120 s when the
    // machine is shared with more; the limit only guards against a compiler that hangs.
    this.timeout(scaled(300_000));
    execFileSync(bin('tsc'), ['--noEmit', '-p', '.', '--incremental', '--tsBuildInfoFile', TYPECHECK_INFO], { cwd: ROOT, stdio: 'pipe' });
  });
});
