/**
 * Operations of the contract whose work belongs to later issues. Each answers 501 with the
 * `Error` body (`NOT_IMPLEMENTED`); the list shrinks to nothing as the issues land.
 */
import { NotImplementedError } from '../shared/errors';
import type { Handler, OperationId } from './operations';

export const PENDING_OPERATIONS = [] as const satisfies readonly OperationId[];

export type PendingOperation = (typeof PENDING_OPERATIONS)[number];

const notImplemented = (): Promise<never> => Promise.reject(new NotImplementedError('NOT_IMPLEMENTED', 'This operation is part of the contract but not implemented by this installation yet'));

export const pendingHandlers = Object.fromEntries(PENDING_OPERATIONS.map((id) => [id, notImplemented])) as unknown as {
  [Op in PendingOperation]: Handler<Op>;
};
