import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { createPublicKey, KeyObject, randomUUID, verify as cryptoVerify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { importJWK } from 'jose';
import pino from 'pino';
import { sealingContext } from '../../src/features/webhooks/testing';
import { DeliveryWorker, recordEvent, SigningKeys } from '../../src/features/webhooks';
import { verifyWebhook, WebhookVerificationError } from '../../sdk/src';
import { ManualClock } from '../../src/shared/clock';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, expectError, Harness, TestUser } from '../helpers/harness';
import { apiRequests } from '../helpers/scenario';
import { Received, Receiver, startReceiver } from '../helpers/webhook-receiver';
import { scaled } from '../helpers/timeouts';

const KEYS = '/v1/webhooks/public-keys';
const DAY = 24 * 3600_000;
const MINUTE = 60_000;

/** Whether `signature` is the DER ECDSA/SHA-256 signature of `<timestamp>.<body>` by the base64 SPKI key (node:crypto alone). */
function signedBy(publicKey: string, timestamp: string, body: string, signature: string): boolean {
  const key = createPublicKey({ key: Buffer.from(publicKey, 'base64'), format: 'der', type: 'spki' });
  return cryptoVerify('sha256', Buffer.from(`${timestamp}.${body}`, 'utf8'), { key, dsaEncoding: 'der' }, Buffer.from(signature, 'base64'));
}

const JAVA_VERIFIER = `
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.security.*;
import java.security.spec.X509EncodedKeySpec;
import java.util.Base64;

public class VerifyWebhook {
  // args: base64 SPKI public key, timestamp, body file, base64 signature
  public static void main(String[] args) throws Exception {
    PublicKey key = KeyFactory.getInstance("EC").generatePublic(new X509EncodedKeySpec(Base64.getDecoder().decode(args[0])));
    String body = new String(Files.readAllBytes(Paths.get(args[2])), StandardCharsets.UTF_8);
    Signature s = Signature.getInstance("SHA256withECDSA");
    s.initVerify(key);
    s.update((args[1] + "." + body).getBytes(StandardCharsets.UTF_8));
    boolean ok = s.verify(Base64.getDecoder().decode(args[3]));
    System.out.println(ok ? "VALID" : "INVALID");
    System.exit(ok ? 0 : 1);
  }
}
`;

describe(`Webhook signing keys and signatures (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  let receiver: Receiver;
  let worker: DeliveryWorker;
  let dir: string;

  const { get, post, del } = apiRequests(
    () => h,
    () => u,
  );
  const keyFromApi = async (id: string): Promise<string | undefined> => {
    const res = await get(`${KEYS}/${id}`);
    return res.status === 200 ? res.body.publicKey : undefined;
  };
  /** Sends one event through the real loop and returns what the receiver got. */
  const deliverOne = async (): Promise<Received> => {
    const before = receiver.received.length;
    await h.services.db.transaction((trx) => recordEvent(trx, { teamId: u.teamId, eventType: 'video_out.done', videoId: randomUUID(), occurredAt: h.clock.now() }));
    await worker.drain();
    assert.equal(receiver.received.length, before + 1);
    return receiver.received[before]!;
  };

  before(async () => {
    h = await createHarness({ allowPrivateUrls: true });
    u = await h.user();
    receiver = await startReceiver({ now: () => h.clock.now(), fetchKey: keyFromApi });
    worker = new DeliveryWorker({ db: h.services.db, clock: h.clock, signingKeys: h.services.signingKeys, policy: { allowPrivateUrls: true }, log: pino({ level: 'silent' }) });
    const res = await h.request
      .post('/api/v1/webhooks')
      .set('X-API-Key', u.apiKey)
      .send({ name: 'Interop', url: receiver.url, eventTypes: ['video_out.done'], active: true });
    assert.equal(res.status, 201);
    dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-sig-'));
  });
  after(async () => {
    await worker.stop();
    await receiver.close();
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('getWebhookPublicKeys: one current EC P-256 key (base64 DER SPKI, no expiresAt), created on first need', async () => {
    const res = await get(KEYS);
    assert.equal(res.status, 200);
    assert.equal(res.body.length, 1);
    const k = res.body[0];
    assert.equal(k.algorithm, 'EC');
    assert.equal(k.expiresAt, null);
    const key = createPublicKey({ key: Buffer.from(k.publicKey, 'base64'), format: 'der', type: 'spki' });
    assert.equal(key.asymmetricKeyType, 'ec');
    assert.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    const byId = await get(`${KEYS}/${k.id}`);
    assert.deepEqual(byId.body, k);
    expectError(await get(`${KEYS}/${randomUUID()}`), 404, 'RESOURCE_NOT_FOUND');
  });

  it('the private key is sealed at rest, bound to its key id', async () => {
    const row = await h.services.db('webhook_signing_keys').first();
    assert.match(row.private_key_sealed, /^v1:/);
    assert.doesNotMatch(row.private_key_sealed, /PRIVATE KEY/);
    assert.match(h.services.secretBox.open(row.private_key_sealed, sealingContext(row.id)), /BEGIN PRIVATE KEY/);
    assert.throws(() => h.services.secretBox.open(row.private_key_sealed, sealingContext(randomUUID())));
  });

  it('getWebhookPublicKeysJwks: the same keys as JWKs (kid = id) that jose imports', async () => {
    const [list, jwks] = await Promise.all([get(KEYS), get(`${KEYS}/jwks`)]);
    assert.equal(jwks.status, 200);
    assert.deepEqual(
      jwks.body.keys.map((k: any) => k.kid),
      list.body.map((k: any) => k.id),
    );
    const jwk = jwks.body.keys[0];
    assert.deepEqual([jwk.kty, jwk.crv, jwk.alg, jwk.use], ['EC', 'P-256', 'ES256', 'sig']);
    const imported = (await importJWK(jwk, 'ES256')) as any;
    const spki = createPublicKey({ key: Buffer.from(list.body[0].publicKey, 'base64'), format: 'der', type: 'spki' });
    assert.equal(KeyObject.from(imported).export({ format: 'der', type: 'spki' }).toString('base64'), spki.export({ format: 'der', type: 'spki' }).toString('base64'));
  });

  it('a delivery verifies with openssl dgst -sha256 -verify, using the key fetched through the API', async () => {
    const r = await deliverOne();
    assert.ok(r.verified, r.verifyError);
    const spki = await keyFromApi(String(r.headers['x-vidmill-public-key-id']));
    const pem = `-----BEGIN PUBLIC KEY-----\n${spki!.match(/.{1,64}/g)!.join('\n')}\n-----END PUBLIC KEY-----\n`;
    writeFileSync(path.join(dir, 'pub.pem'), pem);
    writeFileSync(path.join(dir, 'sig.der'), Buffer.from(String(r.headers['x-vidmill-signature']), 'base64'));
    writeFileSync(path.join(dir, 'data'), `${String(r.headers['x-vidmill-timestamp'])}.${r.body}`);
    const out = execFileSync('openssl', ['dgst', '-sha256', '-verify', 'pub.pem', '-signature', 'sig.der', 'data'], { cwd: dir }).toString();
    assert.match(out, /Verified OK/);
    writeFileSync(path.join(dir, 'data'), `${String(r.headers['x-vidmill-timestamp'])}.${r.body.replace('video_out.done', 'video_out.fail')}`);
    assert.throws(() => execFileSync('openssl', ['dgst', '-sha256', '-verify', 'pub.pem', '-signature', 'sig.der', 'data'], { cwd: dir, stdio: 'pipe' }));
  });

  it('a delivery verifies with Java Signature.getInstance("SHA256withECDSA"), using the key fetched through the API', async function () {
    this.timeout(scaled(60_000));
    writeFileSync(path.join(dir, 'VerifyWebhook.java'), JAVA_VERIFIER);
    execFileSync('javac', ['VerifyWebhook.java'], { cwd: dir, stdio: 'pipe' });
    const r = await deliverOne();
    const spki = await keyFromApi(String(r.headers['x-vidmill-public-key-id']));
    writeFileSync(path.join(dir, 'body.json'), r.body);
    const java = (body: string) => {
      writeFileSync(path.join(dir, 'body.json'), body);
      return execFileSync('java', ['-cp', dir, 'VerifyWebhook', spki!, String(r.headers['x-vidmill-timestamp']), path.join(dir, 'body.json'), String(r.headers['x-vidmill-signature'])], {
        stdio: 'pipe',
      }).toString();
    };
    assert.match(java(r.body), /VALID/);
    assert.throws(() => java(r.body + ' '), /INVALID|Command failed/);
  });

  it('a delivery verifies with Python cryptography (the docs/webhooks.md example), when it is installed', async function () {
    try {
      execFileSync('python3', ['-c', 'import cryptography'], { stdio: 'pipe' });
    } catch {
      this.skip();
    }
    const r = await deliverOne();
    const spki = await keyFromApi(String(r.headers['x-vidmill-public-key-id']));
    const script = [
      'import base64, sys',
      'from cryptography.exceptions import InvalidSignature',
      'from cryptography.hazmat.primitives import hashes',
      'from cryptography.hazmat.primitives.asymmetric import ec',
      'from cryptography.hazmat.primitives.serialization import load_der_public_key',
      'key = load_der_public_key(base64.b64decode(sys.argv[1]))',
      'raw_body = open(sys.argv[3], "rb").read()',
      'try:',
      '    key.verify(base64.b64decode(sys.argv[4]), sys.argv[2].encode() + b"." + raw_body, ec.ECDSA(hashes.SHA256()))',
      '    print("VALID")',
      'except InvalidSignature:',
      '    print("INVALID"); sys.exit(1)',
    ].join('\n');
    writeFileSync(path.join(dir, 'verify.py'), script);
    const py = (body: string) => {
      writeFileSync(path.join(dir, 'py-body.json'), body);
      return execFileSync('python3', [path.join(dir, 'verify.py'), spki!, String(r.headers['x-vidmill-timestamp']), path.join(dir, 'py-body.json'), String(r.headers['x-vidmill-signature'])], {
        stdio: 'pipe',
      }).toString();
    };
    assert.match(py(r.body), /^VALID/);
    assert.throws(() => py(r.body.replace('"attemptCount":1', '"attemptCount":2')));
  });

  it('the SDK verifier rejects a tampered body, a stale or future timestamp (over 5 minutes), a wrong key id and another algorithm', async () => {
    const r = await deliverOne();
    const headers = { ...r.headers } as Record<string, string>;
    await verifyWebhook(headers, r.body, { now: () => h.clock.now(), fetchKey: keyFromApi });
    const reason = async (hd: Record<string, string>, body: string, now?: Date) => {
      try {
        await verifyWebhook(hd, body, { now: () => now ?? h.clock.now(), fetchKey: keyFromApi });
        return 'accepted';
      } catch (err) {
        assert.ok(err instanceof WebhookVerificationError);
        return err.reason;
      }
    };
    assert.equal(await reason(headers, r.body.replace('"test":false', '"test":true')), 'bad-signature');
    const ts = Number(headers['x-vidmill-timestamp']) * 1000;
    assert.equal(await reason(headers, r.body, new Date(ts + 301_000)), 'stale-timestamp');
    assert.equal(await reason(headers, r.body, new Date(ts - 301_000)), 'stale-timestamp');
    assert.equal(await reason(headers, r.body, new Date(ts + 299_000)), 'accepted');
    assert.equal(await reason({ ...headers, 'x-vidmill-timestamp': String(ts / 1000 + 1) }, r.body), 'bad-signature', 'the timestamp is signed too');
    assert.equal(await reason({ ...headers, 'x-vidmill-public-key-id': randomUUID() }, r.body), 'unknown-key');
    assert.equal(await reason({ ...headers, 'x-vidmill-algorithm': 'SHA256withRSA' }, r.body), 'unsupported-algorithm');
    const { 'x-vidmill-signature': _, ...unsigned } = headers;
    assert.equal(await reason(unsigned, r.body), 'missing-header');
    // a key of the right shape that did not sign
    const other = (await import('node:crypto')).generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    assert.equal(signedBy(other, headers['x-vidmill-timestamp']!, r.body, headers['x-vidmill-signature']!), false);
  });

  /** The keys of the list (or JWKS) as the API shows them now. */
  const list = async () => (await get(KEYS)).body as Array<{ id: string; expiresAt: string | null; activatesAt?: string; createdAt: string }>;
  const signer = (r: Received) => String(r.headers['x-vidmill-public-key-id']);
  const verifiesWith = (publicKey: string | undefined, r: Received) => !!publicKey && signedBy(publicKey, String(r.headers['x-vidmill-timestamp']), r.body, String(r.headers['x-vidmill-signature']));

  /**
   * The reference client's key cache (wire facts §8): from the list it keeps the key without
   * `expiresAt` as the active key and the last key with `expiresAt` as the expiring one; an
   * unknown key id triggers one re-fetch, at most once per 60 s.
   */
  class ReferenceKeyCache {
    keys = new Map<string, string>();
    fetchedAt = -Infinity;
    fetches = 0;
    async refresh(): Promise<void> {
      this.fetchedAt = h.clock.now().getTime();
      this.fetches++;
      let active: any;
      let expiring: any;
      for (const k of (await get(KEYS)).body) {
        if (k.expiresAt == null) active = k;
        else expiring = k;
      }
      if (!active) throw new Error('no active key in the list: cache not replaced');
      this.keys = new Map([active, expiring].filter(Boolean).map((k: any) => [k.id, k.publicKey]));
    }
    async verify(r: Received): Promise<boolean> {
      const id = signer(r);
      if (!this.keys.has(id) && h.clock.now().getTime() - this.fetchedAt >= 60_000) await this.refresh();
      return verifiesWith(this.keys.get(id), r);
    }
  }

  it('scheduled rotation: the next key is listed 10 minutes before the 90 days are over, then signs; the old one keeps 24 h of grace', async () => {
    const before = await list();
    assert.equal(before.length, 1);
    const old = before[0];
    const oldDelivery = await deliverOne();
    const periodEnd = Date.parse(old!.createdAt) + 90 * DAY;
    h.clock.set(new Date(periodEnd - 10 * MINUTE - 1000));
    assert.equal(await h.services.signingKeys.rotateWhenDue(), undefined, 'not due before the publish-ahead time');
    h.clock.advance(1000);
    const rotation = await h.services.signingKeys.rotateWhenDue();
    assert.ok(rotation && !rotation.alreadyPending);
    assert.equal(rotation.activatesAt.getTime(), periodEnd, 'signs exactly when the period ends');
    assert.equal(await h.services.signingKeys.rotateWhenDue(), undefined, 'one pending key at a time: nothing more to do');

    const pending = await list();
    assert.deepEqual(
      pending.map((k) => k.id),
      [old!.id, rotation.key.id],
      'oldest first; the next key is listed before it signs',
    );
    assert.equal(pending[0]!.expiresAt, null, 'the signing key is still the only one without expiresAt');
    assert.equal(pending[0]!.activatesAt, undefined);
    assert.equal(Date.parse(pending[1]!.activatesAt!), periodEnd);
    assert.equal(Date.parse(pending[1]!.expiresAt!), periodEnd + DAY);
    assert.deepEqual(
      (await get(`${KEYS}/jwks`)).body.keys.map((k: any) => k.kid),
      [old!.id, rotation.key.id],
      'the JWKS carries it too',
    );
    assert.equal((await get(`${KEYS}/${rotation.key.id}`)).body.activatesAt, pending[1]!.activatesAt);

    h.clock.set(new Date(periodEnd - 1000));
    assert.equal(signer(await deliverOne()), old!.id, 'the old key signs until the switch');
    h.clock.set(new Date(periodEnd));
    const fresh = await deliverOne();
    assert.equal(signer(fresh), rotation.key.id, 'the new key signs from its activation on');
    assert.ok(fresh.verified, fresh.verifyError);

    const during = await list();
    assert.deepEqual(
      during.map((k) => k.id),
      [old!.id, rotation.key.id],
    );
    assert.equal(Date.parse(during[0]!.expiresAt!), periodEnd + DAY, 'grace of 24 h from the switch');
    assert.equal(during[1]!.expiresAt, null);
    assert.equal(during[1]!.activatesAt, undefined);
    // the old signature still verifies through the API during the grace period
    await verifyWebhook(oldDelivery.headers, oldDelivery.body, { now: () => new Date(Number(oldDelivery.headers['x-vidmill-timestamp']) * 1000), fetchKey: keyFromApi });
    h.clock.advance(DAY + 1000);
    assert.deepEqual(
      (await list()).map((k) => k.id),
      [rotation.key.id],
    );
    expectError(await get(`${KEYS}/${old!.id}`), 404, 'RESOURCE_NOT_FOUND');
    assert.equal(await h.services.signingKeys.sweepExpired(), 1);
  });

  it('a rotation task that runs late still publishes ahead: the due key keeps signing until then', async () => {
    const [current] = await list();
    h.clock.set(new Date(Date.parse(current!.createdAt) + 91 * DAY));
    const rotation = (await h.services.signingKeys.rotateWhenDue())!;
    assert.equal(rotation.activatesAt.getTime(), h.clock.now().getTime() + 10 * MINUTE);
    assert.equal(signer(await deliverOne()), current!.id);
    h.clock.advance(10 * MINUTE);
    assert.equal(signer(await deliverOne()), rotation.key.id);
  });

  it('rotation on demand (admin): the next key is published at once and signs 10 minutes later; asking again answers the pending key', async () => {
    const [current] = (await list()).filter((k) => k.expiresAt === null);
    const rotated = await h.services.signingKeys.rotate();
    assert.notEqual(rotated.key.id, current!.id);
    assert.equal(rotated.activatesAt.getTime(), h.clock.now().getTime() + 10 * MINUTE);
    const again = await h.services.signingKeys.rotate();
    assert.deepEqual([again.key.id, again.alreadyPending], [rotated.key.id, true]);
    assert.equal(signer(await deliverOne()), current!.id);
    h.clock.advance(10 * MINUTE);
    const r = await deliverOne();
    assert.equal(signer(r), rotated.key.id);
    assert.ok(r.verified, r.verifyError);
    const keys = await list();
    assert.deepEqual(
      keys.slice(-2).map((k) => k.id),
      [current!.id, rotated.key.id],
    );
    assert.ok(keys.at(-2)!.expiresAt);
    assert.equal(keys.at(-1)!.expiresAt, null);
  });

  it('processes starting together on an empty database all sign with the first key, also one whose instant is before its creation (no "no key is active" at start)', async () => {
    // The race of two API processes starting at once (found by the crash soak): B takes its
    // instant, A creates the first key a moment later, B finds no key active at its instant.
    const fresh = await createHarness();
    try {
      const later = new ManualClock(fresh.clock.now());
      const earlier = new ManualClock(new Date(fresh.clock.now().getTime() - 50));
      const keys = (clock: ManualClock) => new SigningKeys({ db: fresh.services.db, clock, secretBox: fresh.services.secretBox, policy: fresh.config.webhookSigningKeys });
      const created = await keys(later).current();
      assert.equal((await keys(earlier).current()).id, created.id);
      assert.equal((await keys(earlier).current(new Date(0))).id, created.id);
      const rotated = await keys(later).rotate();
      assert.equal((await keys(earlier).current()).id, created.id, 'a pending key does not sign before its activation');
      later.set(rotated.activatesAt);
      assert.equal((await keys(later).current()).id, rotated.key.id);
    } finally {
      await fresh.close();
    }
  });

  it('every process switches at the activation instant, not up to a minute later (no stale signer cache)', async () => {
    const other = new SigningKeys({ db: h.services.db, clock: h.clock, secretBox: h.services.secretBox, policy: h.config.webhookSigningKeys });
    const before = await other.current();
    const rotated = await h.services.signingKeys.rotate();
    h.clock.set(new Date(rotated.activatesAt.getTime() - 1));
    assert.equal((await other.current()).id, before.id);
    h.clock.set(rotated.activatesAt);
    assert.equal((await other.current()).id, rotated.key.id);
    assert.equal((await h.services.signingKeys.current()).id, rotated.key.id);
  });

  for (const ahead of [0, 10]) {
    it(`the key that signs is the one active at the signing instant: old at activatesAt - 1 ms, new at activatesAt (publish-ahead ${ahead} min, rotated by another process)`, async () => {
      // The admin command is another process with its own setting; this process has signed just before.
      const admin = new SigningKeys({ db: h.services.db, clock: h.clock, secretBox: h.services.secretBox, policy: { ...h.config.webhookSigningKeys, publishAheadMinutes: ahead } });
      const polledSigner = async (listenerId: string): Promise<string> => {
        const res = await get(`/v1/webhooks/listeners/${listenerId}/deliveries?waitSeconds=0`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        const item = res.body.items.at(-1);
        return item.headers['X-Vidmill-Public-Key-Id'];
      };
      await deliverOne(); // this process has a signing key (created on first need) and has signed with it
      h.clock.advance(MINUTE);
      const old = signer(await deliverOne());
      const rotated = await admin.rotate();
      assert.equal(rotated.activatesAt.getTime(), h.clock.now().getTime() + ahead * MINUTE);
      h.clock.set(new Date(rotated.activatesAt.getTime() - 1));
      const listener = await post('/v1/webhooks/listeners', { eventTypes: ['video_out.done'] });
      assert.equal(listener.status, 201, JSON.stringify(listener.body));
      const before = await deliverOne();
      assert.equal(signer(before), old, 'the old key signs until the instant before activation');
      assert.equal(await polledSigner(listener.body.id), old, 'a listener poll too');
      h.clock.set(rotated.activatesAt);
      const at = await deliverOne();
      assert.equal(signer(at), rotated.key.id, 'the new key signs from the activation instant on');
      assert.equal(at.headers['x-vidmill-timestamp'], String(Math.floor(rotated.activatesAt.getTime() / 1000)), 'signed at that instant');
      assert.ok(at.verified, at.verifyError);
      assert.equal(await polledSigner(listener.body.id), rotated.key.id, 'a listener poll too');
      assert.equal((await del(`/v1/webhooks/listeners/${listener.body.id}`)).status, 204);
    });
  }

  it('one key signs at each instant: a key published with publish-ahead 0 in the millisecond its predecessor activated signs from the next one', async () => {
    const admin = new SigningKeys({ db: h.services.db, clock: h.clock, secretBox: h.services.secretBox, policy: { ...h.config.webhookSigningKeys, publishAheadMinutes: 0 } });
    const first = await admin.rotate();
    h.clock.set(first.activatesAt);
    const second = await admin.rotate();
    assert.equal(second.activatesAt.getTime(), first.activatesAt.getTime() + 1);
    assert.equal(signer(await deliverOne()), first.key.id);
    h.clock.set(second.activatesAt);
    assert.equal(signer(await deliverOne()), second.key.id);
  });

  it('two rotations inside the grace period: the reference client keeps the most recently replaced key and verifies across the second switch', async () => {
    const first = await h.services.signingKeys.rotate();
    h.clock.set(first.activatesAt);
    const second = await h.services.signingKeys.rotate();
    assert.equal(signer(await deliverOne()), first.key.id);

    // A client that fetched while the second key was pending holds the signer and the next key.
    const early = new ReferenceKeyCache();
    await early.refresh();
    assert.deepEqual([...early.keys.keys()], [first.key.id, second.key.id]);

    h.clock.set(new Date(second.activatesAt.getTime() - 2000));
    const justBefore = await deliverOne();
    h.clock.set(second.activatesAt);
    const after = await deliverOne();
    assert.deepEqual([signer(justBefore), signer(after)], [first.key.id, second.key.id]);
    assert.ok(await early.verify(justBefore));
    assert.ok(await early.verify(after));
    assert.equal(early.fetches, 1, 'no re-fetch was needed: the new key was known before it signed');

    // A client that fetches after the second switch: two replaced keys are in their grace period.
    const keys = await list();
    assert.ok(keys.filter((k) => k.expiresAt !== null).length >= 2, JSON.stringify(keys));
    assert.deepEqual(
      keys.slice(-2).map((k) => k.id),
      [first.key.id, second.key.id],
    );
    const late = new ReferenceKeyCache();
    await late.refresh();
    assert.deepEqual([...late.keys.keys()].sort(), [first.key.id, second.key.id].sort(), 'active = the new key, expiring = the one it replaced');
    assert.ok(await late.verify(after));
    assert.ok(await late.verify(justBefore), 'a delivery signed just before the second switch verifies');
    assert.equal(late.fetches, 1);
  });

  it('a verifier that refreshes the JWKS once a minute on its own schedule never meets an unknown key id across a rotation', async () => {
    let known = new Set<string>();
    let refreshedAt = -Infinity;
    const rotated = await h.services.signingKeys.rotate();
    const end = rotated.activatesAt.getTime() + 3 * MINUTE;
    h.clock.advance(17_000); // the client's schedule is not aligned with the rotation
    while (h.clock.now().getTime() < end) {
      if (h.clock.now().getTime() - refreshedAt >= MINUTE) {
        known = new Set((await get(`${KEYS}/jwks`)).body.keys.map((k: any) => k.kid));
        refreshedAt = h.clock.now().getTime();
      }
      const r = await deliverOne();
      assert.ok(known.has(signer(r)), `unknown key id at ${h.clock.now().toISOString()}`);
      h.clock.advance(40_000);
    }
    assert.equal(signer(await deliverOne()), rotated.key.id);
  });
});
