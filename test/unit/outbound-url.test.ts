import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkBucketEndpoint, checkOutboundUrl, guardedLookup, isLoopbackName, isPublicAddress, parseOutboundUrl } from '../../src/net/outbound-url';
import { DomainError } from '../../src/shared/errors';

describe('Outbound URL guard', () => {
  it('classifies addresses: public unicast only', () => {
    for (const a of ['1.1.1.1', '8.8.8.8', '93.184.215.14', '2606:4700::1111', '::ffff:1.1.1.1']) assert.equal(isPublicAddress(a), true, a);
    for (const a of [
      '0.0.0.0',
      '10.0.0.1',
      '100.64.0.1',
      '100.127.255.255',
      '127.0.0.1',
      '169.254.169.254',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '224.0.0.1',
      '239.255.255.255',
      '255.255.255.255',
      '::',
      '::1',
      'fc00::1',
      'fd00::1',
      'fe80::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '64:ff9b::a00:1',
      '2002:c0a8:101::1',
      'not-an-ip',
    ]) {
      assert.equal(isPublicAddress(a), false, a);
    }
  });

  it('form: https on 443 without credentials; the private-URL setting also allows http and any port', () => {
    const refused = (u: string, allow = false) =>
      assert.throws(
        () => parseOutboundUrl(u, { allowPrivateUrls: allow }),
        (e: any) => e instanceof DomainError && e.errorCode === 'INVALID_HTTPS_URL',
        u,
      );
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
    await assert.rejects(
      checkOutboundUrl('https://hooks.example.com/', { allowPrivateUrls: false }, async () => {
        throw new Error('ENOTFOUND');
      }),
      /does not resolve/,
    );
    await checkOutboundUrl('https://hooks.example.com/', { allowPrivateUrls: true }, resolveTo(['10.0.0.5']));
  });

  it('the guarded lookup refuses a connection to a name that resolves privately (rebinding)', async () => {
    const server = http.createServer((_, res) => res.end('reached'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const get = (allow: boolean) =>
      new Promise<string>((resolve, reject) => {
        http
          .get({ host: 'localhost', port, path: '/', lookup: guardedLookup({ allowPrivateUrls: allow }), family: 4 }, (res) => {
            res.setEncoding('utf8');
            let b = '';
            res.on('data', (c) => (b += c));
            res.on('end', () => resolve(b));
          })
          .on('error', reject);
      });
    try {
      await assert.rejects(get(false), (e: any) => e.code === 'ERR_NON_PUBLIC_ADDRESS');
      assert.equal(await get(true), 'reached');
    } finally {
      server.close();
    }
  });

  /** Every spelling of a non-public host the SSRF matrix uses, and what WHATWG URL makes of it. */
  const NON_PUBLIC_SPELLINGS: Array<[string, string]> = [
    ['127.0.0.1:9000', '127.0.0.1'],
    ['2130706433', '127.0.0.1'], // decimal
    ['0177.0.0.1', '127.0.0.1'], // octal
    ['0x7f.0.0.1', '127.0.0.1'], // hex, dotted
    ['0x7f000001', '127.0.0.1'], // hex
    ['127.1', '127.0.0.1'], // short
    ['0', '0.0.0.0'],
    ['0.0.0.0', '0.0.0.0'],
    ['10.0.0.1', '10.0.0.1'],
    ['169.254.169.254', '169.254.169.254'],
    ['100.64.0.1', '100.64.0.1'],
    ['224.0.0.1', '224.0.0.1'],
    ['[::1]', '[::1]'],
    ['[::]', '[::]'],
    ['[fd00::1]', '[fd00::1]'],
    ['[fe80::1]', '[fe80::1]'],
    ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]'], // IPv4-mapped, dotted
    ['[::ffff:7f00:1]', '[::ffff:7f00:1]'], // IPv4-mapped, hex
    ['[::ffff:a9fe:a9fe]', '[::ffff:a9fe:a9fe]'], // IPv4-mapped metadata address
  ];

  it('WHATWG URL parsing turns decimal, octal, hex and short IPv4 spellings into dotted form (what the guard then sees)', () => {
    for (const [spelling, hostname] of NON_PUBLIC_SPELLINGS) assert.equal(new URL(`https://${spelling}/`).hostname, hostname, spelling);
  });

  it('bucket endpoints: every spelling of a non-public address is 400 INVALID_BUCKET_ENDPOINT, without DNS', async () => {
    const noDns = async () => assert.fail('an IP literal needs no resolution');
    for (const [spelling] of NON_PUBLIC_SPELLINGS) {
      await assert.rejects(
        checkBucketEndpoint(`https://${spelling}`, { allowPrivateUrls: false }, noDns),
        (e: any) => e instanceof DomainError && e.status === 400 && e.errorCode === 'INVALID_BUCKET_ENDPOINT' && /non-public address/.test(e.message),
        spelling,
      );
    }
  });

  it('bucket endpoints: https on any port to a public host; http, user info and other schemes refused; allowPrivateUrls allows http and private hosts', async () => {
    const publicDns = async () => ['1.1.1.1'];
    const refusal = (e: any) => e instanceof DomainError && e.errorCode === 'INVALID_BUCKET_ENDPOINT';
    await checkBucketEndpoint('https://minio.example.com:9000', { allowPrivateUrls: false }, publicDns);
    await checkBucketEndpoint('https://s3.example.com', { allowPrivateUrls: false }, publicDns);
    await checkBucketEndpoint(undefined, { allowPrivateUrls: false }); // AWS S3
    for (const endpoint of ['http://minio.example.com:9000', 'https://key:secret@minio.example.com', 'ftp://minio.example.com', 'not a url']) {
      await assert.rejects(checkBucketEndpoint(endpoint, { allowPrivateUrls: false }, publicDns), refusal, endpoint);
    }
    await assert.rejects(
      checkBucketEndpoint('https://gone.example.com', { allowPrivateUrls: false }, async () => []),
      /does not resolve/,
    );
    await assert.rejects(
      checkBucketEndpoint('https://internal.example.com', { allowPrivateUrls: false }, async () => ['1.1.1.1', '10.1.2.3']),
      (e: any) => refusal(e) && !/10\.1\.2\.3/.test(e.message),
    );
    await checkBucketEndpoint('http://127.0.0.1:9000', { allowPrivateUrls: true });
    await assert.rejects(checkBucketEndpoint('ftp://127.0.0.1', { allowPrivateUrls: true }), refusal);
  });

  it('localhost and *.localhost are loopback whatever the resolver answers (RFC 6761)', async () => {
    for (const name of ['localhost', 'LOCALHOST', 'localhost.', 'vidmill.localhost', 'a.b.localhost.']) assert.equal(isLoopbackName(name), true, name);
    for (const name of ['localhost.example.com', 'notlocalhost', 'example.com']) assert.equal(isLoopbackName(name), false, name);
    const liar = async () => ['1.1.1.1'];
    await assert.rejects(checkBucketEndpoint('https://vidmill.localhost:9000', { allowPrivateUrls: false }, liar), /non-public address/);
    await assert.rejects(checkOutboundUrl('https://localhost/', { allowPrivateUrls: false }, liar), /non-public address/);
  });

  it('HTTPS sources and webhooks keep their own rule: https on port 443 only, INVALID_HTTPS_URL', async () => {
    await assert.rejects(
      checkOutboundUrl('https://hooks.example.com:8443/', { allowPrivateUrls: false }, async () => ['1.1.1.1']),
      (e: any) => e.errorCode === 'INVALID_HTTPS_URL',
    );
    await assert.rejects(checkOutboundUrl('https://0x7f000001/', { allowPrivateUrls: false }), (e: any) => e.errorCode === 'INVALID_HTTPS_URL');
  });
});
