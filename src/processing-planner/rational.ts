/** Exact rational numbers for frame rates and sample aspect ratios. */

export interface Rational {
  num: number;
  den: number;
}

export function gcd(a: number, b: number): number {
  a = Math.abs(a);
  b = Math.abs(b);
  while (b) [a, b] = [b, a % b];
  return a || 1;
}

export function reduce(r: Rational): Rational {
  const g = gcd(r.num, r.den);
  return { num: r.num / g, den: r.den / g };
}

/** Best rational approximation with a bounded denominator (continued fractions). */
export function toRational(x: number, maxDen = 1001): Rational {
  if (!Number.isFinite(x) || x <= 0) return { num: 0, den: 1 };
  let [h0, h1, k0, k1] = [0, 1, 1, 0];
  let v = x;
  for (let i = 0; i < 40; i++) {
    const a = Math.floor(v);
    const h2 = a * h1 + h0;
    const k2 = a * k1 + k0;
    if (k2 > maxDen) break;
    [h0, h1, k0, k1] = [h1, h2, k1, k2];
    if (Math.abs(v - a) < 1e-12) break;
    v = 1 / (v - a);
  }
  return reduce({ num: h1, den: k1 });
}

/** A frames-per-second number as an exact rate: NTSC rates (x/1.001) become n*1000/1001. */
export function fpsRational(fps: number): Rational {
  for (const base of [24, 30, 48, 60, 120, 240]) {
    const ntsc = (base * 1000) / 1001;
    if (Math.abs(fps - ntsc) < 0.0015) return { num: base * 1000, den: 1001 };
  }
  return toRational(fps, 1000);
}

export const value = (r: Rational) => r.num / r.den;
export const mul = (r: Rational, n: number, d = 1): Rational => reduce({ num: r.num * n, den: r.den * d });
export const rstr = (r: Rational) => `${r.num}/${r.den}`;

/** A `num:den` or `num/den` ratio (display aspect ratio tags, ffprobe rates); undefined for zero or garbage. */
export function parseRational(s: string | undefined): Rational | undefined {
  const m = /^(\d+)[:/](\d+)$/.exec(s ?? '');
  if (!m || m[2] === '0' || m[1] === '0') return undefined;
  return reduce({ num: Number(m[1]), den: Number(m[2]) });
}
