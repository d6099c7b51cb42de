/**
 * Loaded by mocha before every test file (.mocharc.json `require`): how long each test file took,
 * its hooks included (the time since the previous test ended is counted to the file of the test
 * that ends). When VIDMILL_TEST_TIMES names a file, one JSON line per mocha run is appended to it
 * at exit (`{ pass, times: { file: ms } }`); scripts/run-tests.ts prints them, slowest first.
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';

const out = process.env.VIDMILL_TEST_TIMES;
const times: Record<string, number> = {};
let last = Date.now();

export const mochaHooks = {
  afterEach(this: { currentTest?: { file?: string } }) {
    const now = Date.now();
    const file = this.currentTest?.file ? path.relative(process.cwd(), this.currentTest.file) : 'unknown';
    times[file] = (times[file] ?? 0) + (now - last);
    last = now;
  },
};

if (out) process.on('exit', () => appendFileSync(out, JSON.stringify({ pass: process.env.VIDMILL_TEST_DB, times }) + '\n'));
