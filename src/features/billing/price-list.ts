/**
 * The price list: per product a USD price (up to 6 decimals) and a whole-credits price per unit,
 * and the volume discount by gigapixels per job. A typed default lives here; an operator
 * replaces it with a JSON file of the same shape (VIDMILL_PRICE_LIST_FILE).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

const price = z.object({
  usd: z
    .number()
    .min(0)
    .refine((v) => Math.abs(v * 1e6 - Math.round(v * 1e6)) < 1e-6, 'at most 6 decimals'),
  credits: z.number().int().min(0),
});

export const priceListSchema = z
  .object({
    /** Per gigapixel of output, by encoder name. */
    encoders: z.record(z.string().min(1), price),
    /** Per gigapixel of output, by filter name. */
    filters: z.record(z.string().min(1), price),
    /** Base processing per gigapixel. */
    processing: price,
    /**
     * Per GB-month stored: 10^9 bytes kept for a whole UTC calendar month (a day of a 30-day month
     * is 1/30). Storage billing (storage-billing.service.ts) charges a team's stored bytes with it,
     * each month's running total rounded up once (storage-pricing.ts); an appraisal's storage
     * estimate is its output kept one month.
     */
    storage: price,
    /** Per GB downloaded, by download category. */
    download: z.object({ DOWNLOAD_S3: price, DOWNLOAD_HTTPS: price }),
    volumeDiscount: z.object({
      /** Gigapixels per job at which the discount stops growing. */
      capGp: z.number().positive(),
      /** Discount reached at `capGp`, in percent. */
      maxPercentage: z.number().min(0).max(100),
      /** Gigapixels every wallet job counts as at least (the base volume discount). */
      baseGp: z.number().min(0),
    }),
  })
  .strict();

export type PriceList = z.infer<typeof priceListSchema>;
export type ProductPrice = z.infer<typeof price>;

export const DEFAULT_PRICE_LIST: PriceList = {
  encoders: {
    'H.264 / AVC': { usd: 0.0075, credits: 1 },
    'H.265 / HEVC': { usd: 0.01, credits: 1 },
    'Apple ProRes': { usd: 0.0125, credits: 2 },
    'Avid DNxHD / DNxHR': { usd: 0.0125, credits: 2 },
    'MPEG-2': { usd: 0.0075, credits: 1 },
    FFV1: { usd: 0.01, credits: 1 },
    AV1: { usd: 0.015, credits: 2 },
  },
  filters: {
    'Super-resolution 2x': { usd: 0.015, credits: 2 },
    'Super-resolution 4x': { usd: 0.03, credits: 3 },
    Denoise: { usd: 0.01, credits: 1 },
    Deinterlace: { usd: 0.005, credits: 1 },
    'Frame rate conversion': { usd: 0.01, credits: 1 },
    Stabilization: { usd: 0.01, credits: 1 },
  },
  processing: { usd: 0.002, credits: 1 },
  storage: { usd: 0.024, credits: 3 },
  download: { DOWNLOAD_S3: { usd: 0.09, credits: 9 }, DOWNLOAD_HTTPS: { usd: 0.085, credits: 9 } },
  volumeDiscount: { capGp: 1000, maxPercentage: 25, baseGp: 0 },
};

/** Reads and validates a price-list JSON file; a bad file is a configuration error. */
export function loadPriceListFile(file: string): PriceList {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read price list ${file}: ${(err as Error).message}`, { cause: err });
  }
  const parsed = priceListSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(`invalid price list ${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

/** Volume discount in percent (two decimals) for a job of `gp` gigapixels. */
export function volumeDiscountPercentage(list: PriceList, gp: number): number {
  const { capGp, maxPercentage, baseGp } = list.volumeDiscount;
  const counted = Math.min(Math.max(gp, baseGp), capGp);
  return Math.round((maxPercentage * counted * 100) / capGp) / 100;
}
