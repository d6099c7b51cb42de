/**
 * The FILMGRAIN post-processor as one filter-graph fragment: luma-only, temporally varying
 * grain, made on its own mid-grey plane and merged into the picture's luma; the picture's chroma
 * passes through untouched.
 *
 * - The grain plane is a copy of the frame (for its timing) turned into 8-bit 4:2:0 and set to
 *   mid grey 128 on every plane with `lutyuv`, then `noise` adds grain to its luma only. It is
 *   made at 1/1 .. 1/4 of the frame size and enlarged (bicubic) for coarser grain. The lowered
 *   resolution is what makes coarser grain: neighbouring pixels share one grain value.
 * - `blend` merges it: luma by grain merge (picture + grain - mid grey, at the picture's own bit
 *   depth: 128 in 8 bits becomes exactly 512 in 10 bits when the grain is enlarged into the
 *   picture's format), chroma in `normal` mode at opacity 1, i.e. the picture's own chroma.
 *   (`normal` at opacity 0 would take the grain plane's grey chroma.)
 * - The grain branch starts with a `scale`, so the picture is not converted to the 8-bit format
 *   the noise filter needs: only the grain plane is.
 * - ffmpeg's `noise` (its default, Gaussian-like distribution) averages slightly below zero,
 *   about strength/60 of a level; the mid grey is raised by that, rounded, so the picture's mean
 *   brightness stays where it was.
 */
import type { GrainSize } from './options';

/** Grain plane size divisor per grain size. */
export const GRAIN_SCALE: Record<GrainSize, number> = { SUPER_FINE: 1, FINE: 1.5, MEDIUM: 2, COARSE: 3, VERY_COARSE: 4 };

const even = (x: number) => Math.max(2, 2 * Math.round(x / 2));

/** The mid grey of the 8-bit grain plane, corrected for the noise filter's bias. */
export function grainMidGrey(strength: number): number {
  return 128 + Math.round(strength / 60);
}

/**
 * The filter-graph fragment (one chain element: `split...blend`) adding grain of `strength`
 * (0..50, ffmpeg noise strength) and `size` to a `width` x `height` picture.
 */
export function filmGrainFilter(width: number, height: number, size: GrainSize, strength: number): string {
  const k = GRAIN_SCALE[size];
  const mid = grainMidGrey(strength);
  const plane = `scale=w=${even(width / k)}:h=${even(height / k)},format=yuv420p,lutyuv=y=${mid}:u=128:v=128,noise=c0s=${strength}:c0f=t`;
  const enlarge = `scale=w=${width}:h=${height}:flags=bicubic`;
  return `split[fgsrc][fgraw];[fgraw]${plane},${enlarge}[fgnoise];` + '[fgsrc][fgnoise]blend=c0_mode=grainmerge:c1_mode=normal:c1_opacity=1:c2_mode=normal:c2_opacity=1';
}
