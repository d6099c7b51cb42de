// Part of `npm run build` (after `tsc -b tsconfig.build.json`): copies the files src/ reads at run
// time that tsc does not emit. src/composition.ts reads ../generated/openapi.json relative to its
// own folder, so the compiled dist/src/composition.js finds dist/generated/openapi.json.
// Plain JavaScript so that the build needs nothing but tsc and node.
// A copy that is already up to date is left alone, and a new one is written beside it and renamed
// into place: a process starting from dist/ meanwhile (npm test starts the server from dist/ while
// a test runs `npm start`, whose prestart builds) never reads a half-written file.
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const assets = ['generated/openapi.json'];
for (const asset of assets) {
  const from = path.join(root, asset);
  const to = path.join(root, 'dist', asset);
  if (existsSync(to) && readFileSync(to).equals(readFileSync(from))) continue;
  mkdirSync(path.dirname(to), { recursive: true });
  const tmp = `${to}.${process.pid}.tmp`;
  copyFileSync(from, tmp);
  renameSync(tmp, to);
}
