// Part of `npm run build` (after `tsc -b tsconfig.build.json`): copies the files src/ reads at run
// time that tsc does not emit. src/composition.ts reads ../generated/openapi.json relative to its
// own folder, so the compiled dist/src/composition.js finds dist/generated/openapi.json.
// Plain JavaScript so that the build needs nothing but tsc and node.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const assets = ['generated/openapi.json'];
for (const asset of assets) {
  const to = path.join(root, 'dist', asset);
  mkdirSync(path.dirname(to), { recursive: true });
  copyFileSync(path.join(root, asset), to);
}
