// test-databases: one
// (SQLite only: its subject is the installed dependencies.)
/**
 * The declared patches of dependencies (patches/, applied by patch-package at install; issue 28):
 * each one is applied to the installed package, and what it changes still holds. No module in src
 * changes a dependency at run time (the ESLint rule in eslint.config.mjs).
 */
import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import knex from 'knex';
import { loadContract } from '../../src/composition';
import { createHarness } from '../helpers/harness';

const ROOT = path.resolve(__dirname, '..', '..');
const PATCHES = path.join(ROOT, 'patches');

/** Per file of a patch: the lines it adds. */
function addedLines(patch: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let file: string | undefined;
  for (const line of patch.split('\n')) {
    const header = /^\+\+\+ b\/(.+)$/.exec(line);
    if (header) {
      file = header[1]!;
      out.set(file, []);
    } else if (file && line.startsWith('+') && line.trim() !== '+') out.get(file)!.push(line.slice(1));
  }
  return out;
}

/** Every `$ref` string in the document. */
function refsOf(node: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) node.forEach((n) => refsOf(n, out));
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.add(v);
      else refsOf(v, out);
    }
  }
  return out;
}

/** The value at a local reference (`#/a/b`) of `doc`. */
function atPointer(doc: unknown, ref: string): unknown {
  return ref
    .slice(2)
    .split('/')
    .map((t) => decodeURIComponent(t).replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<any>((node, key) => node?.[key], doc);
}

/** Options the validator gives its SchemaPreprocessor (AjvOptions.preprocessor), as the app configures it. */
const PREPROCESSOR_OPTIONS = {
  strict: false,
  strictNumbers: true,
  strictTuples: true,
  allowUnionTypes: false,
  validateSchema: false,
  useDefaults: true,
  formats: {},
  serDesMap: {},
  validateFormats: true,
  // The validator proper adds ajv-formats' formats (uri, email, ...) to its instances; this bare
  // preprocessor's ajv lacks them and would print "unknown format ... ignored" for each use (384
  // lines in a CI log). What the tests check, reference resolution, does not depend on formats.
  logger: false,
};

/** The schema environments an ajv instance compiled (ajv sets `validate` on compiling). */
function compiledSchemas(ajv: any): string[] {
  return Object.entries(ajv.schemas as Record<string, { validate?: unknown }>)
    .filter(([, env]) => typeof env?.validate === 'function')
    .map(([key]) => key);
}

describe('declared patches of dependencies (patches/, patch-package)', () => {
  const patchFiles = readdirSync(PATCHES).filter((f) => f.endsWith('.patch'));

  it('every patch is applied to the installed package, for the version it was made for', () => {
    assert.ok(patchFiles.length > 0);
    const readme = readFileSync(path.join(PATCHES, 'README.md'), 'utf8');
    for (const file of patchFiles) {
      // <name>+<version>.patch, a scope's slash written as '+': @tus+server+2.4.5.patch
      const m = /^(.+)\+([^+]+)\.patch$/.exec(file);
      assert.ok(m, file);
      const name = m[1]!.replace(/^@([^+]+)\+/, '@$1/');
      const installed = JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
      assert.equal(installed, m[2], `${file}: ${name} ${installed} is installed; make the patch again for it or drop it`);
      assert.ok(readme.includes(`\`${file}\``), `${file} is not described (with its upstream issue) in patches/README.md`);
      for (const [target, lines] of addedLines(readFileSync(path.join(PATCHES, file), 'utf8'))) {
        const text = readFileSync(path.join(ROOT, target), 'utf8');
        for (const line of lines) assert.ok(text.includes(line), `${file} is not applied to ${target} (run npm install, or npx patch-package): missing ${line.trim()}`);
      }
    }
  });

  it('package.json applies them at install and fails loudly when one does not apply', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    assert.match(pkg.scripts.postinstall, /^patch-package\b.*--error-on-fail/);
    assert.match(pkg.scripts.postinstall, /--error-on-warn/);
    assert.ok(pkg.dependencies['patch-package'], 'patch-package is a dependency: an install without dev dependencies applies the patches too');
  });

  describe('express-openapi-validator: $ref resolution of the schema preprocessor', () => {
    // The installed (patched) preprocessor: a test may reach a dependency's internals, src may not.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an internal file, by its path
    const { SchemaPreprocessor } = require(path.join(path.dirname(require.resolve('express-openapi-validator')), 'middlewares', 'parsers', 'schema.preprocessor')) as {
      SchemaPreprocessor: any;
    };

    it("resolves every reference of the contract to the object ajv's getSchema resolves it to", () => {
      const doc = structuredClone(loadContract());
      const refs = [...refsOf(doc)];
      assert.ok(refs.length > 100, `${refs.length} references`);
      const sp = new SchemaPreprocessor(doc, PREPROCESSOR_OPTIONS, undefined);
      const reference = new SchemaPreprocessor(doc, PREPROCESSOR_OPTIONS, undefined);
      for (const ref of refs) {
        // What the original resolveSchema gives: ajv's schema object, else the object at the path.
        const expected = reference.ajv.getSchema(ref)?.schema ?? atPointer(doc, ref);
        assert.ok(expected && typeof expected === 'object', ref);
        assert.equal(sp.resolveSchema({ $ref: ref }), expected, ref);
        assert.equal(sp.resolveSchema({ $ref: ref }), expected, `${ref} (cached)`);
      }
      const plain = { type: 'string' };
      assert.equal(sp.resolveSchema(plain), plain);
      assert.equal(sp.resolveSchema(undefined), null);
    });

    it('preprocessing the contract compiles only what its discriminator validators use, not every referenced schema', () => {
      const doc = loadContract();
      const components = Object.keys(doc.components?.schemas ?? {}).length;
      const sp = new SchemaPreprocessor(structuredClone(doc), PREPROCESSOR_OPTIONS, { removeAdditional: false });
      sp.preProcess();
      const compiled = compiledSchemas(sp.ajv);
      assert.ok(compiled.length < components / 4, `${compiled.length} of ${components} component schemas compiled`);
    });
  });

  it("knex's better-sqlite3 client prepares a statement once per connection and SQL text, and still answers each run with its own bindings, errors and safeIntegers", async () => {
    const db = knex({ client: 'better-sqlite3', connection: { filename: ':memory:' }, useNullAsDefault: true, pool: { min: 1, max: 1 } });
    try {
      await db.schema.createTable('t', (t) => {
        t.integer('id').primary();
        t.bigInteger('n');
      });
      const conn = await db.client.acquireConnection();
      const prepare = conn.prepare.bind(conn);
      const prepared: string[] = [];
      conn.prepare = (sql: string) => (prepared.push(sql), prepare(sql));
      await db.client.releaseConnection(conn);
      for (let id = 1; id <= 3; id++) await db('t').insert({ id, n: id * 10 });
      await assert.rejects(db('t').insert({ id: 1, n: 0 }), /UNIQUE constraint failed/, 'a cached statement still fails on its own run');
      assert.deepEqual(await db('t').where({ id: 2 }).select('n'), [{ n: 20 }]);
      assert.deepEqual(await db('t').where({ id: 3 }).select('n'), [{ n: 30 }]);
      assert.deepEqual(await db('t').where({ id: 3 }).select('n').options({ safeIntegers: true }), [{ n: 30n }]);
      assert.deepEqual(await db('t').where({ id: 3 }).select('n'), [{ n: 30 }], 'safeIntegers does not stick to the cached statement');
      await db.raw('explain query plan select * from t where id = ?', [1]);
      await db.raw('explain query plan select * from t where id = ?', [1]);
      const count = (sql: string) => prepared.filter((x) => x === sql).length;
      assert.equal(count('insert into `t` (`id`, `n`) values (?, ?)'), 1, prepared.join('\n'));
      assert.equal(count('select `n` from `t` where `id` = ?'), 2, 'once cached, once with safeIntegers');
      assert.equal(count('explain query plan select * from t where id = ?'), 2, 'EXPLAIN is prepared each time');
    } finally {
      await db.destroy();
    }
  });

  it('the app validates and routes requests with the patched validator (literal routes before templated ones)', async () => {
    const h = await createHarness();
    try {
      const u = await h.user();
      const bad = await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: 42 });
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
      assert.ok(Array.isArray(bad.body.validationErrors) && bad.body.validationErrors.length > 0, JSON.stringify(bad.body));
      // The same routes many times: the cached matchers answer as the first compilation did.
      for (let i = 0; i < 3; i++) {
        assert.equal((await h.request.get('/api/v1/projects').set('X-API-Key', u.apiKey)).status, 200);
        assert.equal((await h.request.get('/api/v1/projects/default').set('X-API-Key', u.apiKey)).status, 200);
        assert.equal((await h.request.get('/api/v1/webhooks/public-keys/jwks').set('X-API-Key', u.apiKey)).status, 200);
        const missing = await h.request.get('/api/v1/projects/00000000-0000-4000-8000-000000000000').set('X-API-Key', u.apiKey);
        assert.equal(missing.status, 404, JSON.stringify(missing.body));
        assert.equal((await h.request.get('/API/V1/PROJECTS').set('X-API-Key', u.apiKey)).status, 200, 'case-insensitive routing, as Express');
      }
    } finally {
      await h.close();
    }
  });
});
