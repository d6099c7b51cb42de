/**
 * One strict reading of every integer parameter of the contract (query, path and header), before
 * the validator sees the request. express-openapi-validator turns a parameter's text into a
 * number with JavaScript's `Number`, so `1e999` (Infinity), `1e2`, `0x10`, `-0` or ` 7 ` would
 * pass as integers and reach a handler or the database. Here an integer parameter must be written
 * as decimal digits, with a minus sign only where its minimum allows negative values, without
 * leading zeros, once, and within its minimum and maximum (its format's range when it has none:
 * int32, int64 as far as JavaScript holds integers exactly). Anything else is
 * `400 VALIDATION_ERROR` naming the parameter. Driven by the contract, so no operation can forget it.
 */
import type { RequestHandler } from 'express';
import type { ValidationIssue } from '../shared/errors';
import { BadRequestError } from '../shared/errors';
import { echoText } from '../shared/echoed-value';
import { HTTP_METHODS } from './operations';

interface IntegerParameter {
  in: 'query' | 'path' | 'header';
  name: string;
  min: bigint;
  max: bigint;
}

const FORMAT_RANGE: Record<string, [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
};
const SAFE: [bigint, bigint] = [BigInt(Number.MIN_SAFE_INTEGER), BigInt(Number.MAX_SAFE_INTEGER)];

export type Json = Record<string, unknown>;

/** Follows document-internal `$ref`s of `node` in the bundled contract `doc`. */
export function resolve(doc: Json, node: unknown): Json {
  let cur = node as Json;
  for (let hops = 0; typeof cur?.$ref === 'string' && hops < 10; hops++) {
    cur = String(cur.$ref)
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((o, k) => (o as Json | undefined)?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc) as Json;
  }
  return cur;
}

function isInteger(schema: Json): boolean {
  return schema.type === 'integer' || (Array.isArray(schema.type) && schema.type.includes('integer'));
}

/** The integer parameters of every operation of `contract`, by operationId. */
export function integerParametersOf(contract: unknown): Map<string, IntegerParameter[]> {
  const doc = contract as Json;
  const out = new Map<string, IntegerParameter[]>();
  for (const item of Object.values((doc.paths ?? {}) as Record<string, Json>)) {
    for (const method of HTTP_METHODS) {
      const op = item[method] as Json | undefined;
      if (!op?.operationId) continue;
      const params = [...((item.parameters as unknown[]) ?? []), ...((op.parameters as unknown[]) ?? [])].map((p) => resolve(doc, p));
      const integers: IntegerParameter[] = [];
      for (const p of params) {
        const schema = p.schema ? resolve(doc, p.schema) : undefined;
        if (!schema || !isInteger(schema) || !['query', 'path', 'header'].includes(String(p.in))) continue;
        const [fmin, fmax] = FORMAT_RANGE[String(schema.format)] ?? SAFE;
        const bound = (v: unknown, fallback: bigint, pick: (a: bigint, b: bigint) => bigint) => (typeof v === 'number' && Number.isFinite(v) ? pick(BigInt(Math.trunc(v)), fallback) : fallback);
        integers.push({
          in: p.in as IntegerParameter['in'],
          name: String(p.name),
          min: bound(schema.minimum, fmin, (a, b) => (a > b ? a : b)),
          max: bound(schema.maximum, fmax, (a, b) => (a < b ? a : b)),
        });
      }
      if (integers.length) out.set(op.operationId as string, integers);
    }
  }
  return out;
}

/** Why `raw` is not an integer `p` accepts, or undefined when it is one. */
export function integerProblem(p: Pick<IntegerParameter, 'min' | 'max'>, raw: string): string | undefined {
  const range = `an integer from ${p.min} to ${p.max}`;
  const signed = p.min < 0n;
  if (!(signed ? /^(0|-?[1-9]\d*)$/ : /^(0|[1-9]\d*)$/).test(raw)) {
    return `must be ${range}, written as decimal digits${signed ? ' (a minus sign allowed)' : ''} without leading zeros, exponent or spaces`;
  }
  const n = BigInt(raw);
  return n < p.min || n > p.max ? `must be ${range}` : undefined;
}

/** The middleware: runs where the validator has resolved the operation (`req.openapi`) and validated nothing yet. */
export function strictIntegerParameters(contract: unknown): RequestHandler {
  const byOperation = integerParametersOf(contract);
  return (req, _res, next) => {
    const params = byOperation.get(String(req.openapi?.schema.operationId));
    if (!params) return next();
    const issues: ValidationIssue[] = [];
    for (const p of params) {
      const raw =
        p.in === 'query'
          ? (req.query as Record<string, unknown>)[p.name]
          : p.in === 'path'
            ? (req.openapi?.pathParams as Record<string, unknown> | undefined)?.[p.name]
            : req.headers[p.name.toLowerCase()];
      if (raw === undefined) continue;
      const field = `${p.in}.${p.name}`;
      if (typeof raw !== 'string') {
        issues.push({ field, message: `${p.name} must be given once, as ${p.min < 0n ? 'an' : 'a non-negative'} integer` });
        continue;
      }
      const problem = integerProblem(p, raw);
      if (problem) issues.push({ field, value: echoText(raw), message: `${p.name} ${problem}` });
    }
    if (!issues.length) return next();
    next(new BadRequestError('VALIDATION_ERROR', `Request validation failed: ${issues.map((i) => i.message).join('; ')}`, { validationErrors: issues }));
  };
}
