/**
 * `npm run generate`: writes generated/openapi.json (the bundled contract), generated/api.ts
 * (TypeScript types) and the SDK's copy of the types, sdk/src/generated/api.ts. `--check` writes
 * nothing and exits 1 on drift.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPOSITORY_ROOT, renderGenerated } from './contract';

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const files = await renderGenerated();
  const stale: string[] = [];
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(REPOSITORY_ROOT, name);
    const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
    if (current === content) continue;
    stale.push(name);
    if (!check) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, content);
    }
  }
  if (check && stale.length) {
    console.error(`generated files are out of date (${stale.join(', ')}); run npm run generate`);
    process.exit(1);
  }
  console.log(stale.length ? `wrote ${stale.join(', ')}` : 'generated files are up to date');
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
