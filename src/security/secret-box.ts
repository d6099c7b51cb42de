/**
 * Encryption at rest for stored secrets (bucket credentials, signing keys): AES-256-GCM with a
 * random 96-bit nonce per value. Sealed form: `v1:<nonce>:<tag>:<ciphertext>` (base64 parts).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the master key must be 32 bytes');
  }

  seal(plaintext: string, context: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', nonce, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64'))).join(':');
  }

  open(sealed: string, context: string): string {
    const [version, nonce = '', tag = '', ciphertext = ''] = sealed.split(':');
    if (version !== 'v1') throw new Error('unknown sealed-secret version');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(nonce, 'base64'));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]).toString('utf8');
  }
}

/**
 * The configured master key, or on the embedded default (SQLite) one generated once into the
 * data directory. Scale-out (PostgreSQL) must configure VIDMILL_MASTER_KEY on every process.
 */
export function loadMasterKey(opts: { configured?: Buffer; dataDir: string; embedded: boolean }): Buffer {
  if (opts.configured) return opts.configured;
  if (!opts.embedded) {
    throw new Error('VIDMILL_MASTER_KEY is required with PostgreSQL (every process must share it); generate one with: openssl rand -base64 32');
  }
  const file = path.join(opts.dataDir, 'master.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}
