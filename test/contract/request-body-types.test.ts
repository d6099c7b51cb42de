/**
 * The generated request types accept every valid body: for each operation with a request body,
 * its minimal body (only the required fields, at every depth, valued from the contract's example)
 * must compile against `operations[id]['requestBody']` of generated/api.ts (the SDK's types are
 * the same file). openapi-typescript made request fields with a default required unless told
 * otherwise (`defaultNonNullable`), so `POST /v1/webhooks` without `rateLimitPerSecond` did not
 * compile although the server answers 201.
 */
import { strict as assert } from 'node:assert';
import path from 'node:path';
import ts from 'typescript';
import { contractOperations, resolveRef } from '../helpers/contract-operations';
import { scaled } from '../helpers/timeouts';

/** `example` cut down to what `schema` requires (objects keep their required properties, recursively). */
function minimal(schema: any, example: unknown): unknown {
  const s = resolveRef(schema);
  if (!s || example === null || typeof example !== 'object') return example;
  if (Array.isArray(example)) return example.map((item) => minimal(s.items, item));
  const parts = [s, ...(s.allOf ?? []).map((x: any) => resolveRef(x))];
  const required = new Set<string>(parts.flatMap((p: any) => p.required ?? []));
  const properties = Object.assign({}, ...parts.map((p: any) => p.properties ?? {}));
  if (!Object.keys(properties).length) return example; // a map or a free object: as in the example
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(example as Record<string, unknown>)) if (required.has(key)) out[key] = minimal(properties[key], value);
  return out;
}

describe('Generated request types (generated/api.ts, the SDK)', function () {
  this.timeout(scaled(60_000));

  it('the minimal body of every operation (required fields only) compiles against its request type', () => {
    const bodies = contractOperations({ includePending: true }).filter((op) => op.bodySchema && op.bodyExample !== undefined);
    assert.ok(bodies.length >= 20, `only ${bodies.length} operations with a body`);
    const dir = path.resolve(__dirname);
    const file = path.join(dir, '__minimal-request-bodies.ts');
    const source = [
      `import type { operations } from '../../generated/api';`,
      `type Body<Id extends keyof operations> = operations[Id] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;`,
      ...bodies.map((op, i) => `export const body${i}: Body<'${op.operationId}'> = ${JSON.stringify(minimal(op.bodySchema, op.bodyExample))};`),
    ].join('\n');
    const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, skipLibCheck: true, types: [] };
    const host = ts.createCompilerHost(options);
    const read = host.readFile.bind(host);
    const getSourceFile = host.getSourceFile.bind(host);
    host.readFile = (f) => (path.resolve(f) === file ? source : read(f));
    host.fileExists = (f) => path.resolve(f) === file || ts.sys.fileExists(f);
    host.getSourceFile = (f, v, ...rest) => (path.resolve(f) === file ? ts.createSourceFile(f, source, v) : getSourceFile(f, v, ...rest));
    const program = ts.createProgram([file], options, host);
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file && path.resolve(d.file.fileName) === file)
      .map((d) => {
        const line = d.file!.getLineAndCharacterOfPosition(d.start ?? 0).line;
        return `${bodies[line - 2]?.operationId ?? `line ${line}`}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
      });
    assert.deepEqual(problems, []);
  });
});
