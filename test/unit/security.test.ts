import { strict as assert } from 'node:assert';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { digestApiKey, generateApiKey, looksLikeApiKey, maskSecret } from '../../src/security/api-key-token';
import { hashPassword, verifyPassword } from '../../src/security/passwords';
import { loadMasterKey, SecretBox } from '../../src/security/secret-box';

describe('Security primitives', () => {
  it('API keys are 256-bit random with the vmk_ prefix; the digest is SHA-256 hex', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    assert.notEqual(a, b);
    assert.ok(looksLikeApiKey(a));
    assert.equal(Buffer.from(a.slice(4), 'base64url').length, 32);
    assert.match(digestApiKey(a), /^[0-9a-f]{64}$/);
    assert.equal(maskSecret('xyz', 8), '*****xyz');
  });

  it('the digest is exactly SHA-256 of the UTF-8 key (stored digests stay valid)', () => {
    for (const key of [generateApiKey(), 'vmk_ä€𝄞', '']) {
      assert.equal(digestApiKey(key), createHash('sha256').update(key, 'utf8').digest('hex'));
    }
    assert.equal(digestApiKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('passwords: scrypt hash verifies the right password only', async () => {
    const hash = await hashPassword('correct horse');
    assert.match(hash, /^scrypt\$/);
    assert.equal(await verifyPassword('correct horse', hash), true);
    assert.equal(await verifyPassword('wrong horse', hash), false);
  });

  it('secret box: AES-256-GCM round trip; tampering or another context fails', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal('s3cr3t', 'loc:1');
    assert.doesNotMatch(sealed, /s3cr3t/);
    assert.equal(box.open(sealed, 'loc:1'), 's3cr3t');
    assert.throws(() => box.open(sealed, 'loc:2'));
    const parts = sealed.split(':');
    parts[3] = Buffer.from('x' + Buffer.from(parts[3]!, 'base64').toString('latin1')).toString('base64');
    assert.throws(() => box.open(parts.join(':'), 'loc:1'));
    assert.throws(() => new SecretBox(randomBytes(16)).open(sealed, 'loc:1'));
  });

  it('master key: generated once into the data directory on the embedded default, required with PostgreSQL', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-key-'));
    const first = loadMasterKey({ dataDir: dir, embedded: true });
    assert.equal(first.length, 32);
    assert.deepEqual(loadMasterKey({ dataDir: dir, embedded: true }), first);
    assert.equal(statSync(path.join(dir, 'master.key')).mode & 0o777, 0o600);
    assert.equal(readFileSync(path.join(dir, 'master.key'), 'utf8').trim(), first.toString('base64'));
    assert.throws(() => loadMasterKey({ dataDir: dir, embedded: false }), /VIDMILL_MASTER_KEY is required/);
    const configured = randomBytes(32);
    assert.deepEqual(loadMasterKey({ configured, dataDir: dir, embedded: false }), configured);
  });
});
