/**
 * The guarded agents (src/net/guarded-agents.ts), the one way Vidmill connects to a host a
 * customer names: IP literals, which Node connects to without any lookup, are checked where the
 * socket is opened, in every spelling URL parsing gives them; plain http connects only while
 * private URLs are allowed; a lookup named by the request cannot replace the guard's; and the
 * policy is read at each connection, so a kept-alive connection opened while private URLs were
 * allowed is not reused once they are not. Real listeners on loopback count the connections they
 * accept.
 */
import { strict as assert } from 'node:assert';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { guardedAgents } from '../../src/net/guarded-agents';
import { isNonPublicAddressRefusal, type OutboundPolicy } from '../../src/net/outbound-url';
import { makeSelfSignedCert } from '../helpers/range-server';

interface Outcome {
  status?: number;
  error?: NodeJS.ErrnoException;
}

/** One GET through `agent`; resolves with the answer's status or the request's error. */
function get(url: string, agent: http.Agent, extra: http.RequestOptions = {}): Promise<Outcome> {
  const client = url.startsWith('https:') ? https : http;
  return new Promise((resolve) => {
    const req = client.request(url, { agent, timeout: 5_000, ...extra }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (error) => resolve({ error }));
    req.end();
  });
}

describe('Guarded agents: every connection to a customer-named host is checked when it is made', () => {
  const policy: OutboundPolicy = { allowPrivateUrls: false };
  const cert = makeSelfSignedCert();
  let plain: http.Server;
  let tls: https.Server;
  let raw6: net.Server | undefined;
  let httpPort: number;
  let httpsPort: number;
  let connections = 0;
  let agents: ReturnType<typeof guardedAgents>;

  before(async () => {
    plain = http.createServer((_, res) => res.end('reached'));
    plain.on('connection', () => connections++);
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    httpPort = (plain.address() as AddressInfo).port;
    tls = https.createServer(cert, (_, res) => res.end('reached'));
    tls.on('connection', () => connections++);
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
    httpsPort = (tls.address() as AddressInfo).port;
    // The same port on ::1, where the machine has IPv6 loopback, for the [::1] forms.
    const v6 = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    raw6 = await new Promise<net.Server | undefined>((r) => v6.once('error', () => r(undefined)).listen(httpsPort, '::1', () => r(v6)));
  });
  after(async () => {
    await new Promise<void>((r) => plain.close(() => r()));
    await new Promise<void>((r) => tls.close(() => r()));
    if (raw6) await new Promise<void>((r) => raw6!.close(() => r()));
  });
  beforeEach(() => {
    policy.allowPrivateUrls = false;
    connections = 0;
    agents = guardedAgents(policy, { extraCa: [cert.cert] });
  });
  afterEach(() => {
    agents.httpAgent.destroy();
    agents.httpsAgent.destroy();
  });

  const refused = (o: Outcome, what: string) => {
    assert.ok(o.error, `${what}: expected a refusal, got HTTP ${o.status}`);
    assert.ok(isNonPublicAddressRefusal(o.error), `${what}: ${o.error.code} ${o.error.message}`);
  };

  /** https to IP literals: `PORT` is the TLS listener's port (nothing listens on the others: a refusal must not wait for a timeout). */
  const LITERALS = [
    'https://127.0.0.1:PORT/',
    'https://[::1]:PORT/',
    'https://10.0.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://2130706433:PORT/', // decimal
    'https://0x7f000001:PORT/', // hex
    'https://0x7f.0.0.1:PORT/', // hex, dotted
    'https://0177.0.0.1:PORT/', // octal
    'https://127.1:PORT/', // short
    'https://0.0.0.0:PORT/',
    'https://[::ffff:127.0.0.1]:PORT/', // IPv4-mapped
    'https://[::ffff:7f00:1]:PORT/',
    'https://[fd00::1]/',
    'https://100.64.0.1/',
    'https://192.168.1.1/',
  ];

  for (const spelled of LITERALS) {
    it(`${spelled.replace(':PORT', '')} is refused at connect time, no connection made`, async () => {
      const url = spelled.replace('PORT', String(httpsPort));
      refused(await get(url, agents.httpsAgent), url);
      assert.equal(connections, 0);
    });
  }

  it('http (plain) is refused whatever the host while private URLs are not allowed: http://169.254.169.254, http://127.0.0.1, http://[::1]', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data/', `http://127.0.0.1:${httpPort}/`, `http://[::1]:${httpPort}/`, `http://2130706433:${httpPort}/`]) {
      refused(await get(url, agents.httpAgent), url);
    }
    assert.equal(connections, 0);
  });

  it("a name is checked by the agents' lookup, which a lookup given with the request cannot replace", async () => {
    const permissive: net.LookupFunction = (_host, _opts, cb) => (cb as (e: null, a: string, f: number) => void)(null, '127.0.0.1', 4);
    const o = await get(`https://localhost:${httpsPort}/`, agents.httpsAgent, { lookup: permissive });
    refused(o, 'localhost');
    assert.doesNotMatch(o.error!.message, /127\.0\.0\.1|::1/, 'the refusal names the host, not an address');
    assert.equal(connections, 0);
  });

  it('with private URLs allowed the same agents reach loopback (the setting is the only difference)', async () => {
    policy.allowPrivateUrls = true;
    assert.equal((await get(`https://127.0.0.1:${httpsPort}/`, agents.httpsAgent)).status, 200);
    assert.equal((await get(`http://127.0.0.1:${httpPort}/`, agents.httpAgent)).status, 200);
    assert.equal(connections, 2);
  });

  it('the policy is read at each connection: a kept-alive connection opened while private URLs were allowed is closed, not reused, once they are not', async () => {
    policy.allowPrivateUrls = true;
    for (const [url, agent] of [
      [`https://127.0.0.1:${httpsPort}/`, agents.httpsAgent],
      [`http://127.0.0.1:${httpPort}/`, agents.httpAgent],
    ] as const) {
      assert.equal((await get(url, agent)).status, 200);
      assert.equal((await get(url, agent)).status, 200, 'the second request reuses the kept-alive connection');
    }
    assert.equal(connections, 2, 'one connection per agent, kept alive');
    policy.allowPrivateUrls = false;
    refused(await get(`https://127.0.0.1:${httpsPort}/`, agents.httpsAgent), 'https after the change');
    refused(await get(`http://127.0.0.1:${httpPort}/`, agents.httpAgent), 'http after the change');
    assert.equal(connections, 2, 'no new connection was made');
    for (const free of [agents.httpsAgent, agents.httpAgent].flatMap((a) => Object.values(a.freeSockets).flat())) {
      assert.ok(free?.destroyed, 'the pooled connection was closed');
    }
  });
});
