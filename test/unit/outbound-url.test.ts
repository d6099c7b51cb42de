import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkOutboundUrl, guardedLookup, isPublicAddress, parseOutboundUrl } from '../../src/net/outbound-url';
import { DomainError } from '../../src/shared/errors';

describe('Outbound URL guard', () => {
  it('classifies addresses: public unicast only', () => {
    for (const a of ['1.1.1.1', '8.8.8.8', '93.184.215.14', '2606:4700::1111', '::ffff:1.1.1.1']) assert.equal(isPublicAddress(a), true, a);
    for (const a of [
      '0.0.0.0', '10.0.0.1', '100.64.0.1', '100.127.255.255', '127.0.0.1', '169.254.169.254', '172.16.0.1', '172.31.255.255', '192.168.0.1',
      '224.0.0.1', '239.255.255.255', '255.255.255.255', '::', '::1', 'fc00::1', 'fd00::1', 'fe80::1', 'ff02::1',
      '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '64:ff9b::a00:1', '2002:c0a8:101::1', 'not-an-ip',
    ]) {
      assert.equal(isPublicAddress(a), false, a);
    }
  });

  it('form: https on 443 without credentials; the private-URL setting also allows http and any port', () => {
    const refused = (u: string, allow = false) => assert.throws(() => parseOutboundUrl(u, { allowPrivateUrls: allow }), (e: any) => e instanceof DomainError && e.errorCode === 'INVALID_HTTPS_URL', u);
    refused('http://1.1.1.1/');
    refused('https://1.1.1.1:8443/');
    refused('https://a:b@1.1.1.1/');
    refused('ftp://1.1.1.1/', true);
    refused('not a url');
    assert.equal(parseOutboundUrl('https://1.1.1.1:443/x', { allowPrivateUrls: false }).port, '');
    assert.equal(parseOutboundUrl('http://127.0.0.1:8080/x', { allowPrivateUrls: true }).port, '8080');
  });

  it('resolution: every resolved address must be public (one private answer is enough to refuse)', async () => {
    const resolveTo = (addrs: string[]) => async () => addrs;
    await checkOutboundUrl('https://hooks.example.com/', { allowPrivateUrls: false }, resolveTo(['1.1.1.1']));
    await assert.rejects(checkOutboundUrl('https://hooks.example.com/', { allowPrivateUrls: false }, resolveTo(['1.1.1.1', '10.0.0.5'])), /non-public/);
    await assert.rejects(checkOutboundUrl('https://hooks.example.com/', { allowPrivateUrls: false }, async () => { throw new Error('ENOTFOUND'); }), /does not resolve/);
    await checkOutboundUrl('https://hooks.example.com/', { allowPrivateUrls: true }, resolveTo(['10.0.0.5']));
  });

  it('the guarded lookup refuses a connection to a name that resolves privately (rebinding)', async () => {
    const server = http.createServer((_, res) => res.end('reached'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const get = (allow: boolean) =>
      new Promise<string>((resolve, reject) => {
        http.get({ host: 'localhost', port, path: '/', lookup: guardedLookup({ allowPrivateUrls: allow }) as any, family: 4 }, (res) => {
          res.setEncoding('utf8');
          let b = '';
          res.on('data', (c) => (b += c));
          res.on('end', () => resolve(b));
        }).on('error', reject);
      });
    try {
      await assert.rejects(get(false), (e: any) => e.code === 'ERR_NON_PUBLIC_ADDRESS');
      assert.equal(await get(true), 'reached');
    } finally {
      server.close();
    }
  });
});
