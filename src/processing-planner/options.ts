/**
 * Domain types of the processing options: the contract's `VideoProcessingConfigurationOptions`
 * (openapi/paths/processing-configurations.yaml) restated without importing `generated/`
 * (DESIGN.md: generated types stay at the edge). Field names and enum strings are the
 * contract's, so a handler maps the generated type onto these by assignment; a test checks
 * that it does (test/processing/options.test.ts).
 *
 * Every part is optional, as in the contract; properties with a contract default (`yuv`,
 * `bitDepth`, `outputScanning`, `metadataOnly`, `outputNits`, `saturationBoost`,
 * `minLuminance`) are optional here too, because a request validator may or may not have filled
 * them in. `null` turns a filter stage off, like absence.
 */

export const ENCODING_PROFILES = [
  'PRORES_422_LT',
  'PRORES_422_STANDARD',
  'PRORES_422_PROXY',
  'PRORES_422_HQ',
  'PRORES_4444_STANDARD',
  'PRORES_4444_XQ',
  'DNXHD_36_LB',
  'DNXHD_45_LB',
  'DNXHD_75_LB',
  'DNXHD_90_LB',
  'DNXHD_115_SQ',
  'DNXHD_120_SQ',
  'DNXHD_145_SQ',
  'DNXHD_240_SQ',
  'DNXHD_290_SQ',
  'DNXHD_175_HQ',
  'DNXHD_185_HQ',
  'DNXHD_220_HQ',
  'DNXHD_365_HQ',
  'DNXHD_440_HQ',
  'DNXHD_175X_HQX',
  'DNXHD_185X_HQX',
  'DNXHD_220X_HQX',
  'DNXHD_365X_HQX',
  'DNXHD_440X_HQX',
  'DNXHD_350X_444',
  'DNXHD_390X_444',
  'DNXHD_440X_444',
  'DNXHD_730X_444',
  'DNXHD_880X_444',
  'DNXHR_LB',
  'DNXHR_SQ',
  'DNXHR_HQ',
  'DNXHR_HQX',
  'DNXHR_444',
] as const;
export type EncodingProfile = (typeof ENCODING_PROFILES)[number];

export const CODECS = ['H264', 'MPEG2', 'HEVC', 'XDCAM', 'FFV1'] as const;
export type Codec = (typeof CODECS)[number];

export const CONTAINERS = ['MOV', 'MXF', 'MP4', 'MPEGTS'] as const;
export type MediaContainer = (typeof CONTAINERS)[number];

export type ChromaSubsampling = '4:2:0' | '4:2:2' | '4:4:4';
export type BitDepth = 8 | 10 | 12;

export interface PixelFormat {
  /** Contract default `4:2:0`. */
  yuv?: ChromaSubsampling;
  /** Contract default 8. */
  bitDepth?: BitDepth;
  /** Read-only in the contract: the resulting format's conventional name (`yuv422p10le`). */
  name?: string;
}

export interface EncodingConfiguration {
  codec?: Codec;
  /** Absent: the output keeps the source's pixel format (as far as the codec can). */
  pixelFormat?: PixelFormat;
  /** Bits per second, at least 10 000. Absent: chosen automatically (a quality target where the codec has one). */
  bitrate?: number;
}

export type Deinterlacer = 'DEINT' | 'YADIF' | 'BWDIF' | 'WESTON3F';
export type Reshaper = 'CROP';
export type Prescaler = 'SCALE';
export type Denoiser = 'DENOISE' | 'HQDN3D';
export type Stabilizer = 'DEJIT';
export type Augmenter = 'FACEFORWARD';
export type Scaler = 'DVRES2' | 'DVRES' | 'PABSR1' | 'SCALE';
export type FrameRateConverter = 'VFI' | 'FPS' | 'FBLEND' | 'MCINTERPOLATE';
export type Debander = 'GRADFUN';
export type PostProcessor = 'FILMGRAIN';

/** One choice per stage, in the contract's (and the filter graph's) order. */
export interface ProcessingFilters {
  deinterlacer?: Deinterlacer | null;
  reshaper?: Reshaper | null;
  prescaler?: Prescaler | null;
  denoiser?: Denoiser | null;
  stabilizer?: Stabilizer | null;
  augmenter?: Augmenter | null;
  scaler?: Scaler | null;
  frameRateConverter?: FrameRateConverter | null;
  debander?: Debander | null;
  postProcessor?: PostProcessor | null;
}

export const FILTER_STAGES = [
  'deinterlacer',
  'reshaper',
  'prescaler',
  'denoiser',
  'stabilizer',
  'augmenter',
  'scaler',
  'frameRateConverter',
  'debander',
  'postProcessor',
] as const satisfies readonly (keyof ProcessingFilters)[];

export type ResolutionTag = 'STANDARD_HD' | 'FULL_HD' | 'UHD_4K' | 'UHD_8K' | '1X' | '2X' | '3X' | '4X';
export type AspectRatioTag = 'DISPLAY' | 'STORAGE' | 'PAR_PRESERVED' | '16:9' | '4:3';

export interface ResolutionSettings {
  tag?: ResolutionTag;
  width?: number;
  height?: number;
  aspectRatioTag?: AspectRatioTag;
}

export type FrameRateTag =
  'FILM_NTSC' | 'FILM' | 'VIDEO_PAL' | 'VIDEO_NTSC' | 'VIDEO_HD' | 'VIDEO_PAL_FAST' | 'VIDEO_NTSC_FAST' | 'VIDEO_HD_FAST' | 'VIDEO_PAL_UHD' | 'VIDEO_NTSC_UHD' | 'VIDEO_UHD_FAST';

export interface FrameRateSettings {
  tag?: FrameRateTag;
  fps?: number;
}

export interface NormalizedCropCoordinates {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface CropRectangle {
  width: number;
  height: number;
  x?: number;
  y?: number;
}

export interface PrescaledResolution {
  width: number;
  height: number;
}

export interface FaceForwardSettings {
  colorBoost: number;
  autoWhiteBalance: boolean;
  relightIntensity: number;
  backgroundBlur: number;
}

export type Dvres2Variant = 'GENERIC' | 'FINE_TUNING' | 'SELFIE_STYLE';
export type ClarityBoost = 'NONE' | 'MARGINAL' | 'VERY_LOW' | 'LOW' | 'MEDIUM' | 'HIGH' | 'VERY_HIGH';
export type GrainSize = 'SUPER_FINE' | 'FINE' | 'MEDIUM' | 'COARSE' | 'VERY_COARSE';

export interface FilmGrainSettings {
  grainSize: GrainSize;
  grainStrength: number;
}

export type InterlacedFieldOrderMode = 'AUTO_METADATA' | 'AUTO_SEGMENT_ANALYSIS' | 'TOP_FIELD_FIRST' | 'BOTTOM_FIELD_FIRST';

export interface ProcessingFilterSettings {
  resolution?: ResolutionSettings;
  frameRate?: FrameRateSettings;
  normalizedCropCoordinates?: NormalizedCropCoordinates;
  cropRectangle?: CropRectangle;
  prescaledResolution?: PrescaledResolution;
  faceForward?: FaceForwardSettings;
  dvres2Variant?: Dvres2Variant;
  clarityBoost?: ClarityBoost;
  filmGrain?: FilmGrainSettings;
  interlacedFieldOrderMode?: InterlacedFieldOrderMode;
}

export type ColorSpace = 'BT470BG' | 'FCC' | 'SMPTE170M' | 'SMPTE240M' | 'BT709' | 'BT2020NC' | 'BT2020C';
export type ColorPrimaries = 'BT470BG' | 'BT470M' | 'SMPTE170M' | 'SMPTE240M' | 'FILM' | 'BT709' | 'BT2020' | 'SMPTE428' | 'SMPTE431' | 'SMPTE432';
export type TransferCharacteristics = 'BT470BG' | 'BT470M' | 'SMPTE170M' | 'SMPTE240M' | 'BT709' | 'BT2020_10' | 'BT2020_12' | 'LINEAR' | 'SMPTE2084' | 'ARIB_STD_B67';
export type ColorRange = 'LIMITED' | 'FULL';
export type HdrFormat = 'HLG' | 'PQ10' | 'HDR10';

export interface MasteringDisplayPoint {
  x?: number;
  y?: number;
}

export interface MasteringDisplay {
  tag?: 'P3_D65' | 'BT2020';
  red?: MasteringDisplayPoint;
  green?: MasteringDisplayPoint;
  blue?: MasteringDisplayPoint;
  whitePoint?: MasteringDisplayPoint;
  /** Nits, contract default 0.005. */
  minLuminance?: number;
  /** Nits; absent: the profile's `maxCll`, else 1000. */
  maxLuminance?: number;
}

export interface Colorimetry {
  colorSpace?: ColorSpace;
  colorPrimaries?: ColorPrimaries;
  transferCharacteristics?: TransferCharacteristics;
  colorRange?: ColorRange;
  hdrFormat?: HdrFormat;
  masteringDisplay?: MasteringDisplay;
  maxCll?: number;
  maxFall?: number;
}

export type ToneMapAlgorithm = 'LINEAR' | 'CLIP' | 'HABLE' | 'REINHARD' | 'MOBIUS';
export type InverseToneMapAlgorithm = 'INFINITEHDR' | 'LINEAR' | 'HABLE' | 'REINHARD' | 'MOBIUS';

export interface ToneMapper {
  algorithm: ToneMapAlgorithm;
  /** Contract default 100. */
  outputNits?: number;
}

export interface InverseToneMapper {
  algorithm: InverseToneMapAlgorithm;
  /** Contract default 100; not used by INFINITEHDR. */
  outputNits?: number;
  /** Contract default 1.25; INFINITEHDR only. */
  saturationBoost?: number;
}

export type InputMappingMode = 'STRICT_USER' | 'SOURCE_PRIORITY' | 'USER_PRIORITY' | 'RESOLUTION_ONLY';
export type OutputMappingMode = 'STRICT_USER' | 'INPUT_PRIORITY' | 'SOURCE_PRIORITY' | 'USER_PRIORITY' | 'RESOLUTION_ONLY';

export interface InputColorSpaceConversion {
  mappingMode: InputMappingMode;
  colorProfile?: Colorimetry;
  metadataOnly?: boolean;
  toneMapper?: ToneMapper;
}

export interface OutputColorSpaceConversion {
  mappingMode: OutputMappingMode;
  colorProfile?: Colorimetry;
  metadataOnly?: boolean;
  inverseToneMapper?: InverseToneMapper;
}

export type FixedOutputResolution = 'STANDARD_HD' | 'FULL_HD' | 'UHD_4K' | 'UHD_8K';
export type OutputScanning = 'AUTO' | 'PROGRESSIVE' | 'INTERLACED_TOP_FIRST' | 'INTERLACED_BOTTOM_FIRST';

export interface ProcessingSettings {
  inputColorSpaceConversion?: InputColorSpaceConversion;
  outputColorSpaceConversion?: OutputColorSpaceConversion;
  fixedOutputResolution?: FixedOutputResolution;
  /** Contract default AUTO. */
  outputScanning?: OutputScanning;
}

export interface ProcessingOptions {
  /** When set, `encodingConfiguration` is ignored (contract rule). */
  encodingProfile?: EncodingProfile;
  encodingConfiguration?: EncodingConfiguration;
  container?: MediaContainer;
  filters?: ProcessingFilters;
  filterSettings?: ProcessingFilterSettings;
  processingSettings?: ProcessingSettings;
}

// ---------------------------------------------------------------------------------------------
// Named sizes and rates (contract descriptions)
// ---------------------------------------------------------------------------------------------

export const NAMED_RESOLUTIONS: Record<'STANDARD_HD' | 'FULL_HD' | 'UHD_4K' | 'UHD_8K', { width: number; height: number }> = {
  STANDARD_HD: { width: 1280, height: 720 },
  FULL_HD: { width: 1920, height: 1080 },
  UHD_4K: { width: 3840, height: 2160 },
  UHD_8K: { width: 7680, height: 4320 },
};

export const RESOLUTION_MULTIPLIERS: Record<'1X' | '2X' | '3X' | '4X', number> = { '1X': 1, '2X': 2, '3X': 3, '4X': 4 };

/** Exact rational rates of the frame-rate tags (29.97 is 30000/1001, and so on). */
export const FRAME_RATE_TAGS: Record<FrameRateTag, { num: number; den: number }> = {
  FILM_NTSC: { num: 24000, den: 1001 },
  FILM: { num: 24, den: 1 },
  VIDEO_PAL: { num: 25, den: 1 },
  VIDEO_NTSC: { num: 30000, den: 1001 },
  VIDEO_HD: { num: 30, den: 1 },
  VIDEO_PAL_FAST: { num: 50, den: 1 },
  VIDEO_NTSC_FAST: { num: 60000, den: 1001 },
  VIDEO_HD_FAST: { num: 60, den: 1 },
  VIDEO_PAL_UHD: { num: 100, den: 1 },
  VIDEO_NTSC_UHD: { num: 120000, den: 1001 },
  VIDEO_UHD_FAST: { num: 120, den: 1 },
};

/** Output limits (contract: width 16..7680, height 16..4320, fps 0.001..999). */
export const LIMITS = { minWidth: 16, maxWidth: 7680, minHeight: 16, maxHeight: 4320, minFps: 0.001, maxFps: 999, minBitrate: 10_000 } as const;

/** Which codecs each container holds (contract description of `container`). PRORES and DNXHD are reached through `encodingProfile`; DNXHD covers DNxHR (both VC-3). */
export type OutputCodec = Codec | 'PRORES' | 'DNXHD' | 'DNXHR';
export const CONTAINER_CODECS: Record<MediaContainer, readonly OutputCodec[]> = {
  MOV: ['H264', 'PRORES', 'DNXHD', 'DNXHR', 'HEVC', 'MPEG2', 'FFV1'],
  MXF: ['H264', 'XDCAM', 'MPEG2', 'DNXHD', 'DNXHR'],
  MP4: ['H264', 'HEVC'],
  MPEGTS: ['H264', 'HEVC', 'MPEG2'],
};

/** The codec family an encoding profile selects. */
export function profileCodec(profile: EncodingProfile): 'PRORES' | 'DNXHD' | 'DNXHR' {
  if (profile.startsWith('PRORES')) return 'PRORES';
  if (profile.startsWith('DNXHR')) return 'DNXHR';
  return 'DNXHD';
}

/** A deep copy (options are plain JSON). */
export function cloneOptions<T>(options: T): T {
  return options === undefined ? options : (JSON.parse(JSON.stringify(options)) as T);
}
