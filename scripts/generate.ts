/**
 * `npm run generate`: writes generated/openapi.json (the bundled contract) and
 * generated/api.ts (TypeScript types). `--check` writes nothing and exits 1 on drift.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { GENERATED_DIR, renderGenerated } from './contract';

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const files = await renderGenerated();
  const stale: string[] = [];
  mkdirSync(GENERATED_DIR, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(GENERATED_DIR, name);
    const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
    if (current === content) continue;
    stale.push(name);
    if (!check) writeFileSync(file, content);
  }
  if (check && stale.length) {
    console.error(`generated/ is out of date (${stale.join(', ')}); run npm run generate`);
    process.exit(1);
  }
  console.log(stale.length ? `wrote ${stale.map((s) => 'generated/' + s).join(', ')}` : 'generated/ is up to date');
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
