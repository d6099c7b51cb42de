#!/usr/bin/env node
/**
 * The `vidmill` command (docs/cli.md), the `bin` of @vidmill/sdk. In this repository (after
 * `npm ci`, `npx vidmill ...` from any folder of the checkout) it runs the sources with tsx's
 * require hook, in this one process: never a stale build, no npm banner on stdout, no child
 * process to outlive a signal. In the packed package (no sources) it runs the compiled dist/.
 */
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS bin: require is how it loads the CLI */
const { existsSync } = require('node:fs');
const path = require('node:path');

const source = path.join(__dirname, '..', 'src', 'cli', 'main.ts');
if (existsSync(source)) {
  require('tsx/cjs/api').register();
  require(source).run(process.argv);
} else {
  require('../dist/cli/main.js').run(process.argv);
}
