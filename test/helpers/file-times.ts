/**
 * Loaded by mocha before every test file (.mocharc.json `require`): how long each test file took,
 * its hooks included (the time since the previous test ended is counted to the file of the test
 * that ends). When VIDMILL_TEST_TIMES names a file, one JSON line per mocha run is appended to it
 * after each file in a parallel run, at the end of a serial one (`{ pass, times: { file: ms } }`); scripts/run-tests.ts prints them, slowest first.
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';

const out = process.env.VIDMILL_TEST_TIMES;
const times: Record<string, number> = {};
let last = Date.now();

/** Appends what was timed since the last write (one line) and starts again. */
function flush(): void {
  if (!out || Object.keys(times).length === 0) return;
  appendFileSync(out, JSON.stringify({ pass: process.env.VIDMILL_TEST_DB, times }) + '\n');
  for (const file of Object.keys(times)) delete times[file];
}

export const mochaHooks = {
  // Root hooks run once per file in a parallel run (mocha --parallel) and once per run otherwise.
  afterAll: flush,
  afterEach(this: { currentTest?: { file?: string } }) {
    const now = Date.now();
    const file = this.currentTest?.file ? path.relative(process.cwd(), this.currentTest.file) : 'unknown';
    times[file] = (times[file] ?? 0) + (now - last);
    last = now;
  },
};

// A run stopped before its root afterAll (a failed hook, --bail) still reports what it timed.
process.on('exit', flush);
