import { strict as assert } from 'node:assert';
import pino from 'pino';
import { TEST_DIALECT } from '../helpers/database';
import { basic, createHarness, Harness } from '../helpers/harness';

describe(`First start (${TEST_DIALECT})`, () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
  });
  afterEach(() => h.close());

  it('an empty database gets an owner user, a team and its Default Project from the bootstrap settings', async () => {
    await h.services.accounts.bootstrap({ email: 'Owner@Example.com', password: 'a-long-password' }, pino({ level: 'silent' }));
    const auth = basic('owner@example.com', 'a-long-password');
    const created = await h.request.post('/api/v1/api-keys').set('Authorization', auth).send({ name: 'first', active: true });
    assert.equal(created.status, 201);
    const project = await h.request.get('/api/v1/projects/default').set('X-API-Key', created.body.apiKey);
    assert.equal(project.status, 200);
    assert.equal(project.body.name, 'Default Project');
  });

  it('without a configured password one is generated and printed once; a second start changes nothing', async () => {
    const writes: string[] = [];
    const original = process.stdout.write.bind(process.stdout);
    (process.stdout as any).write = (chunk: any) => (writes.push(String(chunk)), true);
    try {
      await h.services.accounts.bootstrap({}, pino({ level: 'silent' }));
      await h.services.accounts.bootstrap({}, pino({ level: 'silent' }));
    } finally {
      (process.stdout as any).write = original;
    }
    const printed = writes.join('');
    const match = /owner (\S+) with password (\S+)/.exec(printed);
    assert.ok(match, printed);
    assert.equal(printed.match(/with password/g)?.length, 1);
    const res = await h.request.get('/api/v1/api-keys').set('Authorization', basic(match[1], match[2]));
    assert.equal(res.status, 200);
    const [{ n }] = await h.database.db('users').count({ n: '*' });
    assert.equal(Number(n), 1);
  });
});
