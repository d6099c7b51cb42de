// test-databases: one
// (SQLite only: its subject is the Swagger UI page in a browser.)
/**
 * Swagger UI at /docs works end to end in a real browser: authorize with an API key, "Try it
 * out" on getAccount (GET /v1/account) against "This server" (<origin>/api), and see the live 200
 * response with the user's account. Uses the system's Debian chromium through playwright-core
 * (never a downloaded browser); without /usr/bin/chromium the test fails and says how to install it.
 */
import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { assertChromiumInstalled, launchChromium } from '../helpers/chromium';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { scaled } from '../helpers/timeouts';

describe('Swagger UI at /docs (chromium)', function () {
  this.timeout(scaled(60_000));

  let h: Harness;
  let u: TestUser;
  let server: http.Server | undefined;
  let base: string;
  let browser: Browser | undefined;
  let page: Page;
  const pageErrors: string[] = [];

  before(async () => {
    assertChromiumInstalled();
    h = await createHarness();
    u = await h.user();
    const listening = http.createServer(h.app);
    server = listening;
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(0, '127.0.0.1', () => resolve());
    });
    base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    browser = await launchChromium();
    page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (err) => pageErrors.push(err.message));
  });

  after(async () => {
    await browser?.close();
    if (server) {
      const s = server;
      await new Promise<void>((resolve) => {
        s.close(() => resolve());
        s.closeAllConnections();
      });
    }
    await h?.close();
  });

  it('authorizes with an API key and runs "Try it out" on getAccount: live 200 with the account', async () => {
    await page.goto(`${base}/docs/`);
    const operation = page.locator('#operations-Account-getAccount');
    await operation.waitFor();
    assert.equal(await page.locator('.servers select').inputValue(), `${base}/api`, 'the selected server is "This server", at the origin the page came from');

    // Authorize: the api_key scheme of the modal.
    await page.locator('.auth-wrapper .btn.authorize').click();
    const modal = page.locator('.modal-ux');
    await modal.waitFor();
    const apiKeyForm = modal.locator('.auth-container').filter({ has: page.locator('h4 code', { hasText: /^api_key$/ }) });
    await apiKeyForm.locator('input').fill(u.apiKey);
    await apiKeyForm.locator('button.authorize').click();
    // Authorized: the form says so, masks the value and offers "Logout" instead of "Authorize".
    await apiKeyForm.locator('h6', { hasText: 'Authorized' }).waitFor();
    await apiKeyForm.getByRole('button', { name: 'Remove authorization' }).waitFor();
    assert.equal(await apiKeyForm.locator('input').count(), 0, 'the API key is no longer shown in an input');
    await modal.locator('button.close-modal').click();
    await modal.waitFor({ state: 'detached' });
    assert.ok(await page.locator('.auth-wrapper .btn.authorize.locked').count(), 'the Authorize button shows the locked state');

    // Expand GET /v1/account, Try it out, Execute.
    await operation.locator('.opblock-summary-control').click();
    await operation.locator('.try-out__btn').click();
    await operation.locator('.execute').click();

    const status = operation.locator('.live-responses-table tbody tr.response .response-col_status');
    await status.waitFor();
    assert.equal((await status.innerText()).trim(), '200', await operation.locator('.live-responses-table').innerText());
    const body = await operation.locator('.live-responses-table tbody tr.response .response-col_description .microlight').first().innerText();
    assert.ok(body.includes(u.email), `the response body shows ${u.email}: ${body}`);
    assert.equal(JSON.parse(body).user.email, u.email);

    // The request went to this server with the key (the curl shown by Swagger UI).
    const curl = await operation.locator('.curl-command').innerText();
    assert.match(curl, new RegExp(`${base.replace(/[.:/]/g, '\\$&')}/api/v1/account`));
    assert.match(curl, /X-API-Key/i);
    assert.deepEqual(pageErrors, []);
  });
});
