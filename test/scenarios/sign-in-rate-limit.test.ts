/**
 * Budgets of failed HTTP Basic sign-ins per client address and per e-mail (docs/security.md,
 * "Sign-in limits"): over budget is 429 TOO_MANY_REQUESTS with Retry-After and the Error body;
 * an address over its budget is refused before any password is verified. Sign-ins with the
 * right password are not counted.
 */
import { strict as assert } from 'node:assert';
import type supertest from 'supertest';
import type { Config } from '../../src/config';
import { sweepEndedRateWindows } from '../../src/http/rate-limit';
import { TEST_DIALECT } from '../helpers/database';
import { basic, createHarness, expectError, Harness } from '../helpers/harness';

function expectSignInLimited(res: supertest.Response): void {
  expectError(res, 429, 'TOO_MANY_REQUESTS');
  const retryAfter = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${res.headers['retry-after']}`);
  // API key management has no per-key budget, so none of its headers.
  assert.equal(res.headers['x-ratelimit-limit'], undefined);
}

describe(`Sign-in rate limits (${TEST_DIALECT})`, () => {
  let h: Harness;
  let checks: number;
  const start = async (signInRateLimit: Config['signInRateLimit'], trustProxy: Config['trustProxy'] = false) => {
    h = await createHarness({ signInRateLimit, trustProxy });
    checks = 0;
    const verify = h.services.accounts.checkPassword.bind(h.services.accounts);
    h.services.accounts.checkPassword = (password, hash) => {
      checks++;
      return verify(password, hash);
    };
  };
  afterEach(() => h.close());

  const signIn = (email: string, password: string, request: supertest.Agent = h.request) => request.get('/api/v1/api-keys').set('Authorization', basic(email, password));

  it('budgets count failed sign-ins: 30 API key operations in a minute with the right password all succeed', async () => {
    await start({ perAddressPerMinute: 3, perEmailPerMinute: 3 });
    const u = await h.user();
    const auth = basic(u.email, u.password);
    const statuses: number[] = [];
    // A key-rotation script: create a key, deactivate the old one, delete it; 30 operations,
    // one client address, well within a minute.
    let old = u.apiKeyId;
    for (let i = 1; i <= 10; i++) {
      const created = await h.request
        .post('/api/v1/api-keys')
        .set('Authorization', auth)
        .send({ name: `rotated-${i}`, active: true });
      statuses.push(created.status);
      statuses.push((await h.request.post(`/api/v1/api-keys/${old}/deactivate`).set('Authorization', auth)).status);
      statuses.push((await h.request.delete(`/api/v1/api-keys/${old}`).set('Authorization', auth)).status);
      old = created.body.id;
    }
    assert.equal(statuses.filter((s) => s >= 400).length, 0, `statuses ${statuses.join(',')}`);
    assert.equal(statuses.length, 30);
    // Every one verified its password, and none spent a budget: a wrong one still gets its 401.
    assert.equal(checks, 30);
    expectError(await signIn(u.email, 'wrong'), 401, 'INVALID_CREDENTIALS');
  });

  it('over VIDMILL_LOGIN_RATE_LIMIT_PER_ADDRESS failed sign-ins a minute from one address is 429 with Retry-After, the right password included, and no password is verified', async () => {
    await start({ perAddressPerMinute: 3, perEmailPerMinute: 100 });
    const u = await h.user();
    assert.equal((await signIn(u.email, u.password)).status, 200);
    expectError(await signIn('nobody@example.com', 'guess'), 401, 'INVALID_CREDENTIALS');
    expectError(await signIn('someone@example.com', 'guess'), 401, 'INVALID_CREDENTIALS');
    expectError(await signIn(u.email, 'guess'), 401, 'INVALID_CREDENTIALS');
    assert.equal(checks, 4);
    // Without a trusted proxy, X-Forwarded-For does not change the client address.
    expectSignInLimited(await signIn(u.email, u.password).set('X-Forwarded-For', '203.0.113.9'));
    expectSignInLimited(await signIn('nobody@example.com', 'guess'));
    assert.equal(checks, 4);
  });

  it('over VIDMILL_LOGIN_RATE_LIMIT_PER_EMAIL failed sign-ins a minute for one e-mail is 429 from any address; the right password and other e-mails are unaffected', async () => {
    await start({ perAddressPerMinute: 100, perEmailPerMinute: 3 }, ['loopback']);
    const u = await h.user();
    const other = await h.user();
    for (let i = 1; i <= 3; i++) expectError(await signIn(u.email, `wrong-${i}`).set('X-Forwarded-For', `203.0.113.${i}`), 401, 'INVALID_CREDENTIALS');
    // The e-mail is counted case-insensitively, as it is matched.
    expectSignInLimited(await signIn(u.email.toUpperCase(), 'wrong-4').set('X-Forwarded-For', '203.0.113.4'));
    // An unknown e-mail is counted too.
    for (let i = 1; i <= 3; i++) expectError(await signIn('nobody@example.com', 'guess'), 401, 'INVALID_CREDENTIALS');
    expectSignInLimited(await signIn('nobody@example.com', 'guess'));
    // The right password signs in, from any address, as often as it is sent.
    for (let i = 0; i < 5; i++) assert.equal((await signIn(u.email, u.password).set('X-Forwarded-For', `198.51.100.${i}`)).status, 200);
    assert.equal((await signIn(other.email, other.password)).status, 200);
  });

  it('behind a trusted proxy (VIDMILL_TRUST_PROXY) the client address is the one in X-Forwarded-For', async () => {
    await start({ perAddressPerMinute: 2, perEmailPerMinute: 100 }, ['loopback']);
    const u = await h.user();
    const from = (address: string, password = 'wrong') => signIn(u.email, password).set('X-Forwarded-For', address);
    expectError(await from('203.0.113.1'), 401, 'INVALID_CREDENTIALS');
    expectError(await from('203.0.113.1'), 401, 'INVALID_CREDENTIALS');
    expectSignInLimited(await from('203.0.113.1', u.password));
    assert.equal((await from('198.51.100.7', u.password)).status, 200);
  });

  (TEST_DIALECT === 'postgres' ? it : it.skip)('two API processes on one PostgreSQL database share the sign-in budgets', async () => {
    await start({ perAddressPerMinute: 3, perEmailPerMinute: 100 });
    const u = await h.user();
    const second = h.anotherProcess().request;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await signIn(u.email, i < 2 ? u.password : 'wrong', i % 2 === 0 ? h.request : second)).status);
    // The right passwords are given back; three failures spend the budget in both processes.
    assert.deepEqual(statuses, [200, 200, 401, 401, 401, 429]);
  });

  (TEST_DIALECT === 'postgres' ? it : it.skip)('ended sign-in windows are swept from the shared table (clients choose the keys)', async () => {
    await start({ perAddressPerMinute: 100, perEmailPerMinute: 100 });
    for (let i = 0; i < 3; i++) await signIn(`guess-${i}@example.com`, 'guess');
    const rows = () =>
      h.services
        .db('rate_limits')
        .where('key', 'like', 'signin-%')
        .count({ n: '*' })
        .then(([r]) => Number(r!.n));
    assert.equal(await rows(), 4); // one address, three e-mails (unknown ones are failures too)
    assert.equal(await sweepEndedRateWindows(h.services.db, new Date()), 0);
    assert.equal(await sweepEndedRateWindows(h.services.db, new Date(Date.now() + 61_000)), 4);
    assert.equal(await rows(), 0);
    // A swept key starts a fresh window.
    expectError(await signIn('guess-0@example.com', 'guess'), 401, 'INVALID_CREDENTIALS');
  });
});
