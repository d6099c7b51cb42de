/**
 * The picture filter stages after deinterlacing, in the contract's order: reshaper (crop),
 * prescaler, denoiser, stabilizer, augmenter, scaler (scaler.ts), frame-rate converter, debander,
 * post-processor (film grain); then the fixed output resolution (centre crop, black pad). Each
 * stage adds its filters to the chain, its work to the estimate, and records in the applied
 * options what it used (the settings of a stage that is off are dropped).
 */
import { dropSetting, setSetting } from './applied-options';
import type { Encoding } from './encoding-choice';
import { TRANSFORMS_TOKEN } from './ffmpeg-args';
import { num } from './ffmpeg-syntax';
import { filmGrainFilter } from './film-grain';
import { FRAME_RATE_TAGS, NAMED_RESOLUTIONS, type ProcessingOptions } from './options';
import { even, evenDown, type Geometry, type PlanBuilder } from './plan-builder';
import { fpsRational, reduce, rstr, value } from './rational';
import { applyScalerStage } from './scaler';
import { throwIssues } from './validate';

/** Stages 2 to 10 and the fixed output resolution; returns the picture they make. */
export function applyPictureFilters(b: PlanBuilder, g: Geometry, enc: Encoding): Geometry {
  g = applyReshaper(b, g);
  g = applyPrescaler(b, g);
  applyDenoiser(b, g);
  applyStabilizer(b, g);
  applyAugmenter(b, g);
  g = applyScalerStage(b, g);
  g = applyFrameRateConverter(b, g);
  applyDebander(b, g, enc);
  applyPostProcessor(b, g);
  return applyFixedOutputResolution(b, g);
}

/** 2. Reshaper: crop. */
function applyReshaper(b: PlanBuilder, g: Geometry): Geometry {
  if (b.options.filters?.reshaper === 'CROP') return cropTo(b, g);
  dropSetting(b.applied, ['normalizedCropCoordinates', 'cropRectangle']);
  return g;
}

/** 3. Prescaler: Lanczos to the prescaled resolution (the analysis pass sees it too). */
function applyPrescaler(b: PlanBuilder, g: Geometry): Geometry {
  const s = b.options.filterSettings ?? {};
  if (b.options.filters?.prescaler === 'SCALE' && s.prescaledResolution) {
    const { width, height } = s.prescaledResolution;
    const w = even(width);
    const h = even(height);
    if (w !== g.width || h !== g.height) {
      b.add(`scale=w=${w}:h=${h}:flags=lanczos`, { key: 'scale_lanczos', g: { ...g, width: w, height: h } }, true);
      g = { ...g, width: w, height: h, sar: reduce({ num: g.sar.num * g.width * h, den: g.sar.den * g.height * w }) };
    }
  } else dropSetting(b.applied, ['prescaledResolution']);
  return g;
}

/** 4. Denoiser. */
function applyDenoiser(b: PlanBuilder, g: Geometry): void {
  const denoiser = b.options.filters?.denoiser;
  if (denoiser === 'HQDN3D') b.add('hqdn3d=4:3:6:4.5', { key: 'hqdn3d', g });
  else if (denoiser === 'DENOISE') {
    const filter = 'nlmeans=s=3:p=7:r=9';
    b.add(filter, { key: 'nlmeans', g });
    b.note(
      'filters.denoiser',
      'DENOISE',
      filter,
      'DENOISE is a proprietary AI denoiser; this installation applies its best classical equivalent, non-local means (ffmpeg nlmeans, strength 3, 7x7 patches, 9x9 search window).',
    );
  }
}

/** 5. Stabilizer: vidstab in two passes (detection in the analysis pass) when this ffmpeg has it, else deshake. */
function applyStabilizer(b: PlanBuilder, g: Geometry): void {
  if (b.options.filters?.stabilizer !== 'DEJIT') return;
  if (b.has('vidstabdetect') && b.has('vidstabtransform')) {
    b.analysisChain = [...b.geometryChain, `vidstabdetect=shakiness=5:accuracy=15:stepsize=6:result=${TRANSFORMS_TOKEN}`];
    b.work.push({ key: 'vidstabdetect', pixelsPerSecond: g.width * g.height * value(g.fps), analysis: true });
    b.add(`vidstabtransform=input=${TRANSFORMS_TOKEN}:smoothing=10:optzoom=1:interpol=bicubic`, { key: 'vidstabtransform', g });
  } else {
    b.add('deshake', { key: 'deshake', g });
  }
}

/** 6. Augmenter. */
function applyAugmenter(b: PlanBuilder, g: Geometry): void {
  if (b.options.filters?.augmenter === 'FACEFORWARD' && b.options.filterSettings?.faceForward) faceForward(b, g);
  else dropSetting(b.applied, ['faceForward']);
}

/** 8. Frame-rate converter. */
function applyFrameRateConverter(b: PlanBuilder, g: Geometry): Geometry {
  const frc = b.options.filters?.frameRateConverter;
  if (frc && b.options.filterSettings?.frameRate) return convertFrameRate(b, g, frc);
  dropSetting(b.applied, ['frameRate']);
  return g;
}

/** 9. Debander: gradfun on 8-bit output, deband otherwise. */
function applyDebander(b: PlanBuilder, g: Geometry, enc: Encoding): void {
  if (b.options.filters?.debander !== 'GRADFUN') return;
  if (enc.pixel.bitDepth === 8 && b.has('gradfun')) b.add('gradfun=strength=1.2:radius=16', { key: 'gradfun', g });
  else {
    const filter = 'deband=1thr=0.02:2thr=0.02:3thr=0.02:range=16:blur=1';
    b.add(filter, { key: 'deband', g });
    b.note('filters.debander', 'GRADFUN', filter, `gradfun works on 8-bit pictures only; for ${enc.pixel.bitDepth}-bit output the equivalent deband filter is used`);
  }
}

/** 10. Post-processor: film grain. */
function applyPostProcessor(b: PlanBuilder, g: Geometry): void {
  if (b.options.filters?.postProcessor === 'FILMGRAIN' && b.options.filterSettings?.filmGrain) filmGrain(b, g);
  else dropSetting(b.applied, ['filmGrain']);
}

/** Fixed output resolution: centre crop where larger, black pad where smaller. */
function applyFixedOutputResolution(b: PlanBuilder, g: Geometry): Geometry {
  const fixed = b.options.processingSettings?.fixedOutputResolution;
  if (!fixed) return g;
  const box = NAMED_RESOLUTIONS[fixed];
  if (g.width > box.width || g.height > box.height) {
    const cw = Math.min(g.width, box.width);
    const ch = Math.min(g.height, box.height);
    b.add(`crop=w=${cw}:h=${ch}:x=${evenDown((g.width - cw) / 2)}:y=${evenDown((g.height - ch) / 2)}`);
    g = { ...g, width: cw, height: ch };
  }
  if (g.width < box.width || g.height < box.height) {
    b.add(`pad=w=${box.width}:h=${box.height}:x=${evenDown((box.width - g.width) / 2)}:y=${evenDown((box.height - g.height) / 2)}:color=black`, { key: 'pad', g: { ...g, ...box } });
    g = { ...g, width: box.width, height: box.height };
  }
  return g;
}

function cropTo(b: PlanBuilder, g: Geometry): Geometry {
  const s = b.options.filterSettings ?? {};
  let x: number;
  let y: number;
  let w: number;
  let h: number;
  if (s.normalizedCropCoordinates) {
    const n = s.normalizedCropCoordinates;
    x = evenDown(n.x1 * g.width);
    y = evenDown(n.y1 * g.height);
    w = Math.min(evenDown(n.x2 * g.width + 1) - x, evenDown(g.width - x));
    h = Math.min(evenDown(n.y2 * g.height + 1) - y, evenDown(g.height - y));
  } else {
    const r = s.cropRectangle!;
    if ((r.x ?? 0) + r.width > g.width || (r.y ?? 0) + r.height > g.height) {
      b.issues.add('VALIDATION_ERROR', 'filterSettings.cropRectangle', `the crop rectangle reaches outside the ${g.width}x${g.height} frame`, r);
      throwIssues(b.issues);
    }
    x = evenDown(r.x ?? 0);
    y = evenDown(r.y ?? 0);
    w = evenDown(r.width + (r.x ?? 0) - x);
    h = evenDown(r.height + (r.y ?? 0) - y);
  }
  if (w < 2 || h < 2) {
    b.issues.add(
      'VALIDATION_ERROR',
      s.normalizedCropCoordinates ? 'filterSettings.normalizedCropCoordinates' : 'filterSettings.cropRectangle',
      `the crop area is smaller than 2x2 pixels of the ${g.width}x${g.height} frame`,
    );
    throwIssues(b.issues);
  }
  setSetting(b.applied, 'cropRectangle', { width: w, height: h, x, y });
  if (w === g.width && h === g.height) return g;
  b.add(`crop=w=${w}:h=${h}:x=${x}:y=${y}`, undefined, true);
  return { ...g, width: w, height: h };
}

function faceForward(b: PlanBuilder, g: Geometry): void {
  const ff = b.options.filterSettings!.faceForward!;
  const parts: string[] = [];
  if (ff.autoWhiteBalance) parts.push('grayworld');
  if (ff.colorBoost > 0) parts.push(`vibrance=intensity=${num((ff.colorBoost / 30) * 0.6, 3)}`);
  if (ff.relightIntensity > 0) parts.push(`eq=gamma=${num(1 + (ff.relightIntensity / 200) * 0.4, 3)}`);
  for (const p of parts) b.add(p, { key: p.split('=')[0]!, g });
  b.note(
    'filters.augmenter',
    'FACEFORWARD',
    parts.join(',') || 'nothing (all strengths 0)',
    'FACEFORWARD is a proprietary AI face enhancer; this installation has no face model and applies the classical equivalent to the whole frame: grey-world white balance (autoWhiteBalance), vibrance (colorBoost 0..30 -> intensity 0..0.6) and a gamma lift for relighting (relightIntensity 0..200% -> gamma 1..1.4).',
  );
}

function convertFrameRate(b: PlanBuilder, g: Geometry, frc: NonNullable<NonNullable<ProcessingOptions['filters']>['frameRateConverter']>): Geometry {
  const r = b.options.filterSettings!.frameRate!;
  const target = r.tag ? FRAME_RATE_TAGS[r.tag] : fpsRational(r.fps!);
  setSetting(b.applied, 'frameRate', { ...(r.tag ? { tag: r.tag } : {}), fps: Math.round(value(target) * 1000) / 1000 });
  const rate = rstr(target);
  let filter: string;
  let key: string;
  if (frc === 'FPS') [filter, key] = [`fps=fps=${rate}`, 'fps'];
  else if (frc === 'FBLEND') [filter, key] = [`framerate=fps=${rate}`, 'framerate'];
  // minterpolate stops at the last input frame's time, a frame or two short of the end: two
  // repeated frames at the end let it fill the last interval (the output is cut to the range).
  else if (frc === 'MCINTERPOLATE') [filter, key] = [`tpad=stop_mode=clone:stop=2,minterpolate=fps=${rate}:mi_mode=mci:mc_mode=obmc:me_mode=bilat`, 'minterpolate'];
  else [filter, key] = [`tpad=stop_mode=clone:stop=2,minterpolate=fps=${rate}:mi_mode=mci:mc_mode=aobmc:me_mode=bidir:vsbmc=1`, 'minterpolate_vfi'];
  const out = { ...g, fps: target };
  b.add(filter, { key, g: out });
  if (frc === 'VFI') {
    b.note(
      'filters.frameRateConverter',
      'VFI',
      filter,
      'VFI is a proprietary AI frame interpolation model; this installation applies its best classical equivalent, motion-compensated interpolation with ffmpeg minterpolate (adaptive overlapped block motion compensation, bidirectional motion estimation, variable-size blocks).',
    );
  }
  return out;
}

function filmGrain(b: PlanBuilder, g: Geometry): void {
  const fg = b.options.filterSettings!.filmGrain!;
  if (fg.grainStrength <= 0) {
    b.note('filters.postProcessor', 'FILMGRAIN', 'not applied', 'grainStrength 0 adds no grain');
    return;
  }
  b.add(filmGrainFilter(g.width, g.height, fg.grainSize, fg.grainStrength), { key: 'filmgrain', g });
}
