/**
 * Builds the single OpenAPI document from the hand-written files under openapi/:
 * the root (openapi.yaml) plus one partial document per tag (openapi/paths/*.yaml).
 * Partials may hold `paths`, `webhooks` and `components`; a name defined twice is an error.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export const OPENAPI_DIR = path.resolve(__dirname, '..', 'openapi');
export const REPOSITORY_ROOT = path.resolve(__dirname, '..');
export const GENERATED_DIR = path.join(REPOSITORY_ROOT, 'generated');

const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

type Json = Record<string, any>;

function readYaml(file: string): Json {
  return YAML.parse(readFileSync(file, 'utf8'), { merge: true, maxAliasCount: -1 }) ?? {};
}

function mergeSection(target: Json, source: Json | undefined, where: string): void {
  for (const [key, value] of Object.entries(source ?? {})) {
    if (key in target) throw new Error(`${where}: "${key}" is defined twice`);
    target[key] = value;
  }
}

/** Every operation of `doc.paths` with its path. */
function operationsOf(doc: Json): { path: string; op: Json }[] {
  const ops: { path: string; op: Json }[] = [];
  for (const [p, item] of Object.entries<Json>(doc.paths)) {
    for (const method of METHODS) if (item[method]) ops.push({ path: p, op: item[method] });
  }
  return ops;
}

/**
 * X-Request-Id (required) on every response the server sends: each operation's own responses
 * and the shared ones in components/responses. The `webhooks` (requests Vidmill sends) are not
 * responses of this server and are left alone.
 */
function declareRequestIdHeader(doc: Json): void {
  const ownResponses = operationsOf(doc).flatMap(({ op }) => Object.values<Json>(op.responses ?? {}).filter((r) => !r.$ref));
  for (const response of [...ownResponses, ...Object.values<Json>(doc.components.responses ?? {})]) {
    response.headers = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' }, ...response.headers };
  }
}

/**
 * 413 and 415 on every operation: the JSON parser reads the body of any request that carries
 * one, whatever the operation, so a body over the size limit is 413 and one in an unsupported
 * charset or content encoding 415 even on a GET; on operations that take a body, a body that
 * is not JSON is 415 too. Statuses are kept in ascending order.
 */
function declareBodyErrors(doc: Json): void {
  const shared: Record<string, string> = { '413': 'PayloadTooLarge', '415': 'UnsupportedMediaType' };
  for (const { op } of operationsOf(doc)) {
    for (const [status, name] of Object.entries(shared)) op.responses[status] ??= { $ref: `#/components/responses/${name}` };
    op.responses = Object.fromEntries(Object.entries<Json>(op.responses).sort(([a], [b]) => a.localeCompare(b)));
  }
}

/**
 * The rate-limit headers on every response of every rate-limited operation (all but API key
 * management) that the limiter has counted, which is every response except 401 (authentication
 * answers before the limiter; there is no key to count). Required everywhere but on 500, which
 * an unexpected failure before the count (e.g. while authenticating) sends without them. A
 * shared response gets a `RateLimited<Name>` copy carrying the headers, since the same shared
 * response also serves the operations that are not limited.
 */
function declareRateLimitHeaders(doc: Json): void {
  const refs = (required: boolean) =>
    Object.fromEntries(
      RATE_LIMIT_HEADERS.map((h) => [
        h,
        required
          ? { $ref: `#/components/headers/${h}` }
          : { ...doc.components.headers[h], required: false, description: `${doc.components.headers[h].description} Absent when the request failed before it was counted.` },
      ]),
    );
  const withHeaders = (response: Json, status: string) => ({ ...response, headers: { ...response.headers, ...refs(status !== '500') } });
  const declaresAll = (response: Json) => RATE_LIMIT_HEADERS.every((h) => response.headers?.[h]);
  for (const { path: p, op } of operationsOf(doc)) {
    if (p.startsWith('/v1/api-keys')) continue; // API key management is not rate limited
    for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
      if (status === '401') continue;
      if (!response.$ref) {
        op.responses[status] = withHeaders(response, status);
        continue;
      }
      const name = response.$ref.split('/').pop() as string;
      const shared = doc.components.responses[name];
      if (declaresAll(shared)) continue;
      const limited = `RateLimited${name}`;
      doc.components.responses[limited] ??= withHeaders(shared, status);
      op.responses[status] = { $ref: `#/components/responses/${limited}` };
    }
  }
}

/**
 * Every POST accepts `Idempotency-Key` (src/http/idempotency.ts): the shared parameter, its
 * 409 (key in use) and 422 (key reused) answers where the operation has none of that status,
 * and `Idempotent-Replayed` on its success responses.
 */
function declareIdempotency(doc: Json): void {
  const parameter = { $ref: '#/components/parameters/IdempotencyKey' };
  for (const item of Object.values<Json>(doc.paths)) {
    const op = item.post;
    if (!op) continue;
    op.parameters = [...(op.parameters ?? []), parameter];
    op.responses['409'] ??= { $ref: '#/components/responses/IdempotencyKeyInUse' };
    op.responses['422'] ??= { $ref: '#/components/responses/IdempotencyKeyReused' };
    for (const [status, response] of Object.entries<Json>(op.responses)) {
      if (!status.startsWith('2') || response.$ref) continue;
      response.headers ??= {};
      response.headers['Idempotent-Replayed'] ??= { $ref: '#/components/headers/Idempotent-Replayed' };
    }
  }
}

export function buildContract(): Json {
  const doc = readYaml(path.join(OPENAPI_DIR, 'openapi.yaml'));
  doc.paths ??= {};
  doc.components ??= {};
  const dir = path.join(OPENAPI_DIR, 'paths');
  for (const name of readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    const part = readYaml(path.join(dir, name));
    mergeSection(doc.paths, part.paths, `${name} paths`);
    if (part.webhooks) mergeSection((doc.webhooks ??= {}), part.webhooks, `${name} webhooks`);
    for (const [kind, entries] of Object.entries<Json>(part.components ?? {})) {
      mergeSection((doc.components[kind] ??= {}), entries, `${name} components.${kind}`);
    }
  }
  // Idempotency first: its 409/422 responses then get X-Request-Id and the rate-limit headers.
  declareIdempotency(doc);
  declareRequestIdHeader(doc);
  declareBodyErrors(doc);
  declareRateLimitHeaders(doc);
  return doc;
}

export async function renderTypes(doc: Json): Promise<string> {
  const { default: openapiTS, astToString } = await import('openapi-typescript');
  // defaultNonNullable off: a request field with a default stays optional (a client may leave it
  // out, the server fills it in); a response field is required where its schema says so.
  const ast = await openapiTS(structuredClone(doc) as any, { alphabetize: false, defaultNonNullable: false });
  return '/* Generated by `npm run generate` from openapi/ with openapi-typescript. Do not edit. */\n' + astToString(ast);
}

/**
 * Every generated file by its path from the repository root: the bundled contract and its types
 * for the service, and the same types for the SDK package (sdk/ is published on its own, so it
 * carries its own copy).
 */
export async function renderGenerated(): Promise<Record<string, string>> {
  const doc = buildContract();
  const types = await renderTypes(doc);
  return {
    'generated/openapi.json': JSON.stringify(doc, null, 2) + '\n',
    'generated/api.ts': types,
    'sdk/src/generated/api.ts': types,
  };
}
