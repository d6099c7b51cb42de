/**
 * How a test starts Vidmill's own programs (the server, the `vidmill` CLI) as child processes:
 * from the compiled code when scripts/run-tests.ts built it for this run (it sets
 * VIDMILL_TEST_BUILT=true after `npm run build` and the SDK's build succeeded: dist/ and
 * sdk/dist/), else from the sources through tsx (a file run with `npx mocha` directly, or a build
 * that failed). Starting through tsx costs about twice the CPU of starting compiled code (tsx
 * loads esbuild and transforms or reads its cache for every module), and the crash tests start
 * and restart processes dozens of times. The compiled code is what `npm start` runs; the sources
 * stay what the tests themselves import.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const ROOT = path.resolve(__dirname, '..', '..');

/** Whether the run built dist/ and sdk/dist/ from the current sources (see the module comment). */
export const FROM_BUILD = process.env.VIDMILL_TEST_BUILT === 'true';

/** tsx's loader by its absolute address, so that a child started in any working directory finds it. */
const TSX = pathToFileURL(require.resolve('tsx')).href;

/** The arguments of `process.execPath` that start the server (src/main.ts, or dist/src/main.js). */
export function serverArgs(): string[] {
  return FROM_BUILD ? [path.join(ROOT, 'dist', 'src', 'main.js')] : ['--import', TSX, path.join(ROOT, 'src', 'main.ts')];
}

/** The arguments of `process.execPath` that start the `vidmill` CLI (sdk/src/cli/main.ts, or sdk/dist/cli/main.js). */
export function cliArgs(): string[] {
  return FROM_BUILD ? [path.join(ROOT, 'sdk', 'dist', 'cli', 'main.js')] : ['--import', TSX, path.join(ROOT, 'sdk', 'src', 'cli', 'main.ts')];
}
