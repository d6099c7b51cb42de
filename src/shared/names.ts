/**
 * The rule for a name a person sets (teams, projects, videos, API keys, webhooks, locations,
 * processing configurations): 1 to 47 characters, at least one of them not white space. It is
 * the contract's `minLength: 1, maxLength: 47, pattern: '\S'`, which the request validator
 * enforces on every request; this is the same rule for names that come in another way (the admin
 * CLI's team names), so that the API never serves a name its contract refuses. A test checks it
 * against the contract's name schemas.
 */
import { BadRequestError } from './errors';

export const NAME_MAX_LENGTH = 47;

/** Why `name` breaks the rule, or undefined. Lengths count characters (code points), as JSON Schema does. */
export function nameProblem(name: string): string | undefined {
  const length = [...name].length;
  if (length < 1) return 'must not be empty';
  if (length > NAME_MAX_LENGTH) return `must have at most ${NAME_MAX_LENGTH} characters (has ${length})`;
  if (!/\S/.test(name)) return 'must contain a character that is not white space';
  return undefined;
}

/** Throws `400 VALIDATION_ERROR` naming `field` when `name` breaks the rule. */
export function assertValidName(field: string, name: string): void {
  const problem = nameProblem(name);
  if (problem) throw new BadRequestError('VALIDATION_ERROR', `${field} ${problem}`, { validationErrors: [{ field, message: problem }] });
}
