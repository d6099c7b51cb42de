/**
 * Typed handlers bound by operationId. Handlers are the only place that sees generated types;
 * they map them to service calls and back.
 */
import type { Logger } from 'pino';
import type { operations } from '../../generated/api';

/** Operations under the document's `webhooks` are sent by Vidmill, not served. */
type OutgoingWebhookOperation = 'receiveVideoEvent';

export type OperationId = Exclude<keyof operations, OutgoingWebhookOperation>;

type Parameters<Op extends OperationId> = operations[Op] extends { parameters: infer P } ? P : never;
// `{}`: an operation without parameters of that kind gets an empty part (any object fits).
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
type Part<P, K extends string> = P extends { [k in K]?: infer Q } ? (Q extends undefined ? {} : NonNullable<Q>) : {};
type JsonOf<C> = C extends { content: { 'application/json': infer B } } ? B : never;
type RequestBody<Op extends OperationId> = operations[Op] extends { requestBody: infer R }
  ? JsonOf<R>
  : operations[Op] extends { requestBody?: infer R }
    ? JsonOf<NonNullable<R>> | undefined
    : undefined;

type Responses<Op extends OperationId> = operations[Op]['responses'];
type SuccessStatus<Op extends OperationId> = Extract<keyof Responses<Op>, 200 | 201 | 202 | 204>;

/** The authenticated caller. */
export interface Principal {
  userId: string;
  /** Set when the caller authenticated with an API key. */
  apiKeyId?: string;
}

export interface HandlerInput<Op extends OperationId> {
  path: Part<Parameters<Op>, 'path'>;
  query: Part<Parameters<Op>, 'query'>;
  body: RequestBody<Op>;
  /**
   * The body as the client sent it: `body` without the contract's defaults that request
   * validation filled in (sent-body.ts). For what is shown back to the client as sent.
   */
  sentBody: RequestBody<Op>;
  principal: Principal;
  requestId: string;
  log: Logger;
}

type ReplyBody<B> = [B] extends [never] ? { body?: undefined } : { body: B };

export type Reply<Op extends OperationId> = {
  [S in SuccessStatus<Op>]: { status: S; headers?: Record<string, string> } & ReplyBody<JsonOf<Responses<Op>[S]>>;
}[SuccessStatus<Op>];

export type Handler<Op extends OperationId> = (input: HandlerInput<Op>) => Promise<Reply<Op>>;

export type HandlerMap<Ops extends OperationId> = { [Op in Ops]: Handler<Op> };

/** Every operation of the contract, each with exactly one handler. */
export type AllHandlers = HandlerMap<OperationId>;

/** What Vidmill reads of an operation object of the contract. */
export interface ContractOperation {
  operationId: string;
  requestBody?: { $ref?: string; required?: boolean; content?: Record<string, unknown> };
}

/** The keys of an OpenAPI path item that are operations. */
export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

/** The operation objects (with an operationId) of a bundled OpenAPI document (plain JSON). */
export function contractOperationObjects(doc: unknown): ContractOperation[] {
  const ops: ContractOperation[] = [];
  const paths = (doc as { paths?: Record<string, Record<string, unknown>> }).paths ?? {};
  for (const item of Object.values(paths)) {
    for (const [method, op] of Object.entries(item)) {
      if ((HTTP_METHODS as readonly string[]).includes(method) && (op as Partial<ContractOperation> | null)?.operationId) ops.push(op as ContractOperation);
    }
  }
  return ops;
}

/** Reads the operationIds of a bundled OpenAPI document. */
export function contractOperationIds(doc: unknown): string[] {
  return contractOperationObjects(doc).map((op) => op.operationId);
}

/** Refuses to start unless every operation has exactly one handler and every handler an operation. */
export function assertHandlersMatchContract(doc: unknown, handlers: Record<string, unknown>): void {
  const ids = contractOperationIds(doc);
  const duplicates = ids.filter((id, i) => ids.indexOf(id) !== i);
  const missing = ids.filter((id) => typeof handlers[id] !== 'function');
  const extra = Object.keys(handlers).filter((id) => !ids.includes(id));
  const problems = [
    ...duplicates.map((id) => `operationId ${id} appears more than once in the contract`),
    ...missing.map((id) => `operation ${id} has no handler`),
    ...extra.map((id) => `handler ${id} matches no operation in the contract`),
  ];
  if (problems.length) throw new Error(`Handlers do not match the contract:\n  ${problems.join('\n  ')}`);
}
