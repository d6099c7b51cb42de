// test-databases: one
// (SQLite only: its subject is the validator's $ref resolution.)
import { strict as assert } from 'node:assert';
import { loadContract } from '../../src/composition';
import { installOpenApiValidatorRefResolution, resolveLocalRef, validatorSchemaPreprocessor } from '../../src/http/openapi-validator-ref-resolution';
import { createHarness } from '../helpers/harness';

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
};

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

/** The schema environments the preprocessor's ajv compiled (ajv sets `validate` on compiling). */
function compiledSchemas(preprocessor: any): string[] {
  return Object.entries(preprocessor.ajv.schemas as Record<string, { validate?: unknown }>)
    .filter(([, env]) => typeof env?.validate === 'function')
    .map(([key]) => key);
}

describe('openapi-validator-ref-resolution (run-time patch of express-openapi-validator preprocessing)', () => {
  const SchemaPreprocessor = validatorSchemaPreprocessor() as any;
  const original = SchemaPreprocessor.prototype[Symbol.for('vidmill.openapiRefResolution')] ?? SchemaPreprocessor.prototype.resolveSchema;

  before(() => installOpenApiValidatorRefResolution());

  it('the internals it relies on are still there (fails when an upgrade of express-openapi-validator breaks the patch)', () => {
    assert.equal(typeof original, 'function', 'SchemaPreprocessor.prototype.resolveSchema is gone');
    assert.match(String(original), /this\.ajv\.getSchema\(ref\)/, 'resolveSchema no longer resolves through ajv.getSchema');
    assert.match(String(original), /this\.resolvedSchemaCache/, 'resolveSchema no longer caches in resolvedSchemaCache');
    const sp = new SchemaPreprocessor(structuredClone(loadContract()), PREPROCESSOR_OPTIONS, undefined);
    assert.ok(sp.resolvedSchemaCache instanceof Map && sp.apiDoc && typeof sp.ajv.getSchema === 'function', 'the preprocessor has no apiDoc, ajv or resolvedSchemaCache');
    assert.notEqual(SchemaPreprocessor.prototype.resolveSchema, original, 'not installed');
  });

  it('resolves every reference of the contract to the object the original resolves it to', () => {
    const doc = structuredClone(loadContract());
    const refs = [...refsOf(doc)];
    assert.ok(refs.length > 100, `${refs.length} references`);
    const byOriginal = new SchemaPreprocessor(doc, PREPROCESSOR_OPTIONS, undefined);
    const patched = new SchemaPreprocessor(doc, PREPROCESSOR_OPTIONS, undefined);
    for (const ref of refs) {
      const expected = original.call(byOriginal, { $ref: ref });
      assert.ok(expected && typeof expected === 'object', ref);
      assert.equal(patched.resolveSchema({ $ref: ref }), expected, ref);
      assert.equal(patched.resolveSchema({ $ref: ref }), expected, `${ref} (cached)`);
    }
    const plain = { type: 'string' };
    assert.equal(patched.resolveSchema(plain), plain);
    assert.equal(patched.resolveSchema(undefined), null);
  });

  it('preprocessing the contract compiles only what its discriminator validators use (the original compiles every referenced schema)', () => {
    const doc = loadContract();
    const components = Object.keys(doc.components?.schemas ?? {}).length;
    const withPatch = new SchemaPreprocessor(structuredClone(doc), PREPROCESSOR_OPTIONS, { removeAdditional: false });
    withPatch.preProcess();
    const unpatched = new SchemaPreprocessor(structuredClone(doc), PREPROCESSOR_OPTIONS, { removeAdditional: false });
    unpatched.resolveSchema = original;
    unpatched.preProcess();
    const byOriginal = compiledSchemas(unpatched);
    const byPatched = compiledSchemas(withPatch);
    assert.ok(byOriginal.length > components * 0.9, `${byOriginal.length} compiled by the original, ${components} component schemas`);
    // What remains is compiled by the validator's discriminator handling (ajv.compile of each option), not by resolving.
    assert.ok(byPatched.length < components / 4, `${byPatched.length} compiled with the patch`);
    for (const key of byPatched) assert.ok(byOriginal.includes(key), `${key} compiled with the patch only`);
  });

  it('JSON pointers: escapes, percent-encoding, missing and non-local references', () => {
    const doc = { a: { 'b/c': { 'd~e': 1 }, 'x y': 2 }, arr: [{ v: 3 }] };
    assert.equal(resolveLocalRef(doc, '#/a/b~1c/d~0e'), 1);
    assert.equal(resolveLocalRef(doc, '#/a/x%20y'), 2);
    assert.equal(resolveLocalRef(doc, '#/arr/0/v'), 3);
    assert.equal(resolveLocalRef(doc, '#'), doc);
    assert.equal(resolveLocalRef(doc, '#/a/missing'), undefined);
    assert.equal(resolveLocalRef(doc, '#/a/%E0%A4%A'), undefined);
    assert.equal(resolveLocalRef(doc, '#/toString'), undefined, 'own properties only');
    assert.equal(resolveLocalRef(doc, 'other.yaml#/a'), undefined);
  });

  it('the app still validates requests against the contract with the patch installed', async () => {
    const h = await createHarness();
    try {
      const u = await h.user();
      const bad = await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: 42 });
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
      assert.ok(Array.isArray(bad.body.validationErrors) && bad.body.validationErrors.length > 0, JSON.stringify(bad.body));
      assert.equal((await h.request.get('/api/v1/projects').set('X-API-Key', u.apiKey)).status, 200);
    } finally {
      await h.close();
    }
  });

  it('installing twice keeps the first installation', () => {
    const first = SchemaPreprocessor.prototype.resolveSchema;
    installOpenApiValidatorRefResolution();
    assert.equal(SchemaPreprocessor.prototype.resolveSchema, first);
  });
});
