/**
 * Run-time patch of express-openapi-validator (5.x): memory of the contract validator.
 *
 * When the validator is prepared (src/http/app.ts: on the first API request), its
 * `SchemaPreprocessor` walks the whole document and resolves each `$ref` it meets (about a
 * thousand in the contract) with `ajv.getSchema(ref).schema` (`resolveSchema` in its
 * middlewares/parsers/schema.preprocessor.js). `getSchema` compiles the referenced schema, and
 * every schema it refers to, into a validation function, only for the preprocessor to take back
 * the schema object it had added to ajv: 160 of the 162 component schemas are compiled in an ajv
 * instance that otherwise only validates the few discriminated schemas. Measured on the contract (a process building the validator
 * and answering one request): that step took the process from 85 to 121 MB RSS and left 24 MB
 * more V8 heap in use; with this patch it adds 5 MB, and the heap in use after the first request
 * is 26 MB instead of 52 MB. Peak RSS of `npm run bench -- uploads` is in docs/operations.md.
 *
 * `installOpenApiValidatorRefResolution()` replaces `resolveSchema` so that a local reference
 * (`#/...`) is looked up by its JSON pointer in the preprocessor's document: the object ajv gives
 * back is the one it was added as (`createAjv` adds `components.schemas[id]` of the same
 * document under `#/components/schemas/<id>`), and for any other local reference the original
 * itself falls back to the same lookup; a test compares both for every reference of the contract.
 * The preprocessor's cache of resolved references is kept. A reference the pointer does not find,
 * or one that is not local, goes to the original. The discriminator validators the preprocessor
 * compiles (and what they refer to), and the request and response validators, which compile their
 * own schemas per route on first use, are unchanged.
 *
 * What it relies on (test/unit/openapi-validator-ref-resolution.test.ts fails when an upgrade
 * breaks it): `SchemaPreprocessor.prototype.resolveSchema(schema)` resolving through
 * `this.ajv.getSchema`, with `this.apiDoc` and `this.resolvedSchemaCache` (a Map by reference).
 * Installing throws when the class or the method is gone.
 */
import { createRequire } from 'node:module';
import { patchDisabled } from '../shared/dependency-patches';

interface Preprocessor {
  apiDoc: unknown;
  resolvedSchemaCache: Map<string, unknown>;
}
type ResolveSchema = (this: Preprocessor, schema: unknown) => unknown;
interface PreprocessorClass {
  prototype: { resolveSchema: ResolveSchema; [INSTALLED]?: ResolveSchema };
}

const INSTALLED = Symbol.for('vidmill.openapiRefResolution');

/** express-openapi-validator's SchemaPreprocessor class (the module instance the validator uses). */
export function validatorSchemaPreprocessor(): PreprocessorClass {
  const load = createRequire(require.resolve('express-openapi-validator'));
  return (load('./middlewares/parsers/schema.preprocessor') as { SchemaPreprocessor: PreprocessorClass }).SchemaPreprocessor;
}

/** The value at a local reference (`#/a/b~1c`) of `doc`, or undefined. */
export function resolveLocalRef(doc: unknown, ref: string): unknown {
  if (ref === '#') return doc;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = doc;
  for (const token of ref.slice(2).split('/')) {
    let key: string;
    try {
      key = decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return undefined;
    }
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

export function installOpenApiValidatorRefResolution(): void {
  if (patchDisabled('openapi-validator-ref-resolution')) return;
  const proto = validatorSchemaPreprocessor()?.prototype;
  if (proto?.[INSTALLED]) return;
  const original = proto?.resolveSchema;
  if (typeof original !== 'function') {
    throw new Error(
      'openapi-validator-ref-resolution: express-openapi-validator has no SchemaPreprocessor.prototype.resolveSchema (dependency upgraded? see src/http/openapi-validator-ref-resolution.ts)',
    );
  }
  proto.resolveSchema = function resolveSchema(this: Preprocessor, schema: unknown): unknown {
    const ref = schema !== null && typeof schema === 'object' ? (schema as { $ref?: unknown }).$ref : undefined;
    if (typeof ref !== 'string' || !(this.resolvedSchemaCache instanceof Map)) return original.call(this, schema);
    if (this.resolvedSchemaCache.has(ref)) return this.resolvedSchemaCache.get(ref);
    const found = resolveLocalRef(this.apiDoc, ref);
    if (found === undefined || found === null || typeof found !== 'object') return original.call(this, schema);
    this.resolvedSchemaCache.set(ref, found);
    return found;
  };
  proto[INSTALLED] = original;
}
