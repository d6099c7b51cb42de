/**
 * The system's Debian chromium for browser tests, driven by playwright-core (never a downloaded
 * browser). Without /usr/bin/chromium the test fails and says how to install it.
 */
import { strict as assert } from 'node:assert';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'];

/** Fails with an install hint when chromium is missing (call it first in `before`). */
export function assertChromiumInstalled(): void {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: this test drives the system's chromium. Install it with \`apt-get install chromium\`.`);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}
