/**
 * Finds ffmpeg and ffprobe: a configured path (VIDMILL_FFMPEG_PATH / VIDMILL_FFPROBE_PATH) first,
 * else the first executable of that name on PATH, else the binaries shipped inside the optional
 * npm packages `@ffmpeg-installer/ffmpeg` and `@ffprobe-installer/ffprobe`. Each candidate is
 * run with `-version` before it is accepted. A configured path that does not run is an error
 * (never silently replaced); a PATH or npm candidate that does not run is skipped.
 *
 * Note: the npm-shipped ffmpeg is an old static build (2018, FFmpeg 4.1 era). It lacks the
 * blurdetect, blockdetect and siti filters, so the quality assessment measures less with it
 * (see `availableFilters`); a system ffmpeg (5.1 or later) on PATH is preferred.
 */
import { constants as fsConstants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { MediaBinaryError, MediaError } from './errors';
import { runMedia } from './runner';

export type BinarySource = 'configured' | 'path' | 'npm';

export interface MediaBinaries {
  ffmpeg: string;
  ffprobe: string;
  ffmpegVersion: string;
  ffprobeVersion: string;
  source: { ffmpeg: BinarySource; ffprobe: BinarySource };
}

export interface ResolveMediaBinariesOptions {
  ffmpegPath?: string;
  ffprobePath?: string;
  /** PATH to search (default `process.env.PATH`); `''` searches nothing (tests). */
  searchPath?: string;
  /** Whether to fall back to the npm-shipped binaries (default true). */
  allowNpm?: boolean;
  /** Time limit of each `-version` run (default 10 s). */
  versionTimeoutMs?: number;
}

type Tool = 'ffmpeg' | 'ffprobe';

const NPM_PACKAGES: Record<Tool, string> = { ffmpeg: '@ffmpeg-installer/ffmpeg', ffprobe: '@ffprobe-installer/ffprobe' };
const CONFIG_NAMES: Record<Tool, string> = { ffmpeg: 'VIDMILL_FFMPEG_PATH', ffprobe: 'VIDMILL_FFPROBE_PATH' };

/** The version of `ffmpeg version 5.1.9-0+deb12u1 Copyright ...` (first line of `-version`). */
export function parseVersionLine(tool: Tool, output: string): string | undefined {
  const first = output.split(/\r?\n/, 1)[0] ?? '';
  const m = new RegExp(`^${tool} version (\\S+)`).exec(first.trim());
  return m?.[1];
}

/** Runs `<bin> -version` and returns the version, or throws a MediaError saying why not. */
export async function binaryVersion(tool: Tool, bin: string, timeoutMs = 10_000): Promise<string> {
  let stdout: string;
  try {
    ({ stdout } = await runMedia(bin, ['-version'], { timeoutMs, rawArgs: true, maxStdoutBytes: 1024 * 1024 }));
  } catch (err) {
    throw new MediaError(`"${bin}" does not run: ${(err as Error).message}`, { cause: err });
  }
  const version = parseVersionLine(tool, stdout);
  if (!version) throw new MediaError(`"${bin}" is not ${tool}: its -version output starts with "${stdout.split('\n', 1)[0]!.slice(0, 80)}"`);
  return version;
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function findOnPath(tool: Tool, searchPath: string): Promise<string[]> {
  const names = process.platform === 'win32' ? [`${tool}.exe`] : [tool];
  const found: string[] = [];
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    for (const n of names) {
      const candidate = path.join(dir, n);
      if (await isExecutable(candidate)) found.push(candidate);
    }
  }
  return found;
}

function npmBinary(tool: Tool): string | undefined {
  try {
    // Optional dependency: loaded at run time, absent on platforms it does not ship for.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a synchronous optional load
    const mod = require(NPM_PACKAGES[tool]) as { path?: string };
    return typeof mod.path === 'string' ? mod.path : undefined;
  } catch {
    return undefined; // not installed, or no binary for this platform (the package throws a string)
  }
}

async function resolveOne(tool: Tool, configured: string | undefined, opts: ResolveMediaBinariesOptions): Promise<{ bin: string; version: string; source: BinarySource }> {
  const timeout = opts.versionTimeoutMs;
  if (configured) {
    try {
      return { bin: configured, version: await binaryVersion(tool, configured, timeout), source: 'configured' };
    } catch (err) {
      throw new MediaBinaryError(`${CONFIG_NAMES[tool]}: configured ${tool} ${(err as Error).message}`, { cause: err });
    }
  }
  const tried: string[] = [];
  for (const candidate of await findOnPath(tool, opts.searchPath ?? process.env.PATH ?? '')) {
    try {
      return { bin: candidate, version: await binaryVersion(tool, candidate, timeout), source: 'path' };
    } catch (err) {
      tried.push((err as Error).message);
    }
  }
  if (opts.allowNpm !== false) {
    const candidate = npmBinary(tool);
    if (candidate) {
      try {
        return { bin: candidate, version: await binaryVersion(tool, candidate, timeout), source: 'npm' };
      } catch (err) {
        tried.push((err as Error).message);
      }
    } else {
      tried.push(`the optional npm package ${NPM_PACKAGES[tool]} is not installed for this platform`);
    }
  }
  throw new MediaBinaryError(`${tool} not found: set ${CONFIG_NAMES[tool]}, put ${tool} on PATH or install ${NPM_PACKAGES[tool]}` + (tried.length ? ` (${tried.join('; ')})` : ''));
}

export async function resolveMediaBinaries(opts: ResolveMediaBinariesOptions = {}): Promise<MediaBinaries> {
  const [ffmpeg, ffprobe] = await Promise.all([resolveOne('ffmpeg', opts.ffmpegPath, opts), resolveOne('ffprobe', opts.ffprobePath, opts)]);
  return {
    ffmpeg: ffmpeg.bin,
    ffprobe: ffprobe.bin,
    ffmpegVersion: ffmpeg.version,
    ffprobeVersion: ffprobe.version,
    source: { ffmpeg: ffmpeg.source, ffprobe: ffprobe.source },
  };
}

/**
 * The process's ffmpeg and ffprobe: resolved (`resolveMediaBinaries`) when first asked for and
 * kept; a failed resolution is tried again at the next request (the operator may install ffmpeg
 * meanwhile). The composition root makes one and hands it to everything that runs the binaries
 * (ingestion, processing, the processing engine, the readiness check).
 */
export class MediaBinariesProvider {
  private resolving?: Promise<MediaBinaries>;

  constructor(private readonly opts: ResolveMediaBinariesOptions = {}) {}

  get(): Promise<MediaBinaries> {
    if (!this.resolving) {
      const resolving = resolveMediaBinaries(this.opts);
      resolving.catch(() => {
        if (this.resolving === resolving) this.resolving = undefined;
      });
      this.resolving = resolving;
    }
    return this.resolving;
  }
}

/**
 * For the HTTP readiness check: runs both binaries again (`-version`, 5 s limit each) and
 * returns their versions; throws (so the check answers 503) when either no longer runs.
 */
export async function mediaReadiness(bins: MediaBinaries): Promise<{ ffmpeg: string; ffprobe: string }> {
  const [ffmpeg, ffprobe] = await Promise.all([binaryVersion('ffmpeg', bins.ffmpeg, 5000), binaryVersion('ffprobe', bins.ffprobe, 5000)]);
  return { ffmpeg, ffprobe };
}

const filterCache = new Map<string, Promise<Set<string>>>();

/** The filter names an ffmpeg binary offers (`ffmpeg -filters`), cached per binary path. */
export function availableFilters(bins: Pick<MediaBinaries, 'ffmpeg'>): Promise<Set<string>> {
  let cached = filterCache.get(bins.ffmpeg);
  if (!cached) {
    cached = runMedia(bins.ffmpeg, ['-filters'], { timeoutMs: 10_000, tool: 'ffmpeg', maxStdoutBytes: 1024 * 1024 }).then(({ stdout }) => {
      const names = new Set<string>();
      for (const line of stdout.split('\n')) {
        const m = /^\s*[.A-Z|]{3}\s+(\S+)\s+\S+->\S+/.exec(line);
        if (m) names.add(m[1]!);
      }
      return names;
    });
    cached.catch(() => filterCache.delete(bins.ffmpeg));
    filterCache.set(bins.ffmpeg, cached);
  }
  return cached;
}
