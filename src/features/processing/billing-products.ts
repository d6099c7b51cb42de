/**
 * The products a processing job is billed for, from its options and plan: the encoder of the
 * output, the filters that ran (by price-list name), and base processing, each by output
 * gigapixels. Filters without a price (crop, prescale, colour) are part of base processing.
 */
import type { ProductUse } from '../billing';
import type { EnginePlan } from './engine';

const ENCODERS: Array<[RegExp, string]> = [
  [/^PRORES/i, 'Apple ProRes'],
  [/^DNX/i, 'Avid DNxHD / DNxHR'],
  [/^(HEVC|H265|HEVC_.*)$/i, 'H.265 / HEVC'],
  [/^(MPEG2|XDCAM)/i, 'MPEG-2'],
  [/^FFV1/i, 'FFV1'],
  [/^AV1/i, 'AV1'],
  [/^(H264|AVC)/i, 'H.264 / AVC'],
];

export function encoderProduct(codec: string): string {
  return ENCODERS.find(([re]) => re.test(codec))?.[1] ?? 'H.264 / AVC';
}

interface ProductOptions {
  encodingProfile?: string;
  filters?: { scaler?: unknown; deinterlacer?: unknown; denoiser?: unknown; frameRateConverter?: unknown; stabilizer?: unknown };
}

export function processingProducts(options: Record<string, unknown>, plan: EnginePlan, source: { height: number }, gigapixels: number): ProductUse[] {
  const gp = Math.max(gigapixels, 0);
  const opts = options as ProductOptions;
  const uses: ProductUse[] = [{ productName: encoderProduct(opts.encodingProfile ?? plan.output.codec), category: 'ENCODER', amount: gp }];
  const f = opts.filters ?? {};
  if ((['DVRES2', 'DVRES', 'PABSR1'] as unknown[]).includes(f.scaler)) {
    const ratio = source.height > 0 ? plan.output.height / source.height : 1;
    uses.push({ productName: ratio > 2 ? 'Super-resolution 4x' : 'Super-resolution 2x', category: 'FILTER', amount: gp });
  }
  if (f.deinterlacer) uses.push({ productName: 'Deinterlace', category: 'FILTER', amount: gp });
  if (f.denoiser) uses.push({ productName: 'Denoise', category: 'FILTER', amount: gp });
  if (f.frameRateConverter) uses.push({ productName: 'Frame rate conversion', category: 'FILTER', amount: gp });
  if (f.stabilizer) uses.push({ productName: 'Stabilization', category: 'FILTER', amount: gp });
  uses.push({ productName: 'Processing', category: 'PROCESSING', amount: gp });
  return uses;
}
