/**
 * Body limits with an errorCode of their own. A property of a request body's schema may carry
 * `x-vidmill-maximum-error-code` next to its `maximum` (the upload `size`: `maximum` 500 GB,
 * `VIDEO_TOO_LARGE`): the limit is declared in the contract, so generated validators, Prism and
 * the mock know it, and a value over it is answered with that code instead of the generic
 * `VALIDATION_ERROR`. The check runs before request validation (as the integer parameters do),
 * on the server (src/http/app.ts) and in the mock (scripts/mock-server.ts), from the same reading
 * of the contract. Only the body's own properties (top level) carry the extension.
 */
import type { RequestHandler } from 'express';
import { BadRequestError } from '../shared/errors';
import { resolve, type Json } from './integer-parameters';
import { contractOperationObjects } from './operations';

export const MAXIMUM_ERROR_CODE_EXTENSION = 'x-vidmill-maximum-error-code';

export interface BodyMaximum {
  property: string;
  maximum: number;
  errorCode: string;
}

/** The body properties with a maximum of their own errorCode, by operationId. */
export function bodyMaximumsOf(contract: unknown): Map<string, BodyMaximum[]> {
  const doc = contract as Json;
  const out = new Map<string, BodyMaximum[]>();
  for (const op of contractOperationObjects(contract)) {
    const content = (resolve(doc, op.requestBody)?.content ?? {}) as Record<string, Json>;
    const schema = resolve(doc, content['application/json']?.schema);
    const limits: BodyMaximum[] = [];
    for (const [property, node] of Object.entries((schema?.properties ?? {}) as Record<string, unknown>)) {
      const p = resolve(doc, node);
      const errorCode = p?.[MAXIMUM_ERROR_CODE_EXTENSION];
      if (typeof errorCode !== 'string') continue;
      if (typeof p.maximum !== 'number') throw new Error(`${op.operationId}: body.${property} has ${MAXIMUM_ERROR_CODE_EXTENSION} without a maximum`);
      limits.push({ property, maximum: p.maximum, errorCode });
    }
    if (limits.length) out.set(op.operationId, limits);
  }
  return out;
}

/** The error for the first property of `body` over its maximum, or undefined. */
export function bodyMaximumError(limits: BodyMaximum[] | undefined, body: unknown): BadRequestError | undefined {
  if (!limits || body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  for (const limit of limits) {
    const value = (body as Record<string, unknown>)[limit.property];
    if (typeof value !== 'number' || !(value > limit.maximum)) continue;
    const field = `body.${limit.property}`;
    return new BadRequestError(limit.errorCode, `${field} is ${value}, over its maximum of ${limit.maximum}`, {
      validationErrors: [{ field, value: String(value), message: `must be <= ${limit.maximum}` }],
    });
  }
  return undefined;
}

/** The middleware: runs where the validator has resolved the operation (`req.openapi`) and validated nothing yet. */
export function bodyMaximums(contract: unknown): RequestHandler {
  const byOperation = bodyMaximumsOf(contract);
  return (req, _res, next) => {
    const limits = byOperation.get(String(req.openapi?.schema.operationId));
    next(limits ? bodyMaximumError(limits, req.body) : undefined);
  };
}
