/**
 * A real process (src/main.ts, `VIDMILL_ROLE=all`, SQLite) stops on SIGTERM without waiting for
 * the long polls of webhook listeners: a poll held for up to 25 s is answered (200, no items) at
 * once and the process exits well within that time. Dialect-free (its own data directory).
 */
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApiKey, embeddedEnv, startVidmillProcess, VidmillProcess } from '../helpers/vidmill-process';
import { scaled, scaledBelow } from '../helpers/timeouts';

const OWNER = { email: 'owner@example.com', password: 'a-long-password-for-the-owner' };

describe('Webhook listeners: SIGTERM answers waiting long polls and stops the process', function () {
  this.timeout(scaled(120_000));
  let dataDir: string;
  let p: VidmillProcess | undefined;

  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-listener-stop-'));
  });
  after(async () => {
    await p?.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a poll waiting 25 s is answered at once on SIGTERM and the process exits within 5 s', async () => {
    p = startVidmillProcess(embeddedEnv(dataDir, OWNER, { VIDMILL_LOG_LEVEL: 'info' }), { captureOutput: true });
    const base = await p.listening();
    const apiKey = await createApiKey(base, OWNER, 'listener');
    const created = await fetch(`${base}/api/v1/webhooks/listeners`, {
      method: 'POST',
      headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ eventTypes: ['video_in.done'] }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const { id } = (await created.json()) as { id: string };

    const started = performance.now();
    const poll = fetch(`${base}/api/v1/webhooks/listeners/${id}/deliveries?waitSeconds=25`, { headers: { 'X-API-Key': apiKey } });
    await new Promise((r) => setTimeout(r, 500));
    p.child.kill('SIGTERM');
    const res = await poll;
    assert.equal(res.status, 200);
    assert.deepEqual(((await res.json()) as { items: unknown[] }).items, []);
    const code = await Promise.race([p.exited, new Promise((r) => setTimeout(() => r('still running'), 5_000))]);
    assert.equal(code, 0, `exit after SIGTERM:\n${p.output()}`);
    assert.ok(performance.now() - started < scaledBelow(6_000, 20_000), `stopped after ${Math.round(performance.now() - started)} ms`);
    assert.match(p.output(), /"msg":"stopped"/);
  });
});
