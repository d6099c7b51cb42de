/** How numbers, times and filter option values are written into ffmpeg arguments. */

/** A number with at most `digits` decimals, no trailing zeros. */
export const num = (x: number, digits = 4) => String(Math.round(x * 10 ** digits) / 10 ** digits);

/** Seconds for an ffmpeg time option: milliseconds when exact, else microseconds (rounded down for a seek, so it is never past the frame it names). */
export function secondsArg(x: number, rounding: 'floor' | 'nearest' = 'nearest'): string {
  const ms = x * 1000;
  if (Math.abs(ms - Math.round(ms)) < 1e-6) return (Math.round(ms) / 1000).toFixed(3);
  const us = rounding === 'floor' ? Math.floor(x * 1e6 + 1e-6) : Math.round(x * 1e6);
  return (us / 1e6).toFixed(6);
}

/** Quote a filter option value for a filtergraph (both escaping levels of ffmpeg's filter syntax). */
export function escapeFilterValue(v: string): string {
  const level1 = v.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/:/g, '\\:');
  return level1
    .replace(/\\/g, '\\\\')
    .replace(/'/g, "\\'")
    .replace(/([[\],;])/g, '\\$1');
}
