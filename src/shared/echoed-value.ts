/**
 * The text of a rejected value echoed back in `validationErrors` (the error mapper, the integer
 * parameter check, the processing planner): shortened, and with every secret-named field
 * redacted at any depth, so `{"extra": {"secretAccessKey": "..."}}` under an unknown property
 * is echoed without the secret. A field whose own name is secret-named is not echoed at all
 * (see `isSecretField`).
 */

/** Rejected values are echoed back shortened to this many characters. */
export const MAX_ECHOED_VALUE = 256;

/** Field names that hold secrets (bucket keys, passwords, API keys, tokens). */
const SECRET_FIELD = /secret|password|accesskey|apikey|token|authorization/i;

/** What a secret-named field's value is echoed as. */
export const REDACTED = '[redacted]';

export function isSecretField(name: string): boolean {
  return SECRET_FIELD.test(name);
}

/**
 * `value` as echoed text: a string as it is, anything else as JSON with secret-named fields
 * redacted at any depth, cut to MAX_ECHOED_VALUE characters. Undefined when it cannot be
 * serialised (too deep).
 */
export function echoText(value: unknown): string | undefined {
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value, redactSecrets) ?? '');
  } catch {
    return undefined;
  }
  return text.length > MAX_ECHOED_VALUE ? text.slice(0, MAX_ECHOED_VALUE) + '…' : text;
}

/** JSON.stringify replacer: array indices and the root ('') are never secret-named. */
function redactSecrets(key: string, value: unknown): unknown {
  return key !== '' && isSecretField(key) ? REDACTED : value;
}
