/**
 * The block that shows the generated owner password on the first start: written once, straight
 * to stdout (the terminal when interactive), framed so it stands apart from the JSON log lines,
 * and never passed to the logger.
 */
export function firstStartNotice(email: string, password: string): string {
  const lines = [
    'Vidmill first start: created the owner user, a team and its Default Project.',
    '',
    `  e-mail:    ${email}`,
    `  password:  ${password}`,
    '',
    'This password is shown only now and is not logged. Use it (HTTP Basic) to create',
    'an API key: POST /api/v1/api-keys (README, "Get an API key"). Change it with',
    `  npm run admin -- reset-password --email ${email}`,
    'Set VIDMILL_BOOTSTRAP_EMAIL / VIDMILL_BOOTSTRAP_PASSWORD to choose them instead.',
  ];
  const width = Math.max(...lines.map((l) => l.length));
  const rule = `+${'-'.repeat(width + 4)}+`;
  return ['', rule, ...lines.map((l) => `|  ${l.padEnd(width)}  |`), rule, '', ''].join('\n');
}
