/**
 * The SDK package builds with tsc (JavaScript and declarations) and `npm pack` ships its build,
 * README and package.json only. Built into a temporary copy of the package so the worktree's
 * sdk/dist is left alone.
 */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { scaled } from '../helpers/timeouts';

const SDK = path.resolve(__dirname, '../../sdk');
const TSC = path.resolve(__dirname, '../../node_modules/typescript/bin/tsc');

describe('SDK package', function () {
  this.timeout(scaled(120_000));
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-sdk-pack-'));
    cpSync(path.join(SDK, 'package.json'), path.join(dir, 'package.json'));
    cpSync(path.join(SDK, 'README.md'), path.join(dir, 'README.md'));
    cpSync(path.join(SDK, 'bin'), path.join(dir, 'bin'), { recursive: true });
    // sources and a test next to them, as in the repository: neither may be packed
    cpSync(path.join(SDK, 'src'), path.join(dir, 'src'), { recursive: true });
    writeFileSync(path.join(dir, 'src', 'stray.test.ts'), 'export {};\n');
    // the package's dependencies, as an installation would have them (npm pack never packs node_modules)
    symlinkSync(path.resolve(__dirname, '../../node_modules'), path.join(dir, 'node_modules'));
    execFileSync(process.execPath, [TSC, '-p', path.join(SDK, 'tsconfig.json'), '--outDir', path.join(dir, 'dist')], { stdio: 'pipe' });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('tsc builds JavaScript and declarations that load and export the public names', () => {
    for (const f of ['index.js', 'index.d.ts', 'client.d.ts', 'generated/api.d.ts']) assert.ok(existsSync(path.join(dir, 'dist', f)), f);
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the built CommonJS, loaded as a user of the package would
    const sdk = require(path.join(dir, 'dist', 'index.js')) as Record<string, unknown>;
    for (const name of [
      'createVidmillClient',
      'unwrap',
      'VidmillApiError',
      'VidmillNetworkError',
      'waitFor',
      'listAll',
      'pages',
      'paginate',
      'verifyWebhook',
      'WebhookKeyCache',
      'WebhookVerificationError',
      'uploadFile',
      'UploadSessionUnreachableError',
    ]) {
      assert.equal(typeof sdk[name], 'function', name);
    }
    assert.match(readFileSync(path.join(dir, 'dist', 'index.d.ts'), 'utf8'), /createVidmillClient/);
  });

  it('npm pack ships the bin, dist (with declarations), README and package.json, and no sources or tests', () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const [pack] = JSON.parse(out) as Array<{ name: string; files: Array<{ path: string }> }>;
    assert.equal(pack!.name, '@vidmill/sdk');
    const files = pack!.files.map((f) => f.path);
    for (const f of ['package.json', 'README.md', 'bin/vidmill.js', 'dist/index.js', 'dist/index.d.ts', 'dist/cli/main.js']) assert.ok(files.includes(f), `${f} in ${files.join(', ')}`);
    assert.deepEqual(
      files.filter((f) => f.startsWith('src/') || /\.test\.|\.ts$/.test(f.replace(/\.d\.ts$/, ''))),
      [],
    );
  });

  it('the vidmill bin of the installed package (no sources) runs the compiled CLI', () => {
    const installed = mkdtempSync(path.join(os.tmpdir(), 'vidmill-sdk-installed-'));
    try {
      for (const part of ['package.json', 'bin', 'dist']) cpSync(path.join(dir, part), path.join(installed, part), { recursive: true });
      symlinkSync(path.resolve(__dirname, '../../node_modules'), path.join(installed, 'node_modules'));
      const bin = (JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin.vidmill!;
      const out = execFileSync(process.execPath, [path.join(installed, bin), 'process', '--help'], { cwd: os.tmpdir(), encoding: 'utf8', env: { PATH: process.env.PATH } });
      assert.match(out, /^Usage: vidmill process/m);
      assert.match(out, /compress-h-264 +Compress H\.264/);
    } finally {
      rmSync(installed, { recursive: true, force: true });
    }
  });
});
