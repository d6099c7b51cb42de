/**
 * Loaded by mocha before every test file (.mocharc.json `require`): how long each test file took,
 * its hooks included (the time since the previous test ended is counted to the file of the test
 * that ends), in wall time and in CPU time: this process's plus that of the child processes it
 * waited for (ffmpeg, the CLI, ...; read from /proc/self/stat where there is one), so that a file's
 * cost can be compared between runs on a loaded machine. The database server's CPU is not in it.
 * When VIDMILL_TEST_TIMES names a file, one JSON line per mocha run is appended to it after each
 * file in a parallel run, at the end of a serial one (`{ pass, times: { file: ms }, cpu: { file: ms } }`);
 * scripts/run-tests.ts prints them, costliest first.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';

const out = process.env.VIDMILL_TEST_TIMES;
const times: Record<string, number> = {};
const cpu: Record<string, number> = {};

/** Clock ticks per second of /proc's times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** Milliseconds of CPU used by this process and by the children it has waited for. */
function cpuMillis(): number {
  const own = process.cpuUsage();
  let children = 0;
  try {
    // Fields after the command name (which may hold spaces, hence after the last ')'):
    // state is field 3, cutime and cstime are fields 16 and 17.
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    children = ((Number(fields[13]) + Number(fields[14])) * 1000) / TICKS_PER_SECOND;
  } catch {
    // No /proc: this process's CPU only.
  }
  return (own.user + own.system) / 1000 + children;
}

let last = Date.now();
let lastCpu = cpuMillis();

/** Appends what was timed since the last write (one line) and starts again. */
function flush(): void {
  if (!out || Object.keys(times).length === 0) return;
  appendFileSync(out, JSON.stringify({ pass: process.env.VIDMILL_TEST_DB, times, cpu }) + '\n');
  for (const file of Object.keys(times)) {
    delete times[file];
    delete cpu[file];
  }
}

export const mochaHooks = {
  // Root hooks run once per file in a parallel run (mocha --parallel) and once per run otherwise.
  afterAll: flush,
  afterEach(this: { currentTest?: { file?: string } }) {
    const now = Date.now();
    const nowCpu = cpuMillis();
    const file = this.currentTest?.file ? path.relative(process.cwd(), this.currentTest.file) : 'unknown';
    times[file] = (times[file] ?? 0) + (now - last);
    cpu[file] = (cpu[file] ?? 0) + (nowCpu - lastCpu);
    last = now;
    lastCpu = nowCpu;
  },
};

// A run stopped before its root afterAll (a failed hook, --bail) still reports what it timed.
process.on('exit', flush);
