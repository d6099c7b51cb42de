/** Stage 7, the scaler: its target size and aspect ratio, Lanczos resampling and the AI scalers' classical equivalents. */
import { dropSetting, setSetting } from './applied-options';
import { LIMITS, NAMED_RESOLUTIONS, RESOLUTION_MULTIPLIERS, type ProcessingOptions, type ResolutionSettings } from './options';
import { even, type Geometry, type PlanBuilder } from './plan-builder';
import { value, type Rational } from './rational';
import { throwIssues } from './validate';

/** 7. Scaler (its settings are kept only for the scaler that reads them). */
export function applyScalerStage(b: PlanBuilder, g: Geometry): Geometry {
  const scaler = b.options.filters?.scaler;
  if (scaler && b.options.filterSettings?.resolution) g = applyScaler(b, g, scaler);
  else dropSetting(b.applied, ['resolution', 'dvres2Variant', 'clarityBoost']);
  if (scaler !== 'DVRES2') dropSetting(b.applied, ['dvres2Variant']);
  if (scaler !== 'PABSR1') dropSetting(b.applied, ['clarityBoost']);
  return g;
}

const CLARITY: Record<string, number> = { NONE: 0, MARGINAL: 0.2, VERY_LOW: 0.35, LOW: 0.5, MEDIUM: 0.75, HIGH: 1.0, VERY_HIGH: 1.4 };

/** The scaler's target: size and sample aspect ratio. */
export function scalerTarget(r: ResolutionSettings, g: { width: number; height: number; sar: Rational }): { width: number; height: number; sar: Rational; field: string } {
  const storage = g.width / g.height;
  const display = storage * value(g.sar);
  const arTag = r.aspectRatioTag;
  const aspect = arTag === '16:9' ? 16 / 9 : arTag === '4:3' ? 4 / 3 : arTag === 'STORAGE' || arTag === 'PAR_PRESERVED' ? storage : display;
  const sar = arTag === 'PAR_PRESERVED' ? g.sar : { num: 1, den: 1 };
  if (r.tag && r.tag in RESOLUTION_MULTIPLIERS) {
    const n = RESOLUTION_MULTIPLIERS[r.tag as keyof typeof RESOLUTION_MULTIPLIERS];
    return { width: g.width * n, height: g.height * n, sar: g.sar, field: 'filterSettings.resolution.tag' };
  }
  if (r.tag) {
    const box = NAMED_RESOLUTIONS[r.tag as keyof typeof NAMED_RESOLUTIONS];
    // The picture is fitted into the named frame with its aspect ratio kept (a 4:3 source
    // becomes 1440x1080 for FULL_HD); fixedOutputResolution pads it to the full frame.
    // With PAR_PRESERVED the pixels keep the source's shape, so the storage ratio is fitted.
    const fitAspect = arTag === 'PAR_PRESERVED' ? storage : aspect;
    if (fitAspect >= box.width / box.height) return { width: box.width, height: even(box.width / fitAspect), sar, field: 'filterSettings.resolution.tag' };
    return { width: even(box.height * fitAspect), height: box.height, sar, field: 'filterSettings.resolution.tag' };
  }
  if (r.width !== undefined && r.height !== undefined) return { width: even(r.width), height: even(r.height), sar: { num: 1, den: 1 }, field: 'filterSettings.resolution' };
  if (r.width !== undefined) return { width: even(r.width), height: even(r.width / aspect), sar, field: 'filterSettings.resolution.height' };
  return { width: even(r.height! * aspect), height: even(r.height!), sar, field: 'filterSettings.resolution.width' };
}

function applyScaler(b: PlanBuilder, g: Geometry, scaler: NonNullable<NonNullable<ProcessingOptions['filters']>['scaler']>): Geometry {
  const s = b.options.filterSettings!;
  const r = s.resolution!;
  const t = scalerTarget(r, g);
  if (t.width < LIMITS.minWidth || t.width > LIMITS.maxWidth || t.height < LIMITS.minHeight || t.height > LIMITS.maxHeight) {
    b.issues.add(
      'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
      t.field,
      `the scaler's target is ${t.width}x${t.height}; it must be within ${LIMITS.minWidth}..${LIMITS.maxWidth} x ${LIMITS.minHeight}..${LIMITS.maxHeight}`,
      `${t.width}x${t.height}`,
    );
    throwIssues(b.issues);
  }
  const ai = scaler !== 'SCALE';
  if (ai) {
    // Super-resolution only enlarges: the target may not be below the source's size once its
    // pixel aspect ratio is taken into account (reference code
    // TARGET_RESOLUTION_CANNOT_BE_LOWER_THAN_CALCULATED_ASPECT_RATIO_RESOLUTION).
    const sarV = value(g.sar);
    const tSar = value(t.sar);
    const srcDisplayW = g.width * Math.max(1, sarV / tSar);
    const srcDisplayH = g.height * Math.max(1, tSar / sarV);
    if (t.width < Math.floor(srcDisplayW) - 1 || t.height < Math.floor(srcDisplayH) - 1) {
      b.issues.add(
        'TARGET_RESOLUTION_CANNOT_BE_LOWER_THAN_CALCULATED_ASPECT_RATIO_RESOLUTION',
        t.field,
        `${scaler} only upscales: the target ${t.width}x${t.height} is below the source's ${Math.round(srcDisplayW)}x${Math.round(srcDisplayH)} (aspect ratio applied); use the SCALE scaler to shrink`,
        `${t.width}x${t.height}`,
      );
      throwIssues(b.issues);
    }
  }
  setSetting(b.applied, 'resolution', { ...r, width: t.width, height: t.height });
  const resized = t.width !== g.width || t.height !== g.height;
  const scaleFilter = `scale=w=${t.width}:h=${t.height}:flags=lanczos`;
  if (resized) b.add(scaleFilter, { key: 'scale_lanczos', g: { ...g, width: t.width, height: t.height } });
  const out: Geometry = { ...g, width: t.width, height: t.height, sar: t.sar };
  if (!ai) return out;

  const factor = Math.max(t.width / g.width, t.height / g.height);
  const m = factor > 2 ? 7 : 5;
  let sharpen: string[] = [];
  let what: string;
  if (scaler === 'DVRES2') {
    const variant = s.dvres2Variant ?? 'GENERIC';
    setSetting(b.applied, 'dvres2Variant', variant);
    if (variant === 'FINE_TUNING') sharpen = [`unsharp=3:3:0.6:3:3:0`];
    else if (variant === 'SELFIE_STYLE') sharpen = ['hqdn3d=1.5:1.5:3:3', `unsharp=${m}:${m}:0.4:3:3:0`];
    else sharpen = [`unsharp=${m}:${m}:0.8:3:3:0`];
    what = `DVRES2 (${variant}) is a proprietary AI super-resolution model`;
  } else if (scaler === 'DVRES') {
    sharpen = [`unsharp=${m}:${m}:0.6:3:3:0`];
    what = 'DVRES is a proprietary AI super-resolution model';
  } else {
    const boost = s.clarityBoost ?? 'MEDIUM';
    setSetting(b.applied, 'clarityBoost', boost);
    if ((CLARITY[boost] ?? 0) > 0) sharpen = [`unsharp=${m}:${m}:${CLARITY[boost]}:3:3:0`];
    what = `PABSR1 (clarityBoost ${boost}) is a proprietary AI super-resolution model`;
  }
  for (const f of sharpen) b.add(f, { key: f.startsWith('hqdn3d') ? 'hqdn3d' : 'unsharp', g: out });
  const appliedAs = [resized ? scaleFilter : 'no resampling (same size)', ...sharpen].join(',');
  b.note(
    'filters.scaler',
    scaler,
    appliedAs,
    `${what}; this installation applies its best classical equivalent: Lanczos resampling followed by an unsharp mask${sharpen.length ? '' : ' (none at this clarity)'}. It does not synthesise detail the way a trained model does.`,
  );
  return out;
}
