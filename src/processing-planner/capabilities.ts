/**
 * What this installation's ffmpeg can do: its filters and encoders. Validation refuses a field
 * whose filter or encoder is missing (400 UNSUPPORTED_PROCESSING_OPTION) and the plan picks
 * between equivalents (vidstab or deshake, zscale or colorspace). Read once per binary with
 * `engineCapabilities(bins)`; the pure functions take the result as a parameter.
 */
import { availableFilters, runMedia, type MediaBinaries } from '../media';

export interface EngineCapabilities {
  filters: ReadonlySet<string>;
  encoders: ReadonlySet<string>;
}

/** Every filter and encoder the engine can use. */
export const ENGINE_FILTERS = [
  'setparams',
  'setfield',
  'setsar',
  'format',
  'scale',
  'crop',
  'pad',
  'fps',
  'split',
  'lutyuv',
  'blend',
  'bwdif',
  'yadif',
  'w3fdif',
  'hqdn3d',
  'nlmeans',
  'deshake',
  'vidstabdetect',
  'vidstabtransform',
  'vibrance',
  'grayworld',
  'eq',
  'unsharp',
  'framerate',
  'minterpolate',
  'gradfun',
  'deband',
  'noise',
  'interlace',
  'fieldorder',
  'zscale',
  'colorspace',
  'tonemap',
] as const;
export const ENGINE_ENCODERS = ['libx264', 'libx265', 'mpeg2video', 'ffv1', 'prores_ks', 'dnxhd', 'aac', 'pcm_s24le'] as const;

/**
 * The capabilities assumed when the caller passes none: everything the engine can use (the
 * FFmpeg 5.1 build of Debian 12 with libzimg and libvidstab has all of it). Services should
 * pass the real `engineCapabilities(bins)` so a missing filter is refused at validation.
 */
export const FULL_CAPABILITIES: EngineCapabilities = { filters: new Set(ENGINE_FILTERS), encoders: new Set(ENGINE_ENCODERS) };

const encoderCache = new Map<string, Promise<Set<string>>>();

/** The encoder names an ffmpeg binary offers (`ffmpeg -encoders`), cached per binary path. */
export function availableEncoders(bins: Pick<MediaBinaries, 'ffmpeg'>): Promise<Set<string>> {
  let cached = encoderCache.get(bins.ffmpeg);
  if (!cached) {
    cached = runMedia(bins.ffmpeg, ['-encoders'], { timeoutMs: 10_000, tool: 'ffmpeg', maxStdoutBytes: 1024 * 1024 }).then(({ stdout }) => {
      const names = new Set<string>();
      for (const line of stdout.split('\n')) {
        const m = /^\s*[VAS][.A-Z]{5}\s+(\S+)\s/.exec(line);
        if (m && m[1] !== '=') names.add(m[1]!);
      }
      return names;
    });
    cached.catch(() => encoderCache.delete(bins.ffmpeg));
    encoderCache.set(bins.ffmpeg, cached);
  }
  return cached;
}

export async function engineCapabilities(bins: Pick<MediaBinaries, 'ffmpeg'>): Promise<EngineCapabilities> {
  const [filters, encoders] = await Promise.all([availableFilters(bins), availableEncoders(bins)]);
  return { filters, encoders };
}
