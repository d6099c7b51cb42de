import { strict as assert } from 'node:assert';
import { TEST_DIALECT } from '../helpers/database';
import { basic, createHarness, expectError, Harness, TestUser } from '../helpers/harness';

describe(`Authentication (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  before(async () => {
    h = await createHarness({ login: { maxFailures: 3, lockMinutes: 15 } });
    u = await h.user();
  });
  after(() => h.close());

  describe('X-API-Key', () => {
    it('missing key is 401 MISSING_API_KEY', async () => {
      expectError(await h.request.get('/api/v1/account'), 401, 'MISSING_API_KEY');
      expectError(await h.request.get('/api/v1/account').set('X-API-Key', ''), 401, 'MISSING_API_KEY');
    });
    it('unknown, malformed or foreign-format key is 401 INVALID_API_KEY', async () => {
      for (const key of ['vmk_' + 'A'.repeat(43), 'nonsense', u.apiKey + 'x', u.apiKey.toUpperCase()]) {
        expectError(await h.request.get('/api/v1/account').set('X-API-Key', key), 401, 'INVALID_API_KEY');
      }
    });
    it('a valid key reaches the operation', async () => {
      const res = await h.request.get('/api/v1/account').set('X-API-Key', u.apiKey);
      assert.equal(res.status, 200);
      assert.equal(res.body.user.email, u.email);
    });
    it('Basic credentials do not authenticate API-key operations', async () => {
      expectError(await h.request.get('/api/v1/account').set('Authorization', basic(u.email, u.password)), 401, 'MISSING_API_KEY');
    });
  });

  describe('HTTP Basic on /v1/api-keys', () => {
    it('missing credentials are 401 with WWW-Authenticate', async () => {
      const res = await h.request.get('/api/v1/api-keys');
      expectError(res, 401, 'UNAUTHORIZED');
      assert.match(res.headers['www-authenticate']!, /^Basic realm=/);
    });
    it('an API key does not authenticate key management', async () => {
      const res = await h.request.get('/api/v1/api-keys').set('X-API-Key', u.apiKey);
      expectError(res, 401, 'UNAUTHORIZED');
    });
    it('broken Basic headers are 401 INVALID_CREDENTIALS, never 500', async () => {
      for (const header of ['Basic', 'Basic !!!', 'Basic ' + Buffer.from('no-colon').toString('base64'), 'Bearer abc', 'Basic ' + Buffer.from(':pw').toString('base64')]) {
        const res = await h.request.get('/api/v1/api-keys').set('Authorization', header);
        assert.equal(res.status, 401, header);
        assert.ok(['INVALID_CREDENTIALS', 'UNAUTHORIZED'].includes(res.body.errorCode), header);
        assert.match(res.headers['www-authenticate']!, /^Basic/);
      }
    });
    it('wrong password and unknown e-mail are both 401 INVALID_CREDENTIALS', async () => {
      const other = await h.user();
      expectError(await h.request.get('/api/v1/api-keys').set('Authorization', basic(other.email, 'wrong')), 401, 'INVALID_CREDENTIALS');
      expectError(await h.request.get('/api/v1/api-keys').set('Authorization', basic('nobody@example.com', 'x')), 401, 'INVALID_CREDENTIALS');
    });
    it('e-mail matching is case-insensitive', async () => {
      const res = await h.request.get('/api/v1/api-keys').set('Authorization', basic(u.email.toUpperCase(), u.password));
      assert.equal(res.status, 200);
    });
    it('repeated failures lock the e-mail (ACCOUNT_LOCKED), even for the right password, until the lock expires', async () => {
      const victim = await h.user();
      for (let i = 0; i < 3; i++) {
        expectError(await h.request.get('/api/v1/api-keys').set('Authorization', basic(victim.email, 'wrong')), 401, 'INVALID_CREDENTIALS');
      }
      expectError(await h.request.get('/api/v1/api-keys').set('Authorization', basic(victim.email, victim.password)), 401, 'ACCOUNT_LOCKED');
      h.clock.advance(15 * 60_000 + 1000);
      assert.equal((await h.request.get('/api/v1/api-keys').set('Authorization', basic(victim.email, victim.password))).status, 200);
      // the success reset the counter: one more failure does not lock again
      expectError(await h.request.get('/api/v1/api-keys').set('Authorization', basic(victim.email, 'wrong')), 401, 'INVALID_CREDENTIALS');
      assert.equal((await h.request.get('/api/v1/api-keys').set('Authorization', basic(victim.email, victim.password))).status, 200);
    });
    it('a password reset clears the lock', async () => {
      const victim = await h.user();
      for (let i = 0; i < 3; i++) await h.request.get('/api/v1/api-keys').set('Authorization', basic(victim.email, 'wrong'));
      const fresh = await h.services.accounts.resetPassword(victim.email);
      assert.equal((await h.request.get('/api/v1/api-keys').set('Authorization', basic(victim.email, fresh))).status, 200);
    });
  });
});
