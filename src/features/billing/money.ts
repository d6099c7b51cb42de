/**
 * Money as integers: micro-USD (1 USD = 1,000,000) inside, rendered as USD numbers with at most
 * three decimals. Ledger amounts are whole mills (multiples of 1,000 micro-USD), so every
 * rendered amount is exact and rendered sums equal the sum of rendered items. Unit prices are
 * the price list's, up to 6 decimals, and are rendered as they are (`unitPriceToUsd`).
 */
export const MICROS_PER_USD = 1_000_000;
export const MICROS_PER_MILL = 1_000;

/** USD (decimal number, up to 6 decimals) to micro-USD. */
export function usdToMicros(usd: number): number {
  return Math.round(usd * MICROS_PER_USD);
}

/** Micro-USD rounded half away from zero to whole mills (0.001 USD). */
export function roundToMills(micros: number): number {
  const sign = micros < 0 ? -1 : 1;
  return sign * Math.round(Math.abs(micros) / MICROS_PER_MILL) * MICROS_PER_MILL || 0;
}

/** Micro-USD to a USD number with at most 3 decimals (0 instead of -0). */
export function microsToUsd(micros: number): number {
  const v = Math.round(micros / MICROS_PER_MILL) / 1000;
  return v === 0 ? 0 : v;
}

/** A unit price in micro-USD to USD as the price list states it (up to 6 decimals, never rounded). */
export function unitPriceToUsd(micros: number): number {
  return micros / MICROS_PER_USD;
}

/** A database BIGINT/aggregate (number, string or null) as a safe integer. */
export function int(value: unknown): number {
  if (value === null || value === undefined) return 0;
  const n = Number(value);
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the message shows the driver's value as String() renders it
  if (!Number.isSafeInteger(n)) throw new Error(`not a safe integer: ${String(value)}`);
  return n;
}
