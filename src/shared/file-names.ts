/**
 * File names made from free text (a video's name): what a person reads in a download dialog and
 * in a bucket listing. Readable characters stay, letters of any script, digits, spaces,
 * parentheses, brackets, dashes, dots, commas, apostrophes, `&`, `+`...: "Beach (processed)"
 * stays "Beach (processed)". What would break a file name or an object key goes: path separators,
 * control characters and the characters Windows refuses (`<>:"/\|?*`) become `_`; runs of white
 * space become one space; leading and trailing spaces and dots are dropped.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it removes
const UNSAFE = /[\u0000-\u001f\u007f<>:"/\\|?*]/g;

/** `text` as a file name with `extension` (with or without its dot); `fallback` when nothing is left. */
export function fileNameFrom(text: string, extension: string, opts: { maxLength?: number; fallback?: string } = {}): string {
  const cleaned = text
    .normalize('NFC')
    .replace(UNSAFE, '_')
    .replace(/\s+/g, ' ')
    .replace(/^[ .]+|[ .]+$/g, '');
  // Cut by characters, not UTF-16 units, so no half of a surrogate pair is left.
  const base =
    Array.from(cleaned)
      .slice(0, opts.maxLength ?? 200)
      .join('')
      .trimEnd() ||
    (opts.fallback ?? 'video');
  return extension ? `${base}${extension.startsWith('.') ? extension : `.${extension}`}` : base;
}
