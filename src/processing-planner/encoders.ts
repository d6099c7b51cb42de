/**
 * What each output codec and encoding profile is in ffmpeg terms: encoder, pixel formats it can
 * produce, fixed profiles (ProRes, DNxHD, DNxHR), containers and audio. Pure data plus small
 * helpers shared by validation and the plan.
 */
import type { ColorSpec } from './colour';
import type { BitDepth, ChromaSubsampling, Codec, EncodingProfile, MediaContainer, OutputCodec } from './options';

export interface PixelSpec {
  yuv: ChromaSubsampling;
  bitDepth: BitDepth;
}

/** `yuv420p`, `yuv422p10le`, `yuv444p12le`. */
export function pixFmtName(p: PixelSpec): string {
  const base = p.yuv === '4:2:0' ? 'yuv420p' : p.yuv === '4:2:2' ? 'yuv422p' : 'yuv444p';
  return p.bitDepth === 8 ? base : `${base}${p.bitDepth}le`;
}

/**
 * The pixel format the output is read as (what ffprobe, and ingestion of the result, report),
 * from the one encoded: ProRes 4444 and 4444 XQ are 12-bit streams (prores_ks takes 10-bit
 * samples; the decoder gives `yuv444p12le`), and the H.264 decoder names full-range 8-bit formats
 * `yuvj420p`/`yuvj422p`/`yuvj444p` (the HEVC decoder `yuvj420p`).
 */
export function readPixelFormat(codec: OutputCodec, encoded: PixelSpec, fullRange: boolean): { pixel: PixelSpec; name: string } {
  const pixel: PixelSpec = codec === 'PRORES' && encoded.yuv === '4:4:4' ? { yuv: '4:4:4', bitDepth: 12 } : encoded;
  const name = pixFmtName(pixel);
  const jpegNamed = fullRange && pixel.bitDepth === 8 && (codec === 'H264' || (codec === 'HEVC' && pixel.yuv === '4:2:0'));
  return { pixel, name: jpegNamed ? name.replace(/^yuv/, 'yuvj') : name };
}

/**
 * Why a full-range picture cannot be recorded as such in this codec and container, or undefined
 * when it can: the ProRes and MPEG-2 decoders read every stream as limited range (their
 * bitstreams have no range flag), and the MOV muxer records no range for FFV1 (nor does FFV1). Such an output is
 * converted to limited range.
 */
export function fullRangeUnrecordable(codec: OutputCodec, container: MediaContainer): string | undefined {
  if (codec === 'PRORES') return 'ProRes records no colour range: readers take every ProRes stream as limited range';
  if (codec === 'MPEG2' || codec === 'XDCAM') return 'MPEG-2 records no colour range: readers take every MPEG-2 stream as limited range';
  if (codec === 'FFV1' && container === 'MOV') return 'FFV1 in MOV records no colour range: readers take it as limited range';
  return undefined;
}

/**
 * The colour tags as a reader finds them in the file, where the container records them in its
 * own terms (same pixels, other names) or not at all: ffmpeg's MXF muxer writes the BT.601 matrix
 * and the BT.709 transfer curve for SMPTE 170M (the same matrix and curve) of codecs without
 * colour tags of their own (DNxHD, DNxHR), which ffprobe reads back as bt470bg and bt709; FFV1 in
 * MOV has no colour range at all.
 */
export function recordedColour(codec: OutputCodec, container: MediaContainer, c: ColorSpec): Partial<ColorSpec> {
  const out: Partial<ColorSpec> = { ...c };
  if (container === 'MXF' && (codec === 'DNXHD' || codec === 'DNXHR')) {
    if (c.colorSpace === 'SMPTE170M') out.colorSpace = 'BT470BG';
    if (c.transferCharacteristics === 'SMPTE170M') out.transferCharacteristics = 'BT709';
  }
  if (codec === 'FFV1' && container === 'MOV') delete out.colorRange;
  return out;
}

export const ENCODER_OF: Record<OutputCodec, string> = {
  H264: 'libx264',
  HEVC: 'libx265',
  MPEG2: 'mpeg2video',
  XDCAM: 'mpeg2video',
  FFV1: 'ffv1',
  PRORES: 'prores_ks',
  DNXHD: 'dnxhd',
  DNXHR: 'dnxhd',
};

/** Pixel formats the encoders of `encodingConfiguration.codec` produce here (checked against `ffmpeg -h encoder=...`). */
export const CODEC_PIXELS: Record<Codec, { yuv: readonly ChromaSubsampling[]; bitDepth: readonly BitDepth[]; why: string }> = {
  H264: { yuv: ['4:2:0', '4:2:2', '4:4:4'], bitDepth: [8, 10], why: 'libx264 encodes 8 and 10 bits' },
  HEVC: { yuv: ['4:2:0', '4:2:2', '4:4:4'], bitDepth: [8, 10, 12], why: 'libx265 encodes 8, 10 and 12 bits' },
  MPEG2: { yuv: ['4:2:0', '4:2:2'], bitDepth: [8], why: 'MPEG-2 is 8-bit 4:2:0 or 4:2:2' },
  XDCAM: { yuv: ['4:2:0', '4:2:2'], bitDepth: [8], why: 'XDCAM HD is 8-bit 4:2:0 (35 Mbit/s) or 4:2:2 (HD422, 50 Mbit/s)' },
  FFV1: { yuv: ['4:2:0', '4:2:2', '4:4:4'], bitDepth: [8, 10, 12], why: 'FFV1 encodes 8, 10 and 12 bits' },
};

/**
 * Codecs this installation encodes progressive only, and why: an interlaced output with one of
 * them is refused (400 UNSUPPORTED_PROCESSING_OPTION); `outputScanning` AUTO deinterlaces an
 * interlaced source for them instead (noted).
 */
export const PROGRESSIVE_ONLY: Partial<Record<OutputCodec, string>> = {
  HEVC: 'x265 takes interlaced video only as separate field pictures, which ffmpeg 5.1 cannot feed it',
  DNXHR: "ffmpeg's dnxhd encoder codes the DNxHR profiles progressive only",
};

/** ffmpeg's dnxhd encoder makes DNxHR frames of at least 256x120. */
export const DNXHR_MIN_SIZE = { width: 256, height: 120 } as const;

/**
 * The frame rates ffmpeg's MXF muxer can write (its table of SMPTE ST 377 content package
 * rates); it refuses to start on any other.
 */
export const MXF_FRAME_RATES: readonly { num: number; den: number }[] = [
  { num: 24000, den: 1001 },
  { num: 24, den: 1 },
  { num: 25, den: 1 },
  { num: 30000, den: 1001 },
  { num: 30, den: 1 },
  { num: 48000, den: 1001 },
  { num: 48, den: 1 },
  { num: 50, den: 1 },
  { num: 60000, den: 1001 },
  { num: 60, den: 1 },
  { num: 72000, den: 1001 },
  { num: 72, den: 1 },
  { num: 75, den: 1 },
  { num: 90000, den: 1001 },
  { num: 90, den: 1 },
  { num: 96000, den: 1001 },
  { num: 96, den: 1 },
  { num: 100, den: 1 },
  { num: 120000, den: 1001 },
  { num: 120, den: 1 },
];

export interface FrameSize {
  width: number;
  height: number;
  interlaced: boolean;
}

/**
 * The DNxHD (VC-3) frame sizes ffmpeg's dnxhd encoder accepts, by bitrate (Mbit/s) and bit
 * depth. Taken from the encoder's own list of valid profiles (ffmpeg 5.1, printed when a
 * combination is refused), less the MBAFF one it lists but does not encode; the capability
 * matrix test encodes each. DNxHD frame sizes are fixed; DNxHR takes any size from 256x120.
 */
const DNXHD_TABLE: { width: number; height: number; interlaced: boolean; bitDepth: 8 | 10; mbps: number[] }[] = [
  { width: 1920, height: 1080, interlaced: false, bitDepth: 10, mbps: [175, 185, 365, 440] },
  { width: 1920, height: 1080, interlaced: false, bitDepth: 8, mbps: [36, 45, 75, 90, 115, 120, 145, 175, 185, 220, 240, 290, 365, 440] },
  { width: 1920, height: 1080, interlaced: true, bitDepth: 10, mbps: [185, 220] },
  { width: 1920, height: 1080, interlaced: true, bitDepth: 8, mbps: [120, 145, 185, 220] },
  // ffmpeg also lists 1440x1080i at 80/90/100/110 (VC-3 1260), but that is an MBAFF profile its encoder skips.
  { width: 1440, height: 1080, interlaced: true, bitDepth: 8, mbps: [120, 145] },
  { width: 1440, height: 1080, interlaced: false, bitDepth: 8, mbps: [63, 84, 100, 110] },
  { width: 1280, height: 720, interlaced: false, bitDepth: 10, mbps: [90, 180, 220] },
  { width: 1280, height: 720, interlaced: false, bitDepth: 8, mbps: [60, 75, 90, 110, 120, 145, 180, 220] },
  { width: 960, height: 720, interlaced: false, bitDepth: 8, mbps: [42, 60, 75, 115] },
];

export function dnxhdFrameSizes(mbps: number, bitDepth: 8 | 10): FrameSize[] {
  return DNXHD_TABLE.filter((r) => r.bitDepth === bitDepth && r.mbps.includes(mbps)).map(({ width, height, interlaced }) => ({ width, height, interlaced }));
}

/** The frame rate a DNxHD bitrate is named for (Avid's families), for size estimates only; ffmpeg does not check it. */
export function dnxhdNominalFps(mbps: number): number {
  if ([36, 115, 175].includes(mbps)) return 24000 / 1001;
  if ([120, 185].includes(mbps)) return 25;
  if ([45, 145, 220].includes(mbps)) return 30000 / 1001;
  if ([75, 240, 365].includes(mbps)) return 50;
  if ([90, 290, 440].includes(mbps)) return 60000 / 1001;
  return 25;
}

export interface ProfileSpec {
  codec: 'PRORES' | 'DNXHD' | 'DNXHR';
  pixel: PixelSpec;
  /** ffmpeg arguments that select the profile (after `-c:v`). */
  args: string[];
  /** DNxHD: the profile's bitrate in Mbit/s. */
  mbps?: number;
  /** Nominal bits per pixel (data rate / pixel rate), for size estimates: Apple's and Avid's published rates at 1080p29.97. */
  bitsPerPixel: number;
  /** Why this installation cannot encode it, when it cannot. */
  unsupported?: string;
  /** The profile's name in the stream, as ffprobe reports it (`HQ`, `DNXHD`, `DNXHR SQ`). */
  streamProfile: string;
}

const px = (yuv: ChromaSubsampling, bitDepth: BitDepth): PixelSpec => ({ yuv, bitDepth });
const PIXELS_1080P30 = 1920 * 1080 * (30000 / 1001);
const bpp = (mbps: number) => Math.round(((mbps * 1e6) / PIXELS_1080P30) * 1000) / 1000;

const PRORES_NAMES = ['Proxy', 'LT', 'Standard', 'HQ', '4444', 'XQ'];

function prores(profile: number, yuv: ChromaSubsampling, mbps: number): ProfileSpec {
  return { codec: 'PRORES', pixel: px(yuv, 10), args: ['prores_ks', '-profile:v', String(profile), '-vendor', 'apl0'], bitsPerPixel: bpp(mbps), streamProfile: PRORES_NAMES[profile]! }; // profile: 0..5
}

function dnxhd(mbps: number, bitDepth: 8 | 10): ProfileSpec {
  const bits = (mbps * 1e6) / (1920 * 1080 * dnxhdNominalFps(mbps));
  return { codec: 'DNXHD', pixel: px('4:2:2', bitDepth), args: ['dnxhd', '-profile:v', 'dnxhd', '-b:v', `${mbps}M`], mbps, bitsPerPixel: Math.round(bits * 1000) / 1000, streamProfile: 'DNXHD' };
}

function dnxhd444(mbps: number): ProfileSpec {
  return {
    ...dnxhd(mbps, 10),
    pixel: px('4:4:4', 10),
    unsupported: 'ffmpeg 5.1 encodes 4:4:4 VC-3 only as DNxHR 444 (encodingProfile DNXHR_444), not as DNxHD 444',
  };
}

function dnxhr(name: string, yuv: ChromaSubsampling, bitDepth: BitDepth, mbps: number): ProfileSpec {
  return { codec: 'DNXHR', pixel: px(yuv, bitDepth), args: ['dnxhd', '-profile:v', name], bitsPerPixel: bpp(mbps), streamProfile: name.toUpperCase().replace('_', ' ') };
}

/**
 * The profile the encoder writes, as ffprobe names it, for the codecs whose profile follows from
 * the pixel format (and, for x264, the preset and interlacing: x264 signals the lowest profile
 * its tools need, and `ultrafast` uses no 8x8 transform, CABAC or B-frames). FFV1 has none.
 */
export function streamProfileName(codec: Codec, pixel: PixelSpec, x264: { preset: string; interlaced: boolean }): string | undefined {
  switch (codec) {
    case 'H264':
      if (pixel.yuv === '4:4:4') return 'High 4:4:4 Predictive';
      if (pixel.yuv === '4:2:2') return 'High 4:2:2';
      if (pixel.bitDepth > 8) return 'High 10';
      if (x264.preset !== 'ultrafast') return 'High';
      return x264.interlaced ? 'Main' : 'Constrained Baseline';
    case 'HEVC':
      if (pixel.yuv !== '4:2:0' || pixel.bitDepth === 12) return 'Rext';
      return pixel.bitDepth === 10 ? 'Main 10' : 'Main';
    case 'MPEG2':
    case 'XDCAM':
      return pixel.yuv === '4:2:2' ? '4:2:2' : 'Main';
    default:
      return undefined;
  }
}

/** Profile -> encoder settings. ProRes data rates: Apple ProRes white paper (1080p29.97); DNxHR: Avid's published 1080p29.97 rates. */
export const PROFILE_SPECS: Record<EncodingProfile, ProfileSpec> = {
  PRORES_422_PROXY: prores(0, '4:2:2', 45),
  PRORES_422_LT: prores(1, '4:2:2', 102),
  PRORES_422_STANDARD: prores(2, '4:2:2', 147),
  PRORES_422_HQ: prores(3, '4:2:2', 220),
  PRORES_4444_STANDARD: prores(4, '4:4:4', 330),
  PRORES_4444_XQ: prores(5, '4:4:4', 500),
  DNXHD_36_LB: dnxhd(36, 8),
  DNXHD_45_LB: dnxhd(45, 8),
  DNXHD_75_LB: dnxhd(75, 8),
  DNXHD_90_LB: dnxhd(90, 8),
  DNXHD_115_SQ: dnxhd(115, 8),
  DNXHD_120_SQ: dnxhd(120, 8),
  DNXHD_145_SQ: dnxhd(145, 8),
  DNXHD_240_SQ: dnxhd(240, 8),
  DNXHD_290_SQ: dnxhd(290, 8),
  DNXHD_175_HQ: dnxhd(175, 8),
  DNXHD_185_HQ: dnxhd(185, 8),
  DNXHD_220_HQ: dnxhd(220, 8),
  DNXHD_365_HQ: dnxhd(365, 8),
  DNXHD_440_HQ: dnxhd(440, 8),
  DNXHD_175X_HQX: dnxhd(175, 10),
  DNXHD_185X_HQX: dnxhd(185, 10),
  DNXHD_220X_HQX: dnxhd(220, 10),
  DNXHD_365X_HQX: dnxhd(365, 10),
  DNXHD_440X_HQX: dnxhd(440, 10),
  DNXHD_350X_444: dnxhd444(350),
  DNXHD_390X_444: dnxhd444(390),
  DNXHD_440X_444: dnxhd444(440),
  DNXHD_730X_444: dnxhd444(730),
  DNXHD_880X_444: dnxhd444(880),
  DNXHR_LB: dnxhr('dnxhr_lb', '4:2:2', 8, 45),
  DNXHR_SQ: dnxhr('dnxhr_sq', '4:2:2', 8, 145),
  DNXHR_HQ: dnxhr('dnxhr_hq', '4:2:2', 8, 220),
  DNXHR_HQX: dnxhr('dnxhr_hqx', '4:2:2', 10, 220),
  DNXHR_444: dnxhr('dnxhr_444', '4:4:4', 10, 440),
};

/** XDCAM HD frame sizes: HD422 (4:2:2) 1920x1080 and 1280x720; XDCAM HD 35 (4:2:0) also 1440x1080. */
export function xdcamFrameSizes(yuv: ChromaSubsampling): { width: number; height: number }[] {
  const sizes = [
    { width: 1920, height: 1080 },
    { width: 1280, height: 720 },
  ];
  return yuv === '4:2:0' ? [...sizes, { width: 1440, height: 1080 }] : sizes;
}

/** The fixed XDCAM bitrates: HD422 50 Mbit/s CBR, XDCAM HD 35 Mbit/s VBR. */
export function xdcamBitrate(yuv: ChromaSubsampling): number {
  return yuv === '4:2:2' ? 50_000_000 : 35_000_000;
}

/** MPEG-1/2 syntax cannot code a frame side of 4096 or more. */
export const MPEG2_MAX_SIDE = 4095;

/** The container chosen when `container` is absent: the source's when it holds the codec, else this one. */
export const DEFAULT_CONTAINER: Record<OutputCodec, MediaContainer> = {
  H264: 'MP4',
  HEVC: 'MP4',
  MPEG2: 'MPEGTS',
  XDCAM: 'MXF',
  FFV1: 'MOV',
  PRORES: 'MOV',
  DNXHD: 'MXF',
  DNXHR: 'MXF',
};

export const CONTAINER_FORMAT: Record<MediaContainer, { muxer: string; fileExtension: string; mimeType: string }> = {
  MP4: { muxer: 'mp4', fileExtension: '.mp4', mimeType: 'video/mp4' },
  MOV: { muxer: 'mov', fileExtension: '.mov', mimeType: 'video/quicktime' },
  MXF: { muxer: 'mxf', fileExtension: '.mxf', mimeType: 'application/mxf' },
  MPEGTS: { muxer: 'mpegts', fileExtension: '.ts', mimeType: 'video/mp2t' },
};

/** The probe's container name -> our container, when it is one of ours. */
export function containerOfSource(containerName: string | undefined): MediaContainer | undefined {
  switch (containerName) {
    case 'mp4':
    case 'm4a':
      return 'MP4';
    case 'mov':
      return 'MOV';
    case 'mxf':
      return 'MXF';
    case 'mpegts':
      return 'MPEGTS';
    default:
      return undefined;
  }
}

/** The probe's codec name -> the codec kept when `codec` is absent (only codecs selectable in `encodingConfiguration`). */
export function codecOfSource(codecName: string | undefined): Codec | undefined {
  switch (codecName) {
    case 'h264':
      return 'H264';
    case 'hevc':
      return 'HEVC';
    case 'mpeg2':
      return 'MPEG2';
    case 'ffv1':
      return 'FFV1';
    default:
      return undefined;
  }
}

/**
 * Audio for each container: AAC 192 kbit/s in MP4 and MPEG-TS (and in MOV with a delivery
 * codec); 24-bit PCM in MOV with a mastering codec (ProRes, DNx, FFV1); 24-bit PCM at 48 kHz in
 * MXF (the MXF muxer takes PCM only). Every audio stream of the source is kept.
 */
export function audioArgs(container: MediaContainer, codec: OutputCodec): { args: string[]; bitsPerSecond: number } {
  const pcm = { args: ['-c:a', 'pcm_s24le', '-ar', '48000'], bitsPerSecond: 2 * 24 * 48_000 };
  if (container === 'MXF') return pcm;
  if (container === 'MOV' && (codec === 'PRORES' || codec === 'DNXHD' || codec === 'DNXHR' || codec === 'FFV1')) return pcm;
  return { args: ['-c:a', 'aac', '-b:a', '192k'], bitsPerSecond: 192_000 };
}
