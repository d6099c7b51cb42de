/**
 * Small real videos made with ffmpeg for tests (`testsrc2` picture, optional `sine` audio),
 * one file per process and spec, encoded once across processes (test/helpers/media-cache.ts).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encodeCachedSync } from './media-cache';

export interface FixtureSpec {
  seconds: number;
  width?: number;
  height?: number;
  fps?: number;
  /** ffmpeg encoder arguments; default H.264 (ultrafast). */
  video?: string[];
  audio?: boolean;
  /** File extension (decides the container); default mp4. */
  ext?: string;
  /** Extra output arguments (e.g. interlacing flags). */
  extra?: string[];
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-fixtures-'));
const cache = new Map<string, string>();

export const FFMPEG = process.env.VIDMILL_FFMPEG_PATH || 'ffmpeg';

/** The path of a generated video (made once per spec and process). */
export function fixtureVideo(spec: FixtureSpec): string {
  const key = JSON.stringify(spec);
  const cached = cache.get(key);
  if (cached) return cached;
  const { seconds, width = 320, height = 240, fps = 25, ext = 'mp4' } = spec;
  const out = path.join(dir, `fixture-${cache.size + 1}.${ext}`);
  const args = ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `testsrc2=size=${width}x${height}:rate=${fps}:duration=${seconds}`];
  if (spec.audio) args.push('-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${seconds}`);
  args.push(...(spec.video ?? ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', String(fps)]));
  if (spec.audio) args.push('-c:a', 'aac', '-b:a', '64k');
  args.push(...(spec.extra ?? []));
  encodeCachedSync(FFMPEG, args, out);
  cache.set(key, out);
  return out;
}

export function fixtureBytes(spec: FixtureSpec): Buffer {
  return readFileSync(fixtureVideo(spec));
}
