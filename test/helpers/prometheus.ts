/**
 * A strict reader of the Prometheus text exposition format (0.0.4) for tests of GET /metrics:
 * every line must be a `# HELP`, a `# TYPE` or a sample of a family whose TYPE came before it;
 * label values are unescaped; histograms are checked (cumulative buckets, `+Inf` equal to
 * `_count`, a `_sum`). Throws on anything else.
 */
import { strict as assert } from 'node:assert';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** Family name -> type. */
  types: Map<string, string>;
  /** Sum of the samples named `name` whose labels include `labels` (0 when none). */
  value(name: string, labels?: Record<string, string>): number;
  /** Whether any sample is named `name` with `labels`. */
  has(name: string, labels?: Record<string, string>): boolean;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`);
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\[\\"n])*)"(,|$)/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function number(text: string, line = text): number {
  // As Prometheus reads them (Go's ParseFloat, ignoring case): prom-client writes NaN as "Nan".
  if (/^nan$/i.test(text)) return NaN;
  if (/^\+?inf(inity)?$/i.test(text)) return Infinity;
  if (/^-inf(inity)?$/i.test(text)) return -Infinity;
  assert.match(text, /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/, `not a sample value: ${line}`);
  return Number(text);
}

function labelsOf(text: string | undefined, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = text ?? '';
  while (rest.length) {
    const m = LABEL.exec(rest);
    assert.ok(m, `bad labels in: ${line}`);
    assert.ok(!(m[1]! in labels), `label ${m[1]} twice in: ${line}`);
    labels[m[1]!] = m[2]!.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    rest = rest.slice(m[0].length);
  }
  return labels;
}

/** The family a sample belongs to, given the declared types. */
function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length);
      if (types.get(base) === 'histogram' || (types.get(base) === 'summary' && suffix !== '_bucket')) return base;
    }
  }
  return undefined;
}

export function parseExposition(text: string): Exposition {
  assert.ok(text.endsWith('\n'), 'the exposition ends with a newline');
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const helped = new Set<string>();
  for (const line of text.slice(0, -1).split('\n')) {
    if (line.startsWith('# HELP ')) {
      const m = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(line);
      assert.ok(m, `bad HELP line: ${line}`);
      assert.ok(!helped.has(m[1]!), `HELP twice for ${m[1]}`);
      helped.add(m[1]!);
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const m = new RegExp(`^# TYPE (${NAME}) (\\w+)$`).exec(line);
      assert.ok(m && TYPES.has(m[2]!), `bad TYPE line: ${line}`);
      assert.ok(!types.has(m[1]!), `TYPE twice for ${m[1]}`);
      types.set(m[1]!, m[2]!);
      continue;
    }
    if (line === '') continue; // empty lines are ignored (prom-client puts one between families)
    assert.ok(!line.startsWith('#'), `unexpected line: ${JSON.stringify(line)}`);
    const m = SAMPLE.exec(line);
    assert.ok(m, `bad sample line: ${line}`);
    assert.ok(familyOf(m[1]!, types), `sample before the TYPE of its family: ${line}`);
    samples.push({ name: m[1]!, labels: labelsOf(m[2], line), value: number(m[3]!, line) });
  }
  checkHistograms(samples, types);
  const matching = (name: string, labels: Record<string, string> = {}) => samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    samples,
    types,
    value: (name, labels) => matching(name, labels).reduce((sum, s) => sum + s.value, 0),
    has: (name, labels) => matching(name, labels).length > 0,
  };
}

function checkHistograms(samples: Sample[], types: Map<string, string>): void {
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const series = new Map<string, Sample[]>();
    for (const s of samples.filter((x) => x.name === `${family}_bucket`)) {
      const { le, ...rest } = s.labels;
      assert.ok(le !== undefined, `${family}_bucket without le`);
      const key = canonical(rest);
      series.set(key, [...(series.get(key) ?? []), s]);
    }
    for (const [key, buckets] of series) {
      const les = buckets.map((b) => number(b.labels.le!));
      for (let i = 1; i < buckets.length; i++) {
        assert.ok(les[i]! > les[i - 1]!, `${family}${key}: buckets out of order`);
        assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, `${family}${key}: buckets not cumulative`);
      }
      assert.equal(les[les.length - 1], Infinity, `${family}${key}: no +Inf bucket`);
      const same = (s: Sample) => canonical(s.labels) === key;
      const count = samples.find((s) => s.name === `${family}_count` && same(s));
      assert.ok(count && samples.some((s) => s.name === `${family}_sum` && same(s)), `${family}${key}: no _count or _sum`);
      assert.equal(buckets[buckets.length - 1]!.value, count.value, `${family}${key}: +Inf bucket differs from _count`);
    }
  }
}

function canonical(labels: Record<string, string>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
}
