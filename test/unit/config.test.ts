import { strict as assert } from 'node:assert';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';

describe('Configuration', () => {
  it('defaults: 127.0.0.1:8080, ./data, SQLite file in the data directory, 600 requests per minute, role all', () => {
    const c = loadConfig({});
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 8080);
    assert.equal(c.dataDir, path.resolve('./data'));
    assert.deepEqual(c.database, { client: 'sqlite', filename: path.resolve('./data/vidmill.sqlite') });
    assert.equal(c.rateLimitPerMinute, 600);
    assert.equal(c.role, 'all');
    assert.equal(c.allowPrivateUrls, false);
  });

  it('a postgres URL selects PostgreSQL', () => {
    const c = loadConfig({ VIDMILL_DATABASE_URL: 'postgres://u@db:5432/vidmill' });
    assert.deepEqual(c.database, { client: 'pg', connectionString: 'postgres://u@db:5432/vidmill' });
  });

  it('invalid settings stop the start with a message naming each variable', () => {
    assert.throws(
      () => loadConfig({ VIDMILL_PORT: 'eighty', VIDMILL_ROLE: 'boss', VIDMILL_MASTER_KEY: 'short', VIDMILL_DATABASE_URL: 'mysql://x', VIDMILL_ALLOW_PRIVATE_URLS: 'yes' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        for (const name of ['VIDMILL_PORT', 'VIDMILL_ROLE', 'VIDMILL_MASTER_KEY', 'VIDMILL_DATABASE_URL', 'VIDMILL_ALLOW_PRIVATE_URLS']) {
          assert.match(err.message, new RegExp(name));
        }
        return true;
      },
    );
  });

  it('reads every documented setting (docs/configuration.md lists them all)', async () => {
    const { readFileSync } = await import('node:fs');
    const doc = readFileSync('docs/configuration.md', 'utf8');
    const source = readFileSync('src/config.ts', 'utf8');
    const inCode = [...new Set(source.match(/VIDMILL_[A-Z_]+/g))];
    for (const name of inCode) assert.match(doc, new RegExp(`\`${name}\``), `${name} is not documented`);
  });
});
