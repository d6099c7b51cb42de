/**
 * Redirects of HTTPS video-in sources: followed, each target checked before it is requested
 * (the outbound URL guard in production), a refused or endless redirect is a clear
 * INVALID_HTTPS_URL.
 */
import { strict as assert } from 'node:assert';
import https from 'node:https';
import { HttpsRangeSource, RedirectRefusedError } from '../../src/net/https-range-source';
import { classifyHttpsProbeFailure } from '../../src/features/video-in/testing';
import { checkOutboundUrl } from '../../src/net/outbound-url';
import { BadRequestError } from '../../src/shared/errors';
import { RangeServer, startRangeServer } from '../helpers/range-server';

describe('Redirects of HTTPS range sources', () => {
  let server: RangeServer;
  let agent: https.Agent;
  before(async () => {
    server = await startRangeServer();
    agent = new https.Agent({ ca: server.ca });
    server.serve('/real.mp4', Buffer.alloc(1000, 1));
    server.redirect('/hop1', '/hop2', 301);
    server.redirect('/hop2', '/real.mp4', 307);
    server.redirect('/loop', '/loop');
  });
  after(async () => {
    agent.destroy();
    await server.close();
  });

  it('follows a chain of redirects (relative locations too), asking the check for every hop', async () => {
    const checked: string[] = [];
    const source = new HttpsRangeSource(`${server.origin}/hop1`, { agent, checkRedirect: (u) => void checked.push(u.pathname) });
    assert.equal((await source.probe()).size, 1000);
    assert.deepEqual(checked, ['/hop2', '/real.mp4']);
  });

  it('a target the check refuses is never requested', async () => {
    server.requests.length = 0;
    const source = new HttpsRangeSource(`${server.origin}/hop1`, {
      agent,
      checkRedirect: async (u) => {
        if (u.pathname === '/real.mp4') await checkOutboundUrl('https://169.254.169.254/', { allowPrivateUrls: false });
      },
    });
    const err = await source.probe().catch((e) => e);
    assert.ok(err instanceof RedirectRefusedError, String(err));
    assert.match(err.message, /non-public address/);
    assert.deepEqual(
      server.requests.map((r) => r.path),
      ['/hop1', '/hop2'],
    );
    const mapped = classifyHttpsProbeFailure(err, new AbortController().signal);
    assert.ok(mapped instanceof BadRequestError);
    assert.equal(mapped.errorCode, 'INVALID_HTTPS_URL');
  });

  it('stops after 5 redirects', async () => {
    const err = await new HttpsRangeSource(`${server.origin}/loop`, { agent }).probe().catch((e) => e);
    assert.ok(err instanceof RedirectRefusedError);
    assert.match(err.message, /more than 5 redirects/);
  });

  it('refuses a redirect to another scheme', async () => {
    server.redirect('/to-ftp', 'ftp://example.com/v.mp4');
    const err = await new HttpsRangeSource(`${server.origin}/to-ftp`, { agent }).probe().catch((e) => e);
    assert.ok(err instanceof RedirectRefusedError);
    assert.match(err.message, /ftp:/);
  });
});
