/**
 * Static validation of processing options: every rule that needs no source video. A
 * configuration is checked with this when it is saved; an appraisal or a start also builds the
 * plan (plan.ts), which runs these rules again and then the source-dependent ones.
 *
 * Problems are collected, not thrown one by one: the error's `errorCode` is the most specific
 * code found (container/codec first, then resolution, colour, other validation, unsupported),
 * and `validationErrors` lists every problem with its field path inside the options.
 */
import { FULL_CAPABILITIES, type EngineCapabilities } from './capabilities';
import { checkProfile, isHdrTransfer, profileFields } from './colour';
import { CODEC_PIXELS, ENCODER_OF, PROFILE_SPECS, PROGRESSIVE_ONLY, xdcamBitrate } from './encoders';
import { IssueList, ProcessingOptionsError, type ProcessingErrorCode } from './errors';
import { CODECS, CONTAINERS, CONTAINER_CODECS, ENCODING_PROFILES, FRAME_RATE_TAGS, LIMITS, profileCodec, type OutputCodec, type ProcessingOptions } from './options';

export { ProcessingOptionsError } from './errors';
export type { ProcessingIssue, ProcessingErrorCode } from './errors';

const PRIORITY: ProcessingErrorCode[] = [
  'INVALID_START_POSITION',
  'INVALID_END_POSITION',
  'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC',
  'MISSING_CUSTOM_RESOLUTION',
  'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
  'TARGET_RESOLUTION_CANNOT_BE_LOWER_THAN_CALCULATED_ASPECT_RATIO_RESOLUTION',
  'INVALID_INPUT_COLOR_CONVERSION',
  'INVALID_OUTPUT_COLOR_CONVERSION',
  'VALIDATION_ERROR',
  'UNSUPPORTED_PROCESSING_OPTION',
];

/** Throws the collected issues, most specific code first. */
export function throwIssues(issues: IssueList): void {
  if (!issues.length) return;
  const sorted = issues.issues.map((issue, i) => ({ issue, i })).sort((a, b) => PRIORITY.indexOf(a.issue.code) - PRIORITY.indexOf(b.issue.code) || a.i - b.i);
  throw new ProcessingOptionsError(sorted.map((s) => s.issue));
}

/**
 * Throws a ProcessingOptionsError (400) when the options break a rule that needs no source.
 * `capabilities` is this installation's ffmpeg (`engineCapabilities(bins)`); without it every
 * filter and encoder the engine uses is assumed present.
 */
export function validateOptions(options: ProcessingOptions, capabilities: EngineCapabilities = FULL_CAPABILITIES): void {
  const issues = new IssueList();
  collectStaticIssues(options, capabilities, issues);
  throwIssues(issues);
}

/** The codec family the options select without looking at the source, if any. */
export function staticCodec(options: ProcessingOptions): OutputCodec | undefined {
  if (options.encodingProfile) return profileCodec(options.encodingProfile);
  return options.encodingConfiguration?.codec;
}

// Known keys at each level: the HTTP validator refuses unknown properties; built-in and stored
// options reach the engine without it, so the engine checks again.
const KNOWN: Record<string, readonly string[]> = {
  '': ['encodingProfile', 'encodingConfiguration', 'container', 'filters', 'filterSettings', 'processingSettings'],
  encodingConfiguration: ['codec', 'pixelFormat', 'bitrate'],
  'encodingConfiguration.pixelFormat': ['yuv', 'bitDepth', 'name'],
  filters: ['deinterlacer', 'reshaper', 'prescaler', 'denoiser', 'stabilizer', 'augmenter', 'scaler', 'frameRateConverter', 'debander', 'postProcessor'],
  filterSettings: [
    'resolution',
    'frameRate',
    'normalizedCropCoordinates',
    'cropRectangle',
    'prescaledResolution',
    'faceForward',
    'dvres2Variant',
    'clarityBoost',
    'filmGrain',
    'interlacedFieldOrderMode',
  ],
  'filterSettings.resolution': ['tag', 'width', 'height', 'aspectRatioTag'],
  'filterSettings.frameRate': ['tag', 'fps'],
  'filterSettings.normalizedCropCoordinates': ['x1', 'y1', 'x2', 'y2'],
  'filterSettings.cropRectangle': ['width', 'height', 'x', 'y'],
  'filterSettings.prescaledResolution': ['width', 'height'],
  'filterSettings.faceForward': ['colorBoost', 'autoWhiteBalance', 'relightIntensity', 'backgroundBlur'],
  'filterSettings.filmGrain': ['grainSize', 'grainStrength'],
  processingSettings: ['inputColorSpaceConversion', 'outputColorSpaceConversion', 'fixedOutputResolution', 'outputScanning'],
  'processingSettings.inputColorSpaceConversion': ['mappingMode', 'colorProfile', 'metadataOnly', 'toneMapper'],
  'processingSettings.outputColorSpaceConversion': ['mappingMode', 'colorProfile', 'metadataOnly', 'inverseToneMapper'],
  'processingSettings.inputColorSpaceConversion.toneMapper': ['algorithm', 'outputNits'],
  'processingSettings.outputColorSpaceConversion.inverseToneMapper': ['algorithm', 'outputNits', 'saturationBoost'],
};
const COLORIMETRY_KEYS = ['colorSpace', 'colorPrimaries', 'transferCharacteristics', 'colorRange', 'hdrFormat', 'masteringDisplay', 'maxCll', 'maxFall'];
const MASTERING_KEYS = ['tag', 'red', 'green', 'blue', 'whitePoint', 'minLuminance', 'maxLuminance'];

function knownKeysFor(path: string): readonly string[] | undefined {
  if (KNOWN[path]) return KNOWN[path];
  if (/ColorSpaceConversion\.colorProfile$/.test(path)) return COLORIMETRY_KEYS;
  if (/colorProfile\.masteringDisplay$/.test(path)) return MASTERING_KEYS;
  if (/masteringDisplay\.(red|green|blue|whitePoint)$/.test(path)) return ['x', 'y'];
  return undefined;
}

function checkUnknownKeys(value: unknown, path: string, issues: IssueList): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    if (value !== undefined && path) issues.add('VALIDATION_ERROR', path, 'must be an object', value);
    return;
  }
  const known = knownKeysFor(path);
  if (!known) return;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const child = path ? `${path}.${k}` : k;
    if (!known.includes(k)) {
      issues.add('VALIDATION_ERROR', child, 'unknown option');
      continue;
    }
    if (v !== null && typeof v === 'object') checkUnknownKeys(v, child, issues);
  }
}

function oneOf<T extends string | number>(issues: IssueList, field: string, value: unknown, allowed: readonly T[]): value is T {
  if (value === undefined || value === null) return false;
  if (!(allowed as readonly unknown[]).includes(value)) {
    issues.add('VALIDATION_ERROR', field, `must be one of ${allowed.join(', ')}`, value);
    return false;
  }
  return true;
}

function inRange(issues: IssueList, code: ProcessingErrorCode, field: string, value: unknown, min: number, max: number, integer = true): boolean {
  if (value === undefined) return true;
  if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    issues.add('VALIDATION_ERROR', field, integer ? 'must be an integer' : 'must be a number', value);
    return false;
  }
  if (value < min || value > max) {
    issues.add(code, field, `must be between ${min} and ${max}`, value);
    return false;
  }
  return true;
}

function needFilter(issues: IssueList, caps: EngineCapabilities, field: string, filters: string[], what: string): boolean {
  const missing = filters.filter((f) => !caps.filters.has(f));
  if (missing.length) {
    issues.unsupported(field, `${what} needs the ffmpeg filter${missing.length > 1 ? 's' : ''} ${missing.join(', ')}, which this ffmpeg lacks`);
    return false;
  }
  return true;
}

export function collectStaticIssues(options: ProcessingOptions, caps: EngineCapabilities, issues: IssueList): void {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    issues.add('VALIDATION_ERROR', 'options', 'must be an object');
    return;
  }
  checkUnknownKeys(options, '', issues);
  checkEncoding(options, caps, issues);
  checkFilters(options, caps, issues);
  checkProcessingSettings(options, caps, issues);
}

function checkEncoding(options: ProcessingOptions, caps: EngineCapabilities, issues: IssueList): void {
  const { encodingProfile: profile, encodingConfiguration: enc, container } = options;
  oneOf(issues, 'container', container, CONTAINERS);
  if (profile !== undefined && oneOf(issues, 'encodingProfile', profile, ENCODING_PROFILES)) {
    const spec = PROFILE_SPECS[profile];
    if (spec.unsupported) issues.unsupported('encodingProfile', spec.unsupported, profile);
    else if (!caps.encoders.has(ENCODER_OF[spec.codec])) issues.unsupported('encodingProfile', `this ffmpeg has no ${ENCODER_OF[spec.codec]} encoder`, profile);
  }
  // With a profile, encodingConfiguration is ignored (contract), so it is not checked either.
  if (profile === undefined && enc) {
    const codec = enc.codec;
    if (codec !== undefined && oneOf(issues, 'encodingConfiguration.codec', codec, CODECS)) {
      if (!caps.encoders.has(ENCODER_OF[codec])) issues.unsupported('encodingConfiguration.codec', `this ffmpeg has no ${ENCODER_OF[codec]} encoder`, codec);
    }
    const pf = enc.pixelFormat;
    if (pf) {
      oneOf(issues, 'encodingConfiguration.pixelFormat.yuv', pf.yuv, ['4:2:0', '4:2:2', '4:4:4'] as const);
      oneOf(issues, 'encodingConfiguration.pixelFormat.bitDepth', pf.bitDepth, [8, 10, 12] as const);
      if (codec && CODECS.includes(codec)) {
        const can = CODEC_PIXELS[codec];
        const yuv = pf.yuv ?? '4:2:0';
        const depth = pf.bitDepth ?? 8;
        if (!can.yuv.includes(yuv)) issues.unsupported('encodingConfiguration.pixelFormat.yuv', `${codec} cannot be ${yuv} here (${can.why})`, yuv);
        if (!can.bitDepth.includes(depth)) issues.unsupported('encodingConfiguration.pixelFormat.bitDepth', `${codec} cannot be ${depth}-bit here (${can.why})`, depth);
      }
    }
    if (enc.bitrate !== undefined) {
      if (typeof enc.bitrate !== 'number' || !Number.isInteger(enc.bitrate) || enc.bitrate < LIMITS.minBitrate) {
        issues.add('VALIDATION_ERROR', 'encodingConfiguration.bitrate', `must be an integer of at least ${LIMITS.minBitrate} bits/s`, enc.bitrate);
      } else if (codec === 'FFV1') {
        issues.unsupported('encodingConfiguration.bitrate', 'FFV1 is lossless and has no bitrate to set', enc.bitrate);
      } else if (codec === 'XDCAM') {
        const fixed = xdcamBitrate(pf?.yuv ?? '4:2:2');
        if (enc.bitrate !== fixed) issues.unsupported('encodingConfiguration.bitrate', `XDCAM ${pf?.yuv === '4:2:0' ? 'HD' : 'HD422'} has a fixed bitrate of ${fixed} bits/s`, enc.bitrate);
      }
    }
  }
  const codec = staticCodec(options);
  if (container && CONTAINERS.includes(container) && codec && CONTAINER_CODECS[container] && !CONTAINER_CODECS[container].includes(codec)) {
    const name = codec === 'DNXHR' ? 'DNxHR' : codec === 'DNXHD' ? 'DNxHD' : codec === 'PRORES' ? 'ProRes' : codec;
    issues.add('CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC', 'container', `${container} cannot hold ${name}; it holds ${CONTAINER_CODECS[container].join(', ')}`, container);
  }
}

function checkFilters(options: ProcessingOptions, caps: EngineCapabilities, issues: IssueList): void {
  const f = options.filters ?? {};
  const s = options.filterSettings ?? {};

  if (oneOf(issues, 'filters.deinterlacer', f.deinterlacer, ['DEINT', 'YADIF', 'BWDIF', 'WESTON3F'] as const)) {
    const filter = { DEINT: 'bwdif', BWDIF: 'bwdif', YADIF: 'yadif', WESTON3F: 'w3fdif' }[f.deinterlacer];
    needFilter(issues, caps, 'filters.deinterlacer', [filter], f.deinterlacer);
    if (f.deinterlacer === 'WESTON3F' && !s.interlacedFieldOrderMode) {
      issues.add('VALIDATION_ERROR', 'filterSettings.interlacedFieldOrderMode', 'the WESTON3F deinterlacer needs interlacedFieldOrderMode');
    }
  }
  if (s.interlacedFieldOrderMode !== undefined) {
    oneOf(issues, 'filterSettings.interlacedFieldOrderMode', s.interlacedFieldOrderMode, ['AUTO_METADATA', 'AUTO_SEGMENT_ANALYSIS', 'TOP_FIELD_FIRST', 'BOTTOM_FIELD_FIRST'] as const);
  }

  if (oneOf(issues, 'filters.reshaper', f.reshaper, ['CROP'] as const)) {
    needFilter(issues, caps, 'filters.reshaper', ['crop'], 'CROP');
    const n = s.normalizedCropCoordinates;
    const r = s.cropRectangle;
    if (!n && !r) {
      issues.add('VALIDATION_ERROR', 'filterSettings.normalizedCropCoordinates', 'the CROP reshaper needs normalizedCropCoordinates (or a cropRectangle)');
    }
    if (n) {
      let ok = true;
      for (const k of ['x1', 'y1', 'x2', 'y2'] as const) ok = inRange(issues, 'VALIDATION_ERROR', `filterSettings.normalizedCropCoordinates.${k}`, n[k], 0, 1, false) && ok;
      if (ok && !(n.x2 > n.x1)) issues.add('VALIDATION_ERROR', 'filterSettings.normalizedCropCoordinates.x2', 'x2 must be greater than x1', n.x2);
      if (ok && !(n.y2 > n.y1)) issues.add('VALIDATION_ERROR', 'filterSettings.normalizedCropCoordinates.y2', 'y2 must be greater than y1', n.y2);
    } else if (r) {
      inRange(issues, 'VALIDATION_ERROR', 'filterSettings.cropRectangle.width', r.width, 1, 1e6);
      inRange(issues, 'VALIDATION_ERROR', 'filterSettings.cropRectangle.height', r.height, 1, 1e6);
      inRange(issues, 'VALIDATION_ERROR', 'filterSettings.cropRectangle.x', r.x, 0, 1e6);
      inRange(issues, 'VALIDATION_ERROR', 'filterSettings.cropRectangle.y', r.y, 0, 1e6);
    }
  }

  if (oneOf(issues, 'filters.prescaler', f.prescaler, ['SCALE'] as const)) {
    needFilter(issues, caps, 'filters.prescaler', ['scale'], 'SCALE');
    const p = s.prescaledResolution;
    if (!p) issues.add('MISSING_CUSTOM_RESOLUTION', 'filterSettings.prescaledResolution', 'the SCALE prescaler needs prescaledResolution (width and height)');
    else {
      if (p.width === undefined) issues.add('MISSING_CUSTOM_RESOLUTION', 'filterSettings.prescaledResolution.width', 'width is required');
      if (p.height === undefined) issues.add('MISSING_CUSTOM_RESOLUTION', 'filterSettings.prescaledResolution.height', 'height is required');
      inRange(issues, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'filterSettings.prescaledResolution.width', p.width, LIMITS.minWidth, LIMITS.maxWidth);
      inRange(issues, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'filterSettings.prescaledResolution.height', p.height, LIMITS.minHeight, LIMITS.maxHeight);
    }
  }

  if (oneOf(issues, 'filters.denoiser', f.denoiser, ['DENOISE', 'HQDN3D'] as const)) {
    needFilter(issues, caps, 'filters.denoiser', [f.denoiser === 'HQDN3D' ? 'hqdn3d' : 'nlmeans'], f.denoiser);
  }

  if (oneOf(issues, 'filters.stabilizer', f.stabilizer, ['DEJIT'] as const)) {
    const vidstab = caps.filters.has('vidstabdetect') && caps.filters.has('vidstabtransform');
    if (!vidstab) needFilter(issues, caps, 'filters.stabilizer', ['deshake'], 'DEJIT');
  }

  if (oneOf(issues, 'filters.augmenter', f.augmenter, ['FACEFORWARD'] as const)) {
    const ff = s.faceForward;
    if (!ff) issues.add('VALIDATION_ERROR', 'filterSettings.faceForward', 'the FACEFORWARD augmenter needs faceForward settings');
    else {
      inRange(issues, 'VALIDATION_ERROR', 'filterSettings.faceForward.colorBoost', ff.colorBoost, 0, 30);
      inRange(issues, 'VALIDATION_ERROR', 'filterSettings.faceForward.relightIntensity', ff.relightIntensity, 0, 200);
      if (inRange(issues, 'VALIDATION_ERROR', 'filterSettings.faceForward.backgroundBlur', ff.backgroundBlur, 0, 20) && ff.backgroundBlur > 0) {
        issues.unsupported(
          'filterSettings.faceForward.backgroundBlur',
          'blurring the background needs a person segmentation model; the classical FACEFORWARD equivalent works on the whole frame (set backgroundBlur to 0)',
          ff.backgroundBlur,
        );
      }
      const need = ['eq', 'vibrance', ...(ff.autoWhiteBalance ? ['grayworld'] : [])];
      needFilter(issues, caps, 'filters.augmenter', need, 'FACEFORWARD');
    }
  }

  if (oneOf(issues, 'filters.scaler', f.scaler, ['DVRES2', 'DVRES', 'PABSR1', 'SCALE'] as const)) {
    needFilter(issues, caps, 'filters.scaler', f.scaler === 'SCALE' ? ['scale'] : ['scale', 'unsharp'], f.scaler);
    const r = s.resolution;
    if (!r) issues.add('MISSING_CUSTOM_RESOLUTION', 'filterSettings.resolution', `the ${f.scaler} scaler needs filterSettings.resolution`);
    else {
      oneOf(issues, 'filterSettings.resolution.tag', r.tag, ['STANDARD_HD', 'FULL_HD', 'UHD_4K', 'UHD_8K', '1X', '2X', '3X', '4X'] as const);
      oneOf(issues, 'filterSettings.resolution.aspectRatioTag', r.aspectRatioTag, ['DISPLAY', 'STORAGE', 'PAR_PRESERVED', '16:9', '4:3'] as const);
      if (!r.tag) {
        inRange(issues, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'filterSettings.resolution.width', r.width, LIMITS.minWidth, LIMITS.maxWidth);
        inRange(issues, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'filterSettings.resolution.height', r.height, LIMITS.minHeight, LIMITS.maxHeight);
        if (r.width === undefined && r.height === undefined) {
          issues.add('MISSING_CUSTOM_RESOLUTION', 'filterSettings.resolution', 'without a tag, width or height (with aspectRatioTag), or both, are required');
        } else if (!r.aspectRatioTag && (r.width === undefined || r.height === undefined)) {
          issues.add(
            'MISSING_CUSTOM_RESOLUTION',
            `filterSettings.resolution.${r.width === undefined ? 'width' : 'height'}`,
            'without a tag and without aspectRatioTag, both width and height are required',
          );
        }
      }
    }
    if (f.scaler === 'DVRES2') oneOf(issues, 'filterSettings.dvres2Variant', s.dvres2Variant, ['GENERIC', 'FINE_TUNING', 'SELFIE_STYLE'] as const);
    if (f.scaler === 'PABSR1') oneOf(issues, 'filterSettings.clarityBoost', s.clarityBoost, ['NONE', 'MARGINAL', 'VERY_LOW', 'LOW', 'MEDIUM', 'HIGH', 'VERY_HIGH'] as const);
  }

  if (oneOf(issues, 'filters.frameRateConverter', f.frameRateConverter, ['VFI', 'FPS', 'FBLEND', 'MCINTERPOLATE'] as const)) {
    const filter = { VFI: 'minterpolate', MCINTERPOLATE: 'minterpolate', FBLEND: 'framerate', FPS: 'fps' }[f.frameRateConverter];
    needFilter(issues, caps, 'filters.frameRateConverter', [filter], f.frameRateConverter);
    const r = s.frameRate;
    if (!r || (r.tag === undefined && r.fps === undefined)) {
      issues.add('VALIDATION_ERROR', 'filterSettings.frameRate', `the ${f.frameRateConverter} frame rate converter needs filterSettings.frameRate (tag or fps)`);
    } else if (r.tag !== undefined) {
      oneOf(issues, 'filterSettings.frameRate.tag', r.tag, Object.keys(FRAME_RATE_TAGS) as (keyof typeof FRAME_RATE_TAGS)[]);
    } else {
      inRange(issues, 'VALIDATION_ERROR', 'filterSettings.frameRate.fps', r.fps, LIMITS.minFps, LIMITS.maxFps, false);
    }
  }

  if (oneOf(issues, 'filters.debander', f.debander, ['GRADFUN'] as const)) {
    if (!caps.filters.has('gradfun') && !caps.filters.has('deband')) needFilter(issues, caps, 'filters.debander', ['gradfun'], 'GRADFUN');
  }

  if (oneOf(issues, 'filters.postProcessor', f.postProcessor, ['FILMGRAIN'] as const)) {
    const g = s.filmGrain;
    if (!g) issues.add('VALIDATION_ERROR', 'filterSettings.filmGrain', 'the FILMGRAIN post-processor needs filmGrain settings');
    else {
      oneOf(issues, 'filterSettings.filmGrain.grainSize', g.grainSize, ['SUPER_FINE', 'FINE', 'MEDIUM', 'COARSE', 'VERY_COARSE'] as const);
      inRange(issues, 'VALIDATION_ERROR', 'filterSettings.filmGrain.grainStrength', g.grainStrength, 0, 50);
    }
    needFilter(issues, caps, 'filters.postProcessor', ['noise', 'split', 'format', 'lutyuv', 'blend', 'scale'], 'FILMGRAIN');
  }
}

function checkProcessingSettings(options: ProcessingOptions, caps: EngineCapabilities, issues: IssueList): void {
  const p = options.processingSettings ?? {};
  const codec = staticCodec(options);
  const enc = options.encodingProfile ? undefined : options.encodingConfiguration;

  if (oneOf(issues, 'processingSettings.fixedOutputResolution', p.fixedOutputResolution, ['STANDARD_HD', 'FULL_HD', 'UHD_4K', 'UHD_8K'] as const)) {
    needFilter(issues, caps, 'processingSettings.fixedOutputResolution', ['crop', 'pad'], 'fixedOutputResolution');
  }
  if (oneOf(issues, 'processingSettings.outputScanning', p.outputScanning, ['AUTO', 'PROGRESSIVE', 'INTERLACED_TOP_FIRST', 'INTERLACED_BOTTOM_FIRST'] as const)) {
    if (p.outputScanning.startsWith('INTERLACED')) {
      if (codec && PROGRESSIVE_ONLY[codec]) {
        issues.unsupported('processingSettings.outputScanning', `${codec} is encoded progressive only here (${PROGRESSIVE_ONLY[codec]})`, p.outputScanning);
      }
      needFilter(issues, caps, 'processingSettings.outputScanning', ['interlace'], 'interlaced output');
    }
  }

  const input = p.inputColorSpaceConversion;
  const inBase = 'processingSettings.inputColorSpaceConversion';
  if (input) {
    const code = 'INVALID_INPUT_COLOR_CONVERSION';
    if (!input.mappingMode) issues.add(code, `${inBase}.mappingMode`, 'mappingMode is required');
    else if (!['STRICT_USER', 'SOURCE_PRIORITY', 'USER_PRIORITY', 'RESOLUTION_ONLY'].includes(input.mappingMode)) {
      issues.add(code, `${inBase}.mappingMode`, 'must be one of STRICT_USER, SOURCE_PRIORITY, USER_PRIORITY, RESOLUTION_ONLY', input.mappingMode);
    }
    checkProfile(issues, code, inBase, input.colorProfile, input.mappingMode === 'STRICT_USER');
    const tm = input.toneMapper;
    if (tm) {
      if (!['LINEAR', 'CLIP', 'HABLE', 'REINHARD', 'MOBIUS'].includes(tm.algorithm)) {
        issues.add(code, `${inBase}.toneMapper.algorithm`, 'must be one of LINEAR, CLIP, HABLE, REINHARD, MOBIUS', tm.algorithm);
      }
      if (tm.outputNits !== undefined && !(tm.outputNits > 0 && tm.outputNits <= 10000)) {
        issues.add(code, `${inBase}.toneMapper.outputNits`, 'must be above 0 and at most 10000', tm.outputNits);
      }
      if (input.metadataOnly) issues.add(code, `${inBase}.metadataOnly`, 'a toneMapper converts pixels; it cannot be combined with metadataOnly');
      needFilter(issues, caps, `${inBase}.toneMapper`, ['zscale', 'tonemap'], 'tone mapping');
    }
  }

  const output = p.outputColorSpaceConversion;
  const outBase = 'processingSettings.outputColorSpaceConversion';
  if (output) {
    const code = 'INVALID_OUTPUT_COLOR_CONVERSION';
    if (!output.mappingMode) issues.add(code, `${outBase}.mappingMode`, 'mappingMode is required');
    else if (!['STRICT_USER', 'INPUT_PRIORITY', 'SOURCE_PRIORITY', 'USER_PRIORITY', 'RESOLUTION_ONLY'].includes(output.mappingMode)) {
      issues.add(code, `${outBase}.mappingMode`, 'must be one of STRICT_USER, INPUT_PRIORITY, SOURCE_PRIORITY, USER_PRIORITY, RESOLUTION_ONLY', output.mappingMode);
    }
    checkProfile(issues, code, outBase, output.colorProfile, output.mappingMode === 'STRICT_USER');
    const profile = output.colorProfile;
    const fields = profileFields(profile);
    const hdrOut = fields.transferCharacteristics !== undefined && isHdrTransfer(fields.transferCharacteristics);
    const usesProfile = output.mappingMode !== 'RESOLUTION_ONLY';

    if (profile?.hdrFormat && usesProfile) {
      const pf = enc?.pixelFormat;
      if (profile.hdrFormat === 'HDR10') {
        if (codec && codec !== 'HEVC') issues.add(code, `${outBase}.colorProfile.hdrFormat`, `HDR10 needs HEVC 4:2:0 10-bit; the output codec is ${codec}`, 'HDR10');
        if (pf && ((pf.yuv ?? '4:2:0') !== '4:2:0' || (pf.bitDepth ?? 8) !== 10)) {
          issues.add(code, `${outBase}.colorProfile.hdrFormat`, `HDR10 needs HEVC 4:2:0 10-bit; the pixel format asks for ${pf.yuv ?? '4:2:0'} ${pf.bitDepth ?? 8}-bit`, 'HDR10');
        }
      } else if (profile.hdrFormat === 'PQ10') {
        if (pf && (pf.bitDepth ?? 8) !== 10) issues.add(code, `${outBase}.colorProfile.hdrFormat`, `PQ10 needs 10-bit output; the pixel format asks for ${pf.bitDepth ?? 8}-bit`, 'PQ10');
        if (codec === 'MPEG2' || codec === 'XDCAM') issues.add(code, `${outBase}.colorProfile.hdrFormat`, `PQ10 needs 10-bit output; ${codec} is 8-bit only`, 'PQ10');
        if (options.encodingProfile && PROFILE_SPECS[options.encodingProfile].pixel.bitDepth !== 10) {
          issues.add(code, `${outBase}.colorProfile.hdrFormat`, `PQ10 needs 10-bit output; ${options.encodingProfile} is 8-bit`, 'PQ10');
        }
      }
    }
    if (profile && usesProfile && (profile.masteringDisplay || profile.maxCll !== undefined || profile.maxFall !== undefined) && codec && codec !== 'HEVC') {
      const field = profile.masteringDisplay ? 'masteringDisplay' : profile.maxCll !== undefined ? 'maxCll' : 'maxFall';
      issues.unsupported(`${outBase}.colorProfile.${field}`, `HDR static metadata is written into HEVC only (x265 SEI); the output codec is ${codec}`);
    }
    if (hdrOut && usesProfile && !output.metadataOnly) needFilter(issues, caps, `${outBase}.colorProfile`, ['zscale'], 'conversion to PQ or HLG');

    const itm = output.inverseToneMapper;
    if (itm) {
      if (!['INFINITEHDR', 'LINEAR', 'HABLE', 'REINHARD', 'MOBIUS'].includes(itm.algorithm)) {
        issues.add(code, `${outBase}.inverseToneMapper.algorithm`, 'must be one of INFINITEHDR, LINEAR, HABLE, REINHARD, MOBIUS', itm.algorithm);
      } else if (itm.algorithm === 'HABLE' || itm.algorithm === 'REINHARD' || itm.algorithm === 'MOBIUS') {
        issues.unsupported(`${outBase}.inverseToneMapper.algorithm`, `ffmpeg has no inverse ${itm.algorithm} curve on the CPU; use LINEAR or INFINITEHDR (a linear expansion)`, itm.algorithm);
      }
      if (itm.outputNits !== undefined && !(itm.outputNits > 0 && itm.outputNits <= 10000)) {
        issues.add(code, `${outBase}.inverseToneMapper.outputNits`, 'must be above 0 and at most 10000', itm.outputNits);
      }
      if (itm.saturationBoost !== undefined && !(itm.saturationBoost >= 0 && itm.saturationBoost <= 3)) {
        issues.unsupported(`${outBase}.inverseToneMapper.saturationBoost`, 'the saturation multiplier is applied with eq, which takes 0 to 3', itm.saturationBoost);
      }
      if (output.metadataOnly) issues.add(code, `${outBase}.metadataOnly`, 'an inverseToneMapper converts pixels; it cannot be combined with metadataOnly');
      if (!hdrOut || !usesProfile) {
        issues.add(code, `${outBase}.inverseToneMapper`, 'inverse tone mapping needs an HDR output colorProfile (hdrFormat, or transfer SMPTE2084 or ARIB_STD_B67)');
      }
      if (input?.toneMapper) issues.add(code, `${outBase}.inverseToneMapper`, 'conflicts with inputColorSpaceConversion.toneMapper: the input would be tone mapped to SDR and expanded again');
      needFilter(issues, caps, `${outBase}.inverseToneMapper`, ['zscale'], 'inverse tone mapping');
    }
    if (input?.toneMapper && hdrOut && usesProfile && !itm) {
      issues.add(code, `${outBase}.colorProfile`, 'conflicts with inputColorSpaceConversion.toneMapper: the tone mapper makes SDR, the output profile asks for HDR');
    }
  }
}
