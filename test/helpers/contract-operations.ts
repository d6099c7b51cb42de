/**
 * The operations of the contract (generated/openapi.json) as the contract tests walk them: method,
 * path, parameters, request body and declared responses, with document-internal `$ref`s resolved.
 */
import { loadContract } from '../../src/composition';
import { PENDING_OPERATIONS } from '../../src/http/pending-operations';

export const METHODS = ['get', 'post', 'patch', 'delete', 'put'] as const;

export interface ContractOperation {
  method: (typeof METHODS)[number];
  path: string;
  operationId: string;
  /** Path-item and operation parameters, resolved. */
  params: any[];
  bodySchema?: any;
  /** The request body's example (every request body of the contract has one). */
  bodyExample?: unknown;
  /** False for an optional body (deleteVideoById's list of expected derived ids). */
  bodyRequired: boolean;
  /** Declared responses by status code, resolved. */
  responses: Record<string, any>;
}

/** Follows a document-internal `$ref` (`#/components/...`) until a value that is not one. */
export function resolveRef(x: any, doc: any = loadContract()): any {
  return x?.$ref
    ? resolveRef(
        x.$ref
          .split('/')
          .slice(1)
          .reduce((o: any, k: string) => o[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc),
        doc,
      )
    : x;
}

/** Every operation of the contract; operations still pending (501) only when asked for. */
export function contractOperations(opts: { includePending?: boolean } = {}): ContractOperation[] {
  const doc = loadContract();
  const ops: ContractOperation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      if (!opts.includePending && (PENDING_OPERATIONS as readonly string[]).includes(op.operationId)) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => resolveRef(p, doc));
      const body = op.requestBody?.content?.['application/json'];
      ops.push({
        method,
        path,
        operationId: op.operationId,
        params,
        bodySchema: resolveRef(body?.schema, doc),
        bodyExample: body?.example ?? Object.values<any>(body?.examples ?? {})[0]?.value,
        bodyRequired: op.requestBody?.required === true,
        responses: Object.fromEntries(Object.entries<any>(op.responses).map(([status, r]) => [status, resolveRef(r, doc)])),
      });
    }
  }
  return ops;
}
