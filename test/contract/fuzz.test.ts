/**
 * Contract-driven fuzzer: for every operation of generated/openapi.json, requests with malformed
 * paths (bad escapes, huge and unicode ids), query strings (unknown parameters, bad types, bad
 * escapes, arrays, huge values), headers (Content-Encoding, Content-Type with charset parameters,
 * Content-Length: exact, 0, none, chunked) and bodies (deep nesting, huge numbers, wrong types,
 * truncated JSON, duplicate keys, prototype keys), built from the operation's parameters and body
 * example, sent with valid credentials through supertest to the app of createHarness.
 *
 * Every request must get: no 5xx; a status the operation declares; an `Error` body valid against
 * the contract for an error, the declared schema for a success; no HTML, stack or file path; no
 * row added or removed in any table by a rejected request; and /healthz must still answer.
 *
 * Seeded (test/helpers/fuzzing.ts): `npm test` runs the committed seeds of
 * test/helpers/fuzz-seeds.ts for a fixed number of requests each; VIDMILL_FUZZ_SEED=<n> replays
 * a seed and VIDMILL_FUZZ_SEED=random draws one (`npm run fuzz`). Every problem is collected (not
 * only the first), then reported grouped by cause with the exact requests and the seed.
 */
import { strict as assert } from 'node:assert';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import pino from 'pino';
import supertest from 'supertest';
import { loadContract } from '../../src/composition';
import { isPostgres, type Db } from '../../src/db/database';
import { BUILT_IN_CONFIGURATIONS } from '../../src/processing-planner';
import { contractOperations, type ContractOperation } from '../helpers/contract-operations';
import { TEST_DIALECT } from '../helpers/database';
import { describeRun, fuzzRuns, INTEGER_LOOKALIKES, problemReport, type FuzzRun } from '../helpers/fuzzing';
import { basic, createHarness, withoutBodyFraming, type Harness, type TestUser } from '../helpers/harness';
import { scaled } from '../helpers/timeouts';

/** Tables whose rows change for reasons other than the request's own effect. */
const VOLATILE_TABLES = new Set(['knex_migrations', 'knex_migrations_lock', 'rate_limits']);

// ---------------------------------------------------------------------------------------------
// JSON text with full control: raw tokens (1e999, deep nesting), duplicate and prototype keys.

class Raw {
  constructor(readonly text: string) {}
}
class Obj {
  constructor(readonly entries: [string, Node][]) {}
}
type Node = Raw | Obj | Node[] | string | number | boolean | null;

function toNode(v: unknown): Node {
  if (Array.isArray(v)) return v.map(toNode);
  if (v !== null && typeof v === 'object') return new Obj(Object.entries(v).map(([k, x]) => [k, toNode(x)]));
  return v as Node;
}

function jsonText(n: Node): string {
  if (n instanceof Raw) return n.text;
  if (n instanceof Obj) return `{${n.entries.map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`).join(',')}}`;
  if (Array.isArray(n)) return `[${n.map(jsonText).join(',')}]`;
  return JSON.stringify(n);
}

/** Places in `n` a value can be replaced: [container, key or index]. */
function slots(n: Node, out: [Obj | Node[], number][] = [], depth = 0): [Obj | Node[], number][] {
  if (depth > 6) return out;
  if (n instanceof Obj) n.entries.forEach(([, v], i) => (out.push([n, i]), slots(v, out, depth + 1)));
  else if (Array.isArray(n)) n.forEach((v, i) => (out.push([n, i]), slots(v, out, depth + 1)));
  return out;
}
const objects = (n: Node): Obj[] => [
  ...(n instanceof Obj ? [n] : []),
  ...slots(n)
    .map(([c, i]) => (c instanceof Obj ? c.entries[i]![1] : c[i]))
    .filter((v): v is Obj => v instanceof Obj),
];

// ---------------------------------------------------------------------------------------------
// Generators

const BAD_ESCAPES = ['%ZZ', '%', '%%', '%2', '%G0', '%E0%A4%A', '%C3%28', '%FF', '%C0%AF', '%ED%A0%80', 'a%', '%u00e9', '%00', '%0A'];
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];
const DEPTHS = fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(63, 64, 65, 100, 1000, 5000, 20_000));

const deep = fc
  .tuple(DEPTHS, fc.constantFrom('array', 'object', 'mixed'))
  .map(([d, kind]) =>
    kind === 'array' ? new Raw('['.repeat(d) + ']'.repeat(d)) : kind === 'object' ? new Raw('{"a":'.repeat(d) + 'null' + '}'.repeat(d)) : new Raw('[{"a":'.repeat(d) + '1' + '}]'.repeat(d)),
  );

/** encodeURIComponent, with lone surrogates (which it refuses) replaced by U+FFFD first. */
const encode = (s: string) => encodeURIComponent((s as string & { toWellFormed(): string }).toWellFormed());

/** Values a regular expression for their format accepts but a Date, a uuid column or PostgreSQL may not. */
const ODD_FORMATTED = [
  '2026-19-39T29:59:59Z',
  '9999-12-31T23:59:60Z',
  '2026-02-31T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '2026-01-01T00:00:00+0100',
  '2026-01-01T00:00:00.123456789+14:00',
  '2026-19-39',
  '2026-02-30',
  '0000-00-00',
  'urn:uuid:3fa85f64-5717-4562-b3fc-2c963f66afa6',
  '3FA85F64-5717-4562-B3FC-2C963F66AFA6',
  '00000000-0000-0000-0000-000000000000',
];

const weirdString = fc.oneof(
  fc.constantFrom(...ODD_FORMATTED),
  fc.constantFrom('\u0000', 'a\u0000b', '\u0000'.repeat(3)),
  fc.constantFrom(
    '',
    ' ',
    '\ud800',
    '\udfff\ud800',
    '\ufeff',
    '\u202e',
    'not-a-uuid',
    '2026-13-45T25:61:61Z',
    'https://%ZZ',
    'javascript:alert(1)',
    'http://127.0.0.1/',
    'https://[::1]:0/',
    '../../etc/passwd',
    '${jndi:x}',
    '%ZZ',
    'NaN',
    '-0',
  ),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer({ min: 100, max: 5000 }).map((n) => 'x'.repeat(n)),
);

const weirdNumber: fc.Arbitrary<Node> = fc.oneof(
  fc.constantFrom(...['1e999', '-1e999', '1e-999', '-0', '123456789012345678901234567890', '9007199254740993', '0.1e1', '1E+2'].map((t) => new Raw(t))),
  fc.constantFrom<Node>(0, -1, 1.5, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

const weirdValue: fc.Arbitrary<Node> = fc.oneof(weirdNumber, fc.constantFrom<Node>(true, false, null, [], new Obj([]), [1, 'a', null]), weirdString, deep);

const WEIRD_BODIES = [
  '',
  ' ',
  '\t\r\n',
  'null',
  'true',
  '0',
  '-1',
  '"x"',
  '[]',
  '{}',
  '\ufeff{}',
  '{"a":1}{"b":2}',
  '{"a":1,}',
  "{'a':1}",
  'NaN',
  '{"a":NaN}',
  '{"a":undefined}',
  '[',
  '{',
  '{"',
  '{"a"',
  '{"a":',
  '"\\ud800"',
  '{"a":"\\u0000"}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '[1,2]',
  '{"a":1e999}',
  '1e999',
  '\u0000',
  'x'.repeat(300),
];
const INVALID_UTF8 = [Buffer.from([0xff, 0xfe, 0xfd]), Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]), Buffer.from([0x7b, 0x80, 0x7d])];

type Body = { kind: 'none' } | { kind: 'bytes'; bytes: Buffer; label: string };

function mutatedBody(example: unknown): fc.Arbitrary<Body> {
  const text = (n: Node, label: string): Body => ({ kind: 'bytes', bytes: Buffer.from(jsonText(n)), label });
  const base = () => toNode(example ?? {});
  const pick = <T>(xs: T[], r: number): T => xs[Math.floor(r * xs.length) % xs.length]!; // callers pass a non-empty list
  const r01 = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
  return fc.oneof(
    // One value replaced: by an odd value of its own type (so it may pass validation and reach
    // the service), or by anything (a wrong type, a huge number, deep nesting).
    fc.tuple(r01, fc.boolean(), weirdValue, weirdString, weirdNumber).map(([r, sameType, any, str, num]) => {
      const b = base();
      const s = slots(b);
      if (s.length === 0) return text(any, 'weird root');
      const [c, i] = pick(s, r);
      const old = c instanceof Obj ? c.entries[i]![1] : c[i];
      const v = !sameType ? any : typeof old === 'string' ? str : typeof old === 'number' ? num : any;
      if (c instanceof Obj) c.entries[i] = [c.entries[i]![0], v];
      else c[i] = v;
      return text(b, sameType ? 'one value replaced (same type)' : 'one value replaced');
    }),
    // A key added: prototype keys, unknown keys, or a duplicate of an existing key.
    fc.tuple(r01, fc.oneof(fc.constantFrom(...PROTO_KEYS, 'surprise'), fc.constant('@duplicate')), fc.oneof(weirdValue, fc.constant<Node>(new Obj([['polluted', true]])))).map(([r, key, v]) => {
      const b = base();
      const objs = objects(b);
      const target = objs.length ? pick(objs, r) : new Obj([]);
      const name = key === '@duplicate' ? (target.entries[0]?.[0] ?? 'name') : key;
      target.entries.push([name, v]);
      return text(objs.length ? b : target, key === '@duplicate' ? 'duplicate key' : `key ${key}`);
    }),
    // A key removed (a required one, often).
    r01.map((r) => {
      const b = base();
      const objs = objects(b).filter((o) => o.entries.length);
      const target = objs.length ? pick(objs, r) : undefined;
      target?.entries.splice(Math.floor(r * 7) % target.entries.length, 1);
      return text(b, 'key removed');
    }),
    // Truncated JSON.
    r01.map((r) => {
      const t = jsonText(base());
      return { kind: 'bytes' as const, bytes: Buffer.from(t.slice(0, Math.floor(r * t.length))), label: 'truncated' };
    }),
    // Deep nesting wrapped around the example.
    DEPTHS.map((d) => ({ kind: 'bytes' as const, bytes: Buffer.from('['.repeat(d) + jsonText(base()) + ']'.repeat(d)), label: `example nested ${d} deep` })),
    // The example itself (the malformation is elsewhere).
    fc.constant(0).map(() => text(base(), 'example')),
    // Bodies that are not the example at all.
    fc.constantFrom(...WEIRD_BODIES).map((t) => ({ kind: 'bytes' as const, bytes: Buffer.from(t), label: 'weird body' })),
    fc.constantFrom(...INVALID_UTF8).map((bytes) => ({ kind: 'bytes' as const, bytes, label: 'invalid UTF-8' })),
    deep.map((n) => text(n, 'deep body')),
  );
}

function validQueryValue(schema: any, ids: string[]): fc.Arbitrary<string> {
  if (schema?.enum) return fc.constantFrom(...schema.enum.map(String));
  if (schema?.format === 'uuid') return fc.oneof(fc.constantFrom(...ids), fc.uuid(), fc.constantFrom(...ODD_FORMATTED.slice(-3)));
  if (schema?.format === 'date-time' || schema?.format === 'date') {
    const now = new Date().toISOString();
    return fc.constantFrom(schema.format === 'date' ? now.slice(0, 10) : now, ...ODD_FORMATTED.slice(0, 9));
  }
  if (schema?.type === 'integer' || schema?.type === 'number') {
    const min = schema.minimum ?? 0;
    return fc.integer({ min, max: Math.min(schema.maximum ?? min + 100, min + 100_000) }).map(String);
  }
  if (schema?.type === 'boolean') return fc.constantFrom('true', 'false');
  return fc.constantFrom(String(schema?.example ?? schema?.default ?? 'x'));
}

const badQueryValue = fc.oneof(
  fc.constantFrom('abc', '-1', '0', '1.5', '1e999', '99999999999999999999', '', '%20', 'true', 'null', '%5B%5D', 'NaN', '-0', '0x10', '%00'),
  fc.constantFrom(...BAD_ESCAPES),
  fc.string({ unit: 'grapheme', maxLength: 30 }).map(encode),
  fc.integer({ min: 300, max: 4000 }).map((n) => 'x'.repeat(n)),
);

/**
 * For an integer parameter: texts JavaScript's Number reads as numbers that are no decimal
 * integer within the parameter's bounds (src/http/integer-parameters.ts refuses each).
 */
function numberLookalike(schema: any): fc.Arbitrary<string> {
  const min = schema?.minimum ?? 0;
  const max = schema?.maximum ?? 2_147_483_647;
  return fc.constantFrom(...INTEGER_LOOKALIKES, String(min - 1), String(max + 1)).map(encode);
}

const UNKNOWN_QUERY = [
  'surprise=1',
  '__proto__=1',
  '__proto__[polluted]=1',
  'constructor[prototype][polluted]=1',
  '%ZZ=1',
  'a%=1',
  'a[b][c][d][e][f][g][h]=1',
  'a'.repeat(300) + '=1',
  '=1',
  '&&&',
  '&',
  '?',
  Array.from({ length: 200 }, (_, i) => `k${i}=1`).join('&'),
  Array.from({ length: 40 }, () => 'x[]=1').join('&'),
  `${encode('ü€')}=1`,
  'a[99999]=1',
  'a[]=1&a[x]=2',
];

function queryString(op: ContractOperation, ids: string[]): fc.Arbitrary<string> {
  const declared = op.params
    .filter((p) => p.in === 'query')
    .map((p) => {
      const name = p.name as string;
      const value = fc.oneof(validQueryValue(p.schema, ids).map(encode), badQueryValue);
      return fc.oneof(
        { weight: 3, arbitrary: fc.constant<string | undefined>(undefined) },
        { weight: 2, arbitrary: validQueryValue(p.schema, ids).map((v) => `${name}=${encode(v)}`) },
        { weight: 3, arbitrary: badQueryValue.map((v) => `${name}=${v}`) },
        ...(p.schema?.type === 'integer' ? [{ weight: 2, arbitrary: numberLookalike(p.schema).map((v) => `${name}=${v}`) }] : []),
        { weight: 1, arbitrary: fc.tuple(value, value).map(([a, b]) => `${name}=${a}&${name}=${b}`) },
        { weight: 1, arbitrary: fc.tuple(fc.constantFrom('[]', '[x]', '[__proto__]', '[0]', '[][]'), value).map(([s, v]) => `${name}${s}=${v}`) },
      );
    });
  const unknown = fc.oneof({ weight: 4, arbitrary: fc.constant<string | undefined>(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...UNKNOWN_QUERY) });
  const mixed = fc.tuple(fc.tuple(...declared), unknown).map(([parts, extra]) => {
    const q = [...parts, extra].filter((x) => x !== undefined).join('&');
    return q ? `?${q}` : '';
  });
  // One number lookalike alone, so that nothing else in the query is refused before it is read.
  const integers = op.params.filter((p) => p.in === 'query' && p.schema?.type === 'integer');
  if (!integers.length) return mixed;
  const lone = fc.constantFrom(...integers).chain((p) => numberLookalike(p.schema).map((v) => `?${p.name}=${v}`));
  return fc.oneof({ weight: 3, arbitrary: mixed }, { weight: 1, arbitrary: lone });
}

const CONTENT_TYPES = [
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=UTF-8',
  'application/json;charset=utf-16',
  'application/json; charset=utf-16le',
  'application/json; charset=latin1',
  'application/json; charset=bogus',
  'application/json; charset=',
  'application/json; charset="utf-8"',
  'application/json;;',
  'application/json; foo',
  'application/json; charset=utf-8; charset=latin1',
  'APPLICATION/JSON',
  'application/merge-patch+json',
  'application/problem+json',
  'application/json-seq',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  '*/*',
  'application/*',
  'garbage',
  ';',
  '',
  'application/json, text/plain',
];
const CONTENT_ENCODINGS = [undefined, 'identity', 'gzip', 'deflate', 'br', 'zstd', 'compress', 'x-gzip', 'gzip, identity', 'identity, gzip', 'gzip, gzip', 'GZIP', '', 'bogus', '*'];
const COMPRESSORS: Record<string, (b: Buffer) => Buffer> = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync };
type Length = 'exact' | 'chunked' | 'zero' | 'none';

interface FuzzCase {
  op: ContractOperation;
  url: string;
  contentType?: string;
  contentEncoding?: string;
  /** Whether the body is really compressed with `contentEncoding` (else sent as is). */
  compressed: boolean;
  length: Length;
  body: Body;
}

function fuzzCase(op: ContractOperation, pathValue: fc.Arbitrary<string>, ids: string[]): fc.Arbitrary<FuzzCase> {
  const pathParams = op.path.match(/\{[^}]+\}/g) ?? [];
  const noBody = fc.constant<Body>({ kind: 'none' });
  const body = op.bodySchema
    ? fc.oneof({ weight: 5, arbitrary: mutatedBody(op.bodyExample) }, { weight: 1, arbitrary: noBody })
    : fc.oneof({ weight: 4, arbitrary: noBody }, { weight: 1, arbitrary: mutatedBody({ name: 'x' }) });
  return fc
    .record({
      values: fc.tuple(...pathParams.map(() => pathValue)),
      query: queryString(op, ids),
      // Mostly well-formed headers, so the other parts of the request get looked at too.
      contentType: fc.oneof({ weight: 3, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
      contentEncoding: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_ENCODINGS) }),
      compressed: fc.boolean(),
      length: fc.constantFrom<Length>('exact', 'exact', 'exact', 'exact', 'chunked', 'zero', 'none'),
      body,
    })
    .map(({ values, query, ...rest }) => {
      let i = 0;
      const url = `/api${op.path.replace(/\{[^}]+\}/g, () => values[i++]!)}${query}`;
      // Content-Length 0 and none send no bytes.
      const sendsNothing = rest.length === 'zero' || rest.length === 'none' || (rest.length === 'exact' && rest.body.kind === 'none');
      return { op, url, ...rest, length: sendsNothing && rest.length === 'exact' ? 'none' : rest.length, body: sendsNothing ? { kind: 'none' as const } : rest.body };
    });
}

/** The literal segments of the contract's paths: an id equal to one routes to another operation. */
function literalSegments(ops: ContractOperation[]): Set<string> {
  return new Set(ops.flatMap((op) => op.path.split('/').filter((s) => s && !s.startsWith('{'))));
}

function pathValues(ids: string[], literals: Set<string>): fc.Arbitrary<string> {
  const decoded = (v: string) => {
    try {
      return decodeURIComponent(v);
    } catch {
      return v;
    }
  };
  return fc
    .oneof(
      { weight: 3, arbitrary: fc.constantFrom(...ids) },
      { weight: 2, arbitrary: fc.uuid() },
      { weight: 3, arbitrary: fc.tuple(fc.constantFrom('', 'abc', ids[0]), fc.constantFrom(...BAD_ESCAPES)).map(([s, e]) => s + e) },
      { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).map(encode) },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map(encode) },
      { weight: 1, arbitrary: fc.integer({ min: 37, max: 5000 }).map((n) => 'f'.repeat(n)) },
      { weight: 1, arbitrary: fc.constantFrom(...ODD_FORMATTED.map(encode)) },
      { weight: 1, arbitrary: fc.constantFrom('%00', 'a%00b', '%00%00', '%0D%0A', '%E2%80%AE', '%EF%BB%BF', '%F0%9F%98%80', '%C2%A0') },
      { weight: 1, arbitrary: fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          'null',
          'undefined',
          '0',
          '-1',
          '1e999',
          'NaN',
          'true',
          '%5B%5D',
          '%7B%7D',
          '%2F',
          '..%2F..%2Fetc%2Fpasswd',
          '__proto__',
          'constructor',
          '%20',
          '+',
          '%0A',
          '%00',
          '%3Cscript%3E',
        ),
      },
    )
    .filter((v) => v !== '' && !['.', '..'].includes(decoded(v)) && !literals.has(decoded(v)));
}

/** The cases the issue reported, for every operation, tried first in every run. */
function reportedCases(ops: ContractOperation[], ids: string[]): FuzzCase[] {
  const cases: FuzzCase[] = [];
  const fill = (op: ContractOperation, v: string) => `/api${op.path.replace(/\{[^}]+\}/g, v)}`;
  const bytes = (t: string, label: string): Body => ({ kind: 'bytes', bytes: Buffer.from(t), label });
  const json = { contentType: 'application/json', compressed: false };
  for (const op of ops) {
    if (op.path.includes('{')) cases.push({ op, url: fill(op, '%ZZ'), ...json, length: 'none', body: { kind: 'none' } });
    if (op.path.includes('{')) cases.push({ op, url: fill(op, 'a%ZZ') + '?%ZZ=%ZZ', ...json, length: 'exact', body: bytes(JSON.stringify(op.bodyExample ?? {}), 'example') });
    if (!op.bodySchema) continue;
    const url = fill(op, ids[1]!);
    cases.push({ op, url, ...json, length: 'exact', body: bytes('['.repeat(5000) + ']'.repeat(5000), 'nested 5000 deep') });
    cases.push({ op, url, ...json, length: 'exact', body: bytes('{"a":'.repeat(2000) + '1' + '}'.repeat(2000), 'objects nested 2000 deep') });
    cases.push({ op, url, ...json, contentEncoding: 'gzip', length: 'exact', body: bytes(JSON.stringify(op.bodyExample), 'not gzip') });
    cases.push({ op, url, ...json, length: 'none', body: { kind: 'none' } });
    cases.push({ op, url, ...json, length: 'zero', body: { kind: 'none' } });
    cases.push({ op, url, ...json, length: 'chunked', body: bytes('', 'empty chunked') });
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Checks

const doc = loadContract();
const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
addFormats(ajv);
ajv.addSchema({ $id: 'contract.json', components: doc.components });
const validateError = ajv.compile({ $ref: 'contract.json#/components/schemas/Error' });
const successValidators = new Map<any, ReturnType<typeof ajv.compile>>();
function successValidator(schema: any) {
  let v = successValidators.get(schema);
  if (!v) {
    v = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"contract.json#/components/')));
    successValidators.set(schema, v);
  }
  return v;
}

async function tableNames(db: Db): Promise<string[]> {
  const rows: { name: string }[] = isPostgres(db)
    ? (await db.raw(`select tablename as name from pg_tables where schemaname = current_schema()`)).rows
    : await db.raw(`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`);
  return rows
    .map((r) => r.name)
    .filter((n) => !VOLATILE_TABLES.has(n))
    .sort();
}

/** Row count of every table, as one line ("t1=3 t2=0 ..."). */
async function rowCounts(db: Db, tables: string[]): Promise<string> {
  const sql = `select ${tables.map((t, i) => `(select count(*) from "${t}") as c${i}`).join(', ')}`;
  const res = await db.raw(sql);
  const row = isPostgres(db) ? res.rows[0] : res[0];
  return tables.map((t, i) => `${t}=${row[`c${i}`]}`).join(' ');
}

function countsDiff(before: string, after: string): string {
  const a = before.split(' ');
  return after
    .split(' ')
    .filter((x, i) => x !== a[i])
    .map((x) => `${x} (was ${a.find((y) => y.split('=')[0] === x.split('=')[0])?.split('=')[1]})`)
    .join(', ');
}

const LEAK = /<!doctype|<html|<pre>|\n\s+at \S|\(\/[^)]*:\d+:\d+\)|node_modules|\/src\/|\.ts:\d+/i;

function describeCase(c: FuzzCase): string {
  const body =
    c.body.kind === 'none' ? 'no body' : `${c.body.label}: ${JSON.stringify(c.body.bytes.subarray(0, 120).toString('latin1'))}${c.body.bytes.length > 120 ? `… (${c.body.bytes.length} bytes)` : ''}`;
  const url = c.url.length > 200 ? `${c.url.slice(0, 200)}… (${c.url.length} chars)` : c.url;
  const headers = [
    c.contentType !== undefined && `Content-Type: ${c.contentType}`,
    c.contentEncoding !== undefined && `Content-Encoding: ${c.contentEncoding}${c.compressed ? ' (compressed)' : ''}`,
    `length: ${c.length}`,
  ]
    .filter(Boolean)
    .join('; ');
  return `${c.op.method.toUpperCase()} ${url} [${headers}] ${body}`;
}

// ---------------------------------------------------------------------------------------------

const RUNS = fuzzRuns('api-fuzz');

describe(`Contract fuzzer: no input gets a 5xx (${TEST_DIALECT})`, function () {
  this.timeout(scaled(10 * 60_000));
  let h: Harness;
  let u: TestUser;
  /** Calls the cloud-marketplace operations, which answer a wallet team 409 before anything else. */
  let marketplace: TestUser;
  let agent: supertest.Agent;
  let tables: string[];
  const loggedErrors = new Map<string, string>();

  before(async () => {
    const logger = pino(
      { level: 'error' },
      {
        write(line: string) {
          const rec = JSON.parse(line);
          if (rec.reqId && rec.err) loggedErrors.set(rec.reqId, `${rec.err.type ?? 'Error'}: ${rec.err.message}`);
        },
      },
    );
    h = await createHarness({ rateLimitPerMinute: 1_000_000 }, { logger });
    u = await h.user();
    marketplace = await h.user({ billingType: 'CLOUD_MARKETPLACE' });
    agent = await h.listen();
    tables = await tableNames(h.services.db);
  });
  after(() => h?.close());

  for (const [index, run] of RUNS.entries()) {
    it(`answers every malformed request with a declared 4xx (or a valid success) and the contract body, changes nothing when it rejects, and keeps serving (${describeRun(run)})`, async () => {
      await fuzz(run, index === 0);
    });
  }

  /** One seeded run; the first also sends the cases earlier runs reported. */
  const fuzz = async (run: FuzzRun, withReportedCases: boolean) => {
    const ops = contractOperations({ includePending: true });
    // Real ids (a project, a spare API key, the team, a built-in configuration), so some requests
    // get past the lookups. The key that authenticates the fuzzer is not among them.
    const project = await agent.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: 'fuzz target' });
    assert.equal(project.status, 201, project.text);
    const spare = await h.services.apiKeys.create(u.userId, { name: 'fuzz target', active: false });
    // The installation's first webhook signing key is created by the first read that needs it;
    // created here, so that write is not counted against a rejected request.
    await agent.get('/api/v1/webhooks/public-keys').set('X-API-Key', u.apiKey).expect(200);
    const ids = [project.body.id, spare.key.id, u.teamId, BUILT_IN_CONFIGURATIONS[0]!.id];
    const literals = literalSegments(ops);
    const pathValue = pathValues(ids, literals);
    // Operations with a request body twice as often: they have the most to get wrong.
    const arbitrary = fc
      .oneof({ weight: 1, arbitrary: fc.constantFrom(...ops) }, { weight: 1, arbitrary: fc.constantFrom(...ops.filter((op) => op.bodySchema)) })
      .chain((op) => fuzzCase(op, pathValue, ids));

    const problems = new Map<string, string[]>();
    const fiveXx = new Map<string, number>();
    let tried = 0;
    const problem = (cause: string, c: FuzzCase, detail = '') => {
      const list = problems.get(cause) ?? [];
      list.push(`${describeCase(c)}${detail ? `\n      ${detail}` : ''}`);
      problems.set(cause, list);
    };
    let counts = await rowCounts(h.services.db, tables);

    const send = async (c: FuzzCase): Promise<supertest.Response> => {
      let t: supertest.Test = (agent as any)[c.op.method](c.url);
      if (c.op.path.startsWith('/v1/api-keys')) t = t.set('Authorization', basic(u.email, u.password));
      else t = t.set('X-API-Key', (c.op.path.startsWith('/v2/cloud-marketplace') ? marketplace : u).apiKey);
      if (c.contentType !== undefined) t = t.set('Content-Type', c.contentType);
      if (c.contentEncoding !== undefined) t = t.set('Content-Encoding', c.contentEncoding);
      const compress = c.compressed && c.contentEncoding !== undefined ? COMPRESSORS[c.contentEncoding] : undefined;
      const bytes = c.body.kind === 'bytes' ? (compress ? compress(c.body.bytes) : c.body.bytes) : undefined;
      if (c.length === 'zero') t = t.set('Content-Length', '0');
      if (c.length === 'exact' && bytes) t = t.serialize((x: any) => x).send(bytes);
      // Node frames a body written without a length as chunks only when told to (GET, DELETE).
      if (c.length === 'chunked') t.set('Transfer-Encoding', 'chunked').write(bytes ?? Buffer.alloc(0));
      return await (c.length === 'none' ? withoutBodyFraming(t) : t);
    };

    const check = async (c: FuzzCase) => {
      tried++;
      let res: supertest.Response;
      try {
        res = await send(c);
      } catch (err) {
        problem(`no response: ${(err as Error).message}`, c);
        return;
      }
      const status = String(res.status);
      const code = typeof res.body?.errorCode === 'string' ? res.body.errorCode : undefined;
      if (res.status >= 500) {
        const logged = loggedErrors.get(String(res.headers['x-request-id']));
        const html = /<pre>([^<]*?)(<br>|<\/pre>)/.exec(res.text ?? '')?.[1];
        const cause = `${status} ${code ?? 'non-JSON'}: ${logged ?? html ?? res.text?.slice(0, 100)}`;
        fiveXx.set(cause, (fiveXx.get(cause) ?? 0) + 1);
        problem(`5xx: ${cause}`, c);
      } else if (!(status in c.op.responses)) {
        problem(`${c.op.operationId}: status ${status} ${code ?? ''} is not declared`, c, res.text?.slice(0, 300));
      }
      if (LEAK.test(res.text ?? '')) problem('response shows HTML, a stack or a file path', c, res.text.slice(0, 300));
      if (res.status >= 400) {
        if (!/^application\/json/.test(String(res.headers['content-type']))) problem(`error ${status} is not JSON`, c, String(res.headers['content-type']));
        else if (!validateError(res.body)) problem(`error ${status} ${code}: body is not the contract's Error`, c, ajv.errorsText(validateError.errors));
        else if ((res.body as any).statusCode !== res.status || (res.body as any).requestId !== res.headers['x-request-id']) problem('Error body statusCode/requestId disagree with the response', c);
      } else if (res.status !== 204) {
        const schema = c.op.responses[status]?.content?.['application/json']?.schema;
        const validate = schema && successValidator(schema);
        if (validate && !validate(res.body)) problem(`${c.op.operationId}: ${status} body does not match its schema`, c, ajv.errorsText(validate.errors));
      }
      const after = await rowCounts(h.services.db, tables);
      if (res.status >= 400 && after !== counts) problem(`${c.op.operationId}: rejected with ${status} ${code} but rows changed`, c, countsDiff(counts, after));
      counts = after;
      const health = await agent.get('/healthz');
      if (health.status !== 200 || health.body.status !== 'ok') problem('/healthz stopped answering', c, `${health.status} ${health.text}`);
    };

    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(arbitrary, async (c) => {
        await check(c);
      }),
      {
        seed: run.seed,
        numRuns: run.runs,
        examples: withReportedCases ? reportedCases(ops, ids).map((c) => [c]) : [],
        plugins: run.budgetMs ? [fc.interruptAfterTimeLimit(run.budgetMs)] : [],
      },
    );
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const total5xx = [...fiveXx.values()].reduce((a, b) => a + b, 0);
    const others = [...problems].filter(([cause]) => !cause.startsWith('5xx')).reduce((a, [, l]) => a + l.length, 0);
    console.log(`      fuzz (${TEST_DIALECT}): ${describeRun(run)}, ${tried} requests on ${ops.length} operations in ${seconds} s: ${total5xx} x 5xx, ${others} other violations`);
    for (const [cause, n] of [...fiveXx].sort((a, b) => b[1] - a[1])) console.log(`        ${n} x ${cause}`);
    const report = problemReport(problems);
    assert.equal(problems.size, 0, `the fuzzer found problems (replay: VIDMILL_FUZZ_SEED=${run.seed} VIDMILL_TEST_DB=${TEST_DIALECT} npx mocha test/contract/fuzz.test.ts):\n${report}`);
  };
});
