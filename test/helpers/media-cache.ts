/**
 * Encoded test media, made once across test processes: `ffmpeg <args> <out>` is run the first
 * time its recipe (the arguments, the output's extension and the ffmpeg binary: path, size and
 * modification time) is asked for, and the result is kept in node_modules/.cache/vidmill-test-media/
 * under the recipe's hash; later asks, in this process or another (the SQLite and PostgreSQL
 * passes, the next run), copy it to `out` instead of encoding again. Each caller gets its own copy,
 * so a test that changes its file changes nobody else's.
 *
 * Safe with concurrent writers: an encoding goes to a temporary name in the cache folder and is
 * renamed into place when complete (two processes encoding the same recipe at once both succeed;
 * the last rename wins and both files are whole). Delete the folder to start afresh.
 */
import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const MEDIA_CACHE_DIR = path.resolve(__dirname, '..', '..', 'node_modules', '.cache', 'vidmill-test-media');

const binaryIds = new Map<string, string>();
/** The ffmpeg binary's identity: its real path, size and modification time (a new build is a new recipe). */
function binaryId(ffmpeg: string): string {
  let id = binaryIds.get(ffmpeg);
  if (id === undefined) {
    let file = ffmpeg;
    if (!path.isAbsolute(file)) {
      const found = (process.env.PATH ?? '')
        .split(path.delimiter)
        .map((dir) => path.join(dir, ffmpeg))
        .find((candidate) => existsSync(candidate));
      file = found ?? ffmpeg;
    }
    try {
      const real = realpathSync(file);
      const { size, mtimeMs } = statSync(real);
      id = `${real}:${size}:${mtimeMs}`;
    } catch {
      id = ffmpeg;
    }
    binaryIds.set(ffmpeg, id);
  }
  return id;
}

/** Where the cached result of this recipe lives (it may not exist yet). */
function cachedPath(ffmpeg: string, args: readonly string[], out: string): string {
  const ext = path.extname(out);
  const key = createHash('sha256')
    .update(JSON.stringify([binaryId(ffmpeg), args, ext]))
    .digest('hex')
    .slice(0, 32);
  return path.join(MEDIA_CACHE_DIR, `${key}${ext}`);
}

/** A temporary name beside `cached`, with the same extension (ffmpeg chooses the container by it). */
function temporaryPath(cached: string): string {
  const ext = path.extname(cached);
  return `${cached.slice(0, -ext.length || undefined)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}${ext}`;
}

/** Makes `out` as `ffmpeg ...args out` would, encoding only when no process encoded this recipe before. */
export async function encodeCached(ffmpeg: string, args: readonly string[], out: string): Promise<void> {
  const cached = cachedPath(ffmpeg, args, out);
  if (!existsSync(cached)) {
    mkdirSync(MEDIA_CACHE_DIR, { recursive: true });
    const tmp = temporaryPath(cached);
    try {
      await run(ffmpeg, [...args, tmp]);
      renameSync(tmp, cached);
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  copyFileSync(cached, out);
}

/** The same, synchronously (ffmpeg's stderr is kept for the error when it fails). */
export function encodeCachedSync(ffmpeg: string, args: readonly string[], out: string): void {
  const cached = cachedPath(ffmpeg, args, out);
  if (!existsSync(cached)) {
    mkdirSync(MEDIA_CACHE_DIR, { recursive: true });
    const tmp = temporaryPath(cached);
    try {
      execFileSync(ffmpeg, [...args, tmp], { stdio: ['ignore', 'ignore', 'pipe'] });
      renameSync(tmp, cached);
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  copyFileSync(cached, out);
}
