/**
 * Summarises a V8 .cpuprofile (e.g. from BENCH_CPU_PROF=<dir> npm run bench -- api):
 * self time by package/area, top functions by self time, and inclusive time of the functions
 * matching an optional filter.
 *
 *   npx tsx bench/cpuprofile-summary.ts <file.cpuprofile> [--top N] [--filter REGEX] [--last SECONDS]
 *
 * --last S keeps only the samples of the profile's final S seconds: with BENCH_ROUNDS=1 the
 * Vidmill measurement is the last thing before the server stops, so `--last 10` leaves out
 * start-up, module loading and the first request's schema compilation.
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const argv = process.argv.slice(2);
const opt = (name: string) => {
  const i = argv.indexOf(name);
  if (i < 0) return undefined;
  const v = argv[i + 1];
  argv.splice(i, 2);
  return v;
};
const topArg = opt('--top');
const filterArg = opt('--filter');
const lastArg = opt('--last');
const [file] = argv;
if (!file) {
  console.error('usage: tsx bench/cpuprofile-summary.ts <file.cpuprofile> [--top N] [--filter REGEX] [--last SECONDS]');
  process.exit(2);
}
const top = Number(topArg ?? 30);
const prof: Profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

function area(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native/builtin)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    const [scope = '', name] = rest;
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  if (url.startsWith('node:')) return url.replace(/^node:internal\/(.*?)(\/.*)?$/, 'node:$1');
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1);
  const bench = url.indexOf('/bench/');
  if (bench >= 0) return url.slice(bench + 1);
  return url;
}
/** `pkg/dist/file.js` for dependencies, `src/...` for our code. */
function shortUrl(url: string, fn: string): string {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length).replace(/\/(dist|lib)\//, '/');
  return area(url, fn);
}
const label = (n: Node) => {
  const f = n.callFrame;
  const where = f.url ? `${shortUrl(f.url, f.functionName)}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'} ${where}`.trim();
};

// Sample i's timestamp is startTime + sum of deltas up to i; `--last` zeroes earlier samples.
const stamps: number[] = [];
let t = prof.startTime;
for (const d of prof.timeDeltas) stamps.push((t += d));
const from = lastArg ? (stamps.at(-1) ?? 0) - Number(lastArg) * 1e6 : -Infinity;
const selfMs = new Map<number, number>();
let totalMs = 0;
const sampleMs: number[] = [];
for (let i = 0; i < prof.samples.length; i++) {
  const dt = stamps[i]! >= from ? (prof.timeDeltas[i] ?? 0) / 1000 : 0;
  sampleMs.push(dt);
  totalMs += dt;
  const sample = prof.samples[i]!;
  selfMs.set(sample, (selfMs.get(sample) ?? 0) + dt);
}
const idleMs = [...selfMs].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, v]) => a + v, 0);
const busyMs = totalMs - idleMs;
const pct = (ms: number) => `${((100 * ms) / busyMs).toFixed(1).padStart(5)}%`;
console.log(`profile ${file}${lastArg ? ` (last ${lastArg} s)` : ''}: ${(totalMs / 1000).toFixed(1)} s, busy ${(busyMs / 1000).toFixed(1)} s (percentages of busy time)\n`);

const areaSelf = new Map<string, number>();
const fnSelf = new Map<string, number>();
for (const [id, ms] of selfMs) {
  const n = byId.get(id)!;
  if (n.callFrame.functionName === '(idle)') continue;
  const a = area(n.callFrame.url, n.callFrame.functionName);
  areaSelf.set(a, (areaSelf.get(a) ?? 0) + ms);
  fnSelf.set(label(n), (fnSelf.get(label(n)) ?? 0) + ms);
}
const print = (title: string, m: Map<string, number>, n: number) => {
  console.log(title);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`  ${pct(v)}  ${k}`);
  console.log('');
};
print('self time by area', areaSelf, top);
print('self time by function', fnSelf, top);

// Inclusive time: each sample counts once for every distinct function label on its stack.
const filter = filterArg ? new RegExp(filterArg) : undefined;
const incl = new Map<string, number>();
const areaIncl = new Map<string, number>();
for (let i = 0; i < prof.samples.length; i++) {
  const seen = new Set<string>();
  const seenArea = new Set<string>();
  const sample = prof.samples[i]!;
  let id: number | undefined = sample;
  const ms = sampleMs[i]!; // one entry per sample
  if (ms === 0 || byId.get(sample)!.callFrame.functionName === '(idle)') continue;
  while (id !== undefined) {
    const n = byId.get(id)!;
    const l = label(n);
    if (!seen.has(l)) {
      seen.add(l);
      if (!filter || filter.test(l)) incl.set(l, (incl.get(l) ?? 0) + ms);
    }
    const a = area(n.callFrame.url, n.callFrame.functionName);
    if (!seenArea.has(a)) {
      seenArea.add(a);
      areaIncl.set(a, (areaIncl.get(a) ?? 0) + ms);
    }
    id = parent.get(id);
  }
}
print('inclusive time by area (anything on the stack)', areaIncl, top);
print(`inclusive time by function${filter ? ` matching /${filterArg}/` : ''}`, incl, top);
