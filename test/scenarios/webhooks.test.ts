import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, expectError, Harness, TestUser } from '../helpers/harness';

const BASE = '/api/v1/webhooks';
const PUBLIC_URL = 'https://1.1.1.1/vidmill-hook';

describe(`Webhooks API (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;

  const body = (overrides: Record<string, unknown> = {}) => ({
    name: 'Processing notifications',
    url: PUBLIC_URL,
    eventTypes: ['video_processing.done', 'video_processing.failed'],
    active: true,
    ...overrides,
  });
  const as = (user: TestUser) => ({
    post: (path: string, b?: object) => (b === undefined ? h.request.post(path).set('X-API-Key', user.apiKey) : h.request.post(path).set('X-API-Key', user.apiKey).send(b)),
    get: (path: string) => h.request.get(path).set('X-API-Key', user.apiKey),
    patch: (path: string, b: object) => h.request.patch(path).set('X-API-Key', user.apiKey).send(b),
    delete: (path: string) => h.request.delete(path).set('X-API-Key', user.apiKey),
  });
  const created = async (b: object = body(), user = u): Promise<any> => {
    const res = await as(user).post(BASE, b);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };

  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());
  beforeEach(async () => {
    u = await h.user();
  });

  it('createWebhook: 201 with defaults rateLimitPerSecond 10 and maxTotalRetryDelayMinutes 180', async () => {
    const w = await created(body({ description: 'Tells our backend' }));
    assert.match(w.id, /^[0-9a-f-]{36}$/);
    assert.equal(w.teamId, u.teamId);
    assert.equal(w.active, true);
    assert.equal(w.rateLimitPerSecond, 10);
    assert.equal(w.maxTotalRetryDelayMinutes, 180);
    assert.equal(w.description, 'Tells our backend');
    assert.deepEqual(w.eventTypes, ['video_processing.done', 'video_processing.failed']);
    const got = await as(u).get(`${BASE}/${w.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, w);
  });

  it('createWebhook: explicit settings are kept; getWebhooks pages them, filtered by teamId', async () => {
    const w = await created(body({ rateLimitPerSecond: 1000, maxTotalRetryDelayMinutes: 0, active: false }));
    assert.equal(w.rateLimitPerSecond, 1000);
    assert.equal(w.maxTotalRetryDelayMinutes, 0);
    await created(body({ name: 'Second' }));
    const list = await as(u).get(`${BASE}?teamId=${u.teamId}&pageSize=1&sortDirection=DESC`);
    assert.equal(list.status, 200);
    assert.equal(list.body.totalElements, 2);
    assert.equal(list.body.items.length, 1);
    const other = await h.user();
    const none = await as(other).get(BASE);
    assert.equal(none.body.totalElements, 0);
  });

  it('patchWebhook changes settings, not activation; a new URL is checked', async () => {
    const w = await created();
    h.clock.advance(1000);
    const res = await as(u).patch(`${BASE}/${w.id}`, { rateLimitPerSecond: 25, eventTypes: ['video.deleted'], maxTotalRetryDelayMinutes: 1440 });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.rateLimitPerSecond, 25);
    assert.equal(res.body.maxTotalRetryDelayMinutes, 1440);
    assert.deepEqual(res.body.eventTypes, ['video.deleted']);
    assert.notEqual(res.body.updatedAt, w.updatedAt);
    expectError(await as(u).patch(`${BASE}/${w.id}`, { active: false }), 400, 'VALIDATION_ERROR');
    expectError(await as(u).patch(`${BASE}/${w.id}`, { url: 'https://127.0.0.1/x' }), 400, 'INVALID_HTTPS_URL');
    expectError(await as(u).patch(`${BASE}/${w.id}`, {}), 400, 'VALIDATION_ERROR');
  });

  it('activate/deactivate are idempotent; at most 10 active webhooks per team (409 on create and activate)', async () => {
    const hooks = [];
    for (let i = 0; i < 10; i++) hooks.push(await created(body({ name: `hook ${i}` })));
    expectError(await as(u).post(BASE, body({ name: 'eleventh' })), 409, 'MAXIMUM_AMOUNT_OF_ACTIVE_WEBHOOKS_REACHED');
    const inactive = await created(body({ name: 'inactive', active: false }));
    expectError(await as(u).post(`${BASE}/${inactive.id}/activate`), 409, 'MAXIMUM_AMOUNT_OF_ACTIVE_WEBHOOKS_REACHED');
    const again = await as(u).post(`${BASE}/${hooks[0].id}/activate`);
    assert.equal(again.status, 200);
    assert.equal(again.body.active, true);
    const off = await as(u).post(`${BASE}/${hooks[0].id}/deactivate`);
    assert.equal(off.status, 200);
    assert.equal(off.body.active, false);
    assert.equal((await as(u).post(`${BASE}/${hooks[0].id}/deactivate`)).body.active, false);
    const on = await as(u).post(`${BASE}/${inactive.id}/activate`);
    assert.equal(on.status, 200);
    assert.equal(on.body.active, true);
  });

  it('the 10-active rule holds under concurrent activations', async () => {
    const hooks = [];
    for (let i = 0; i < 14; i++) hooks.push(await created(body({ name: `h${i}`, active: false })));
    const results = await Promise.all(hooks.map((w) => as(u).post(`${BASE}/${w.id}/activate`)));
    assert.equal(results.filter((r) => r.status === 200).length, 10);
    assert.equal(results.filter((r) => r.status === 409).length, 4);
    const list = await as(u).get(`${BASE}?pageSize=100`);
    assert.equal(list.body.items.filter((w: any) => w.active).length, 10);
  });

  it("deleteWebhookById: 204, then 404; another team's webhook is 404 everywhere", async () => {
    const w = await created();
    const other = await h.user();
    expectError(await as(other).get(`${BASE}/${w.id}`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await as(other).patch(`${BASE}/${w.id}`, { name: 'x' }), 404, 'RESOURCE_NOT_FOUND');
    expectError(await as(other).delete(`${BASE}/${w.id}`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await as(other).post(`${BASE}/${w.id}/activate`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await as(other).post(`${BASE}/${w.id}/test`), 404, 'RESOURCE_NOT_FOUND');
    assert.equal((await as(u).delete(`${BASE}/${w.id}`)).status, 204);
    expectError(await as(u).get(`${BASE}/${w.id}`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await as(u).delete(`${BASE}/${randomUUID()}`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await as(u).get(`${BASE}/events/${randomUUID()}`), 404, 'RESOURCE_NOT_FOUND');
  });

  describe('bad input', () => {
    const urlCases: Array<[string, string]> = [
      ['http://1.1.1.1/hook', 'http'],
      ['https://1.1.1.1:8443/hook', 'port other than 443'],
      ['https://user:pw@1.1.1.1/hook', 'credentials in the URL'],
      ['https://127.0.0.1/hook', 'loopback'],
      ['https://localhost/hook', 'localhost (resolves to loopback)'],
      ['https://10.0.0.8/hook', 'RFC 1918'],
      ['https://172.20.1.1/hook', 'RFC 1918'],
      ['https://192.168.1.10/hook', 'RFC 1918'],
      ['https://100.64.0.1/hook', 'CGNAT'],
      ['https://169.254.169.254/latest/meta-data', 'link-local metadata address'],
      ['https://224.0.0.1/hook', 'multicast'],
      ['https://0.0.0.0/hook', 'unspecified'],
      ['https://[::1]/hook', 'IPv6 loopback'],
      ['https://[fd00::1]/hook', 'IPv6 unique local'],
      ['https://[fe80::1]/hook', 'IPv6 link-local'],
      ['https://[::ffff:127.0.0.1]/hook', 'IPv4-mapped loopback'],
      ['https://2130706433/hook', 'loopback as a decimal number'],
      ['https://no-such-host.invalid/hook', 'a name that does not resolve'],
    ];
    for (const [url, why] of urlCases) {
      it(`createWebhook refuses ${why}: 400 INVALID_HTTPS_URL`, async () => {
        expectError(await as(u).post(BASE, body({ url })), 400, 'INVALID_HTTPS_URL');
      });
    }

    const bodyCases: Array<[string, Record<string, unknown>]> = [
      ['a name of 48 characters', { name: 'n'.repeat(48) }],
      ['an empty name', { name: '' }],
      ['a description of 256 characters', { description: 'd'.repeat(256) }],
      ['a URL of 4097 characters', { url: `https://1.1.1.1/${'a'.repeat(4081)}` }],
      ['no eventTypes', { eventTypes: [] }],
      ['an unknown event type', { eventTypes: ['video.exploded'] }],
      ['a duplicate event type', { eventTypes: ['video.deleted', 'video.deleted'] }],
      ['rateLimitPerSecond 0', { rateLimitPerSecond: 0 }],
      ['rateLimitPerSecond 1001', { rateLimitPerSecond: 1001 }],
      ['maxTotalRetryDelayMinutes -1', { maxTotalRetryDelayMinutes: -1 }],
      ['maxTotalRetryDelayMinutes 1441', { maxTotalRetryDelayMinutes: 1441 }],
      ['an unknown property', { colour: 'blue' }],
      ['no active', { active: undefined }],
    ];
    for (const [why, overrides] of bodyCases) {
      it(`createWebhook with ${why}: 400 VALIDATION_ERROR`, async () => {
        const b: any = body(overrides);
        for (const k of Object.keys(b)) if (b[k] === undefined) delete b[k];
        expectError(await as(u).post(BASE, b), 400, 'VALIDATION_ERROR');
      });
    }

    it('all 22 event types are accepted', async () => {
      const all = h.services && (await import('../../src/composition')).loadContract().components.schemas.WebhookEventType.enum;
      assert.equal(all.length, 22);
      const w = await created(body({ eventTypes: all }));
      assert.equal(w.eventTypes.length, 22);
    });

    it('test event: 409 WEBHOOK_NOT_ACTIVE, 409 CONFLICT for a type not subscribed, 400 for an unknown type', async () => {
      const inactive = await created(body({ active: false }));
      expectError(await as(u).post(`${BASE}/${inactive.id}/test`), 409, 'WEBHOOK_NOT_ACTIVE');
      const w = await created();
      expectError(await as(u).post(`${BASE}/${w.id}/test?eventType=video.deleted`), 409, 'CONFLICT');
      expectError(await as(u).post(`${BASE}/${w.id}/test?eventType=nope`), 400, 'VALIDATION_ERROR');
      expectError(await as(u).post(`${BASE}/${w.id}/test?videoId=not-a-uuid`), 400, 'VALIDATION_ERROR');
    });

    it('getWebhookEvents: occurredAtFrom after occurredAtUntil is 400 INVALID_DATE_TIME_RANGE', async () => {
      expectError(
        await as(u).get(`${BASE}/events?occurredAtFrom=${encodeURIComponent('2026-01-02T00:00:00Z')}&occurredAtUntil=${encodeURIComponent('2026-01-01T00:00:00Z')}`),
        400,
        'INVALID_DATE_TIME_RANGE',
      );
      expectError(await as(u).get(`${BASE}/events?successfulMode=SOMETIMES`), 400, 'VALIDATION_ERROR');
    });
  });

  it('testVideoWebhookById: 200 with a pending test event; 1000 test events per team per 24 h, then 409', async () => {
    const w = await created();
    const videoId = randomUUID();
    const res = await as(u).post(`${BASE}/${w.id}/test?videoId=${videoId}&eventType=video_processing.done`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const e = res.body;
    assert.equal(e.teamId, u.teamId);
    assert.equal(e.payload.id, e.id);
    assert.equal(e.payload.webhookId, w.id);
    assert.equal(e.payload.eventType, 'video_processing.done');
    assert.equal(e.payload.test, true);
    assert.equal(e.payload.attemptCount, 0);
    assert.deepEqual(e.payload.data, { type: 'VIDEO', videoId });
    assert.equal(e.successful, null);
    assert.ok(e.nextAttemptEarliestAt);
    assert.deepEqual(e.responses, []);
    const random = await as(u).post(`${BASE}/${w.id}/test`);
    assert.ok(w.eventTypes.includes(random.body.payload.eventType));
    assert.match(random.body.payload.data.videoId, /^[0-9a-f-]{36}$/);

    // Fill the day's budget directly (998 more), then the 1001st is refused.
    const db = h.services.db;
    const now = h.clock.now();
    const rows = Array.from({ length: 998 }, () => ({
      id: randomUUID(),
      team_id: u.teamId,
      event_type: 'video_processing.done',
      occurred_at: now,
      data: '{}',
      test: true,
      created_at: now,
    }));
    for (let i = 0; i < rows.length; i += 100) await db('webhook_events').insert(rows.slice(i, i + 100));
    expectError(await as(u).post(`${BASE}/${w.id}/test`), 409, 'TOO_MANY_WEBHOOK_TEST_EVENTS');
    h.clock.advance(24 * 3600_000 + 1000);
    assert.equal((await as(u).post(`${BASE}/${w.id}/test`)).status, 200);
  });
});
