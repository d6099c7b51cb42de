/**
 * Query values with reserved characters (src/http/reserved-query-characters.ts): accepted raw
 * or percent-encoded on every date-time and free-text query parameter, while the published
 * contract keeps SDKs encoding.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { loadContract } from '../../src/composition';
import { PENDING_OPERATIONS } from '../../src/http/pending-operations';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { apiRequests } from '../helpers/scenario';

const doc = loadContract();
const resolve = (x: any): any =>
  x?.$ref
    ? resolve(
        x.$ref
          .split('/')
          .slice(1)
          .reduce((o: any, k: string) => o[k], doc),
      )
    : x;

/** Query parameters taking a date-time or free text, by operation. */
function textQueryParameters(): { method: string; path: string; name: string; format?: string }[] {
  const out: { method: string; path: string; name: string; format?: string }[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of ['get', 'post', 'patch', 'delete']) {
      const op = item[method];
      if (!op || (PENDING_OPERATIONS as readonly string[]).includes(op.operationId)) continue;
      for (const p of [...(item.parameters ?? []), ...(op.parameters ?? [])].map(resolve)) {
        const s = resolve(p.schema);
        if (p.in === 'query' && s.type === 'string' && !s.enum && (s.format === undefined || s.format === 'date-time')) out.push({ method, path, name: p.name, format: s.format });
      }
    }
  }
  return out;
}

describe(`Reserved characters in query values (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  let m: TestUser;
  const { get } = apiRequests(
    () => h,
    () => u,
  );

  before(async () => {
    h = await createHarness();
    h.clock.set('2026-11-10T12:00:00Z');
    u = await h.user();
    m = await h.user({ billingType: 'CLOUD_MARKETPLACE' });
    await h.services.ledger.topUp(u.teamId, 5_000_000); // opens the wallet's first period
  });
  after(() => h.close());

  it('a raw ":" in a date-time is accepted on the transaction lists, credits usage and webhook events, like "%3A"', async () => {
    const period = (await get('/v2/wallet/billing-periods')).body.items[0].id;
    const cases: Array<[string, TestUser]> = [
      ['/v2/wallet/billing-periods/latest/transactions?fromDateTime=2026-11-01T00:00:00Z&toDateTime=2026-11-30T23:59:59Z', u],
      [`/v2/wallet/billing-periods/${period}/transactions?fromDateTime=2026-11-01T00:00:00Z`, u],
      ['/v2/cloud-marketplace/credits-usage?fromDateTime=2026-11-01T00:00:00Z&toDateTime=2026-11-30T23:59:59.999Z', m],
      ['/v1/webhooks/events?occurredAtFrom=2026-11-01T00:00:00Z&occurredAtUntil=2026-12-01T00:00:00Z', u],
    ];
    for (const [path, user] of cases) {
      const raw = await get(path, user);
      assert.equal(raw.status, 200, `${path}: ${JSON.stringify(raw.body)}`);
      const encoded = await get(path.replace(/(\d\d):(\d\d):(\d\d)/g, '$1%3A$2%3A$3'), user);
      assert.equal(encoded.status, 200);
      assert.deepEqual(raw.body, encoded.body, `${path}: raw and encoded mean the same`);
    }
    const page = (await get(cases[0]![0])).body;
    assert.equal(page.filterByFromDateTime, '2026-11-01T00:00:00.000Z');
    assert.equal(page.totalElements, 2, 'the period start and the top-up');
  });

  it('every date-time and free-text query parameter accepts raw reserved characters (never "must be url encoded")', async () => {
    const params = textQueryParameters();
    assert.ok(params.some((p) => p.name === 'videoName') && params.some((p) => p.name === 'occurredAtFrom'));
    for (const p of params) {
      const value = p.format === 'date-time' ? '2026-11-01T00:00:00Z' : "Beach:sunset/2026?@!$'()*,;=take-2";
      const path = p.path.replace(/\{[^}]+\}/g, randomUUID());
      const res = await h.request[p.method as 'get'](`/api${path}?${p.name}=${value}`).set('X-API-Key', u.apiKey);
      assert.ok(!JSON.stringify(res.body).includes('url encoded'), `${p.method.toUpperCase()} ${p.path} ${p.name}: ${JSON.stringify(res.body)}`);
      assert.ok(res.status < 500, `${p.method.toUpperCase()} ${p.path}: ${res.status}`);
    }
  });

  it('a raw "+" still reads as a space (an offset is sent as %2B), and a malformed date-time is 400 VALIDATION_ERROR', async () => {
    assert.equal((await get('/v1/webhooks/events?occurredAtFrom=2026-11-01T01:00:00%2B01:00')).status, 200);
    const plus = await get('/v1/webhooks/events?occurredAtFrom=2026-11-01T01:00:00+01:00');
    assert.equal(plus.status, 400);
    assert.equal(plus.body.errorCode, 'VALIDATION_ERROR');
    assert.equal((await get('/v1/webhooks/events?occurredAtFrom=2026-11-01T10:00')).status, 400);
  });

  it('the published contract declares no allowReserved, so generated SDKs keep percent-encoding', () => {
    assert.ok(!JSON.stringify(doc).includes('"allowReserved"'));
  });
});
