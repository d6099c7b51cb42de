/**
 * The one client error of the processing engine: a 400 with the reference's errorCode and one
 * `validationErrors` entry per problem found. Fields are paths inside the options object
 * (`filters.scaler`, `filterSettings.resolution.width`); a handler that receives the options
 * under another name (`options.` in a configuration body) adds its prefix with `withFieldPrefix`.
 */
import { echoText, isSecretField } from '../shared/echoed-value';
import { BadRequestError } from '../shared/errors';

export type ProcessingErrorCode =
  | 'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC'
  | 'MISSING_CUSTOM_RESOLUTION'
  | 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE'
  | 'TARGET_RESOLUTION_CANNOT_BE_LOWER_THAN_CALCULATED_ASPECT_RATIO_RESOLUTION'
  | 'INVALID_INPUT_COLOR_CONVERSION'
  | 'INVALID_OUTPUT_COLOR_CONVERSION'
  /** Not in the contract's ErrorCodeEnum (which says it is not exhaustive): a field this installation cannot apply. */
  | 'UNSUPPORTED_PROCESSING_OPTION'
  /** Missing filter settings, inconsistent or conflicting values. */
  | 'VALIDATION_ERROR'
  /** The processed range: start outside the source, end before the start or past the end. */
  | 'INVALID_START_POSITION'
  | 'INVALID_END_POSITION';

export interface ProcessingIssue {
  code: ProcessingErrorCode;
  field: string;
  message: string;
  value?: string;
}

export class ProcessingOptionsError extends BadRequestError {
  readonly issues: ProcessingIssue[];

  constructor(issues: ProcessingIssue[]) {
    if (!issues.length) throw new Error('ProcessingOptionsError needs at least one issue');
    const first = issues[0]!; // not empty: checked above
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? 's' : ''})` : '';
    super(first.code, `${first.field}: ${first.message}${more}`, {
      validationErrors: issues.map((i) => ({ field: i.field, message: i.message, ...(i.value !== undefined ? { value: i.value } : {}) })),
    });
    this.issues = issues;
  }

  /** The same error with every field prefixed (`options` gives `options.filters.scaler`). */
  withFieldPrefix(prefix: string): ProcessingOptionsError {
    const p = prefix.endsWith('.') ? prefix : `${prefix}.`;
    return new ProcessingOptionsError(this.issues.map((i) => ({ ...i, field: p + i.field })));
  }
}

/** Collects issues; `throwIfAny` throws them as one ProcessingOptionsError. */
export class IssueList {
  readonly issues: ProcessingIssue[] = [];

  add(code: ProcessingErrorCode, field: string, message: string, value?: unknown): void {
    if (this.issues.some((i) => i.field === field && i.message === message)) return;
    const issue: ProcessingIssue = { code, field, message };
    // Echoed as the API's validator echoes: shortened, secrets redacted (none for a secret field).
    const text = value === undefined || field.split('.').some(isSecretField) ? undefined : echoText(value);
    if (text !== undefined) issue.value = text;
    this.issues.push(issue);
  }

  unsupported(field: string, message: string, value?: unknown): void {
    this.add('UNSUPPORTED_PROCESSING_OPTION', field, `not supported by this installation: ${message}`, value);
  }

  get length(): number {
    return this.issues.length;
  }

  throwIfAny(): void {
    if (this.issues.length) throw new ProcessingOptionsError(this.issues);
  }
}
