/**
 * The built-in processing configurations, as data. The configurations service seeds them (with
 * fixed ids, so a re-seed updates rather than duplicates); each passes `validateOptions`
 * (test/processing/built-ins.test.ts) and names fit the contract's 1..47 characters.
 */
import type { ProcessingOptions } from './options';

export interface BuiltInConfiguration {
  /** Stable identifier (uuid) of the built-in. */
  id: string;
  /** Short stable key, for code and logs. */
  key: string;
  name: string;
  description: string;
  options: ProcessingOptions;
}

export const BUILT_IN_CONFIGURATIONS: readonly BuiltInConfiguration[] = [
  {
    id: '6b1f0c3e-2d4a-4e5b-9c01-000000000001',
    key: 'upscale-full-hd',
    name: 'Upscale to Full HD',
    description:
      'Denoises lightly and upscales to 1920x1080 (aspect ratio kept, black bars where it differs), H.264 in MP4. ' + 'The DVRES2 scaler is applied as Lanczos resampling with an unsharp mask.',
    options: {
      container: 'MP4',
      encodingConfiguration: { codec: 'H264', pixelFormat: { yuv: '4:2:0', bitDepth: 8 } },
      filters: { denoiser: 'HQDN3D', scaler: 'DVRES2' },
      filterSettings: { resolution: { tag: 'FULL_HD' }, dvres2Variant: 'GENERIC' },
      processingSettings: { fixedOutputResolution: 'FULL_HD', outputScanning: 'PROGRESSIVE' },
    },
  },
  {
    id: '6b1f0c3e-2d4a-4e5b-9c01-000000000002',
    key: 'upscale-4k',
    name: 'Upscale to 4K',
    description: 'Upscales to 3840x2160 (aspect ratio kept, black bars where it differs), 10-bit HEVC in MP4. ' + 'The DVRES2 scaler is applied as Lanczos resampling with an unsharp mask.',
    options: {
      container: 'MP4',
      encodingConfiguration: { codec: 'HEVC', pixelFormat: { yuv: '4:2:0', bitDepth: 10 } },
      filters: { scaler: 'DVRES2' },
      filterSettings: { resolution: { tag: 'UHD_4K' }, dvres2Variant: 'GENERIC' },
      processingSettings: { fixedOutputResolution: 'UHD_4K', outputScanning: 'PROGRESSIVE' },
    },
  },
  {
    id: '6b1f0c3e-2d4a-4e5b-9c01-000000000003',
    key: 'convert-hevc-mp4',
    name: 'Convert to HEVC MP4',
    description: 'Re-encodes to HEVC (constant quality, CRF 22) in MP4 at the source size, frame rate and bit depth; interlaced video is deinterlaced.',
    options: {
      container: 'MP4',
      encodingConfiguration: { codec: 'HEVC' },
    },
  },
  {
    id: '6b1f0c3e-2d4a-4e5b-9c01-000000000004',
    key: 'compress-h264',
    name: 'Compress H.264',
    description: 'Re-encodes to 8-bit H.264 at 4 Mbit/s in MP4 at the source size and frame rate, for delivery and the web.',
    options: {
      container: 'MP4',
      encodingConfiguration: { codec: 'H264', pixelFormat: { yuv: '4:2:0', bitDepth: 8 }, bitrate: 4_000_000 },
    },
  },
  {
    id: '6b1f0c3e-2d4a-4e5b-9c01-000000000005',
    key: 'prores-422-hq-mov',
    name: 'ProRes 422 HQ MOV',
    description: 'Re-encodes to Apple ProRes 422 HQ (10-bit 4:2:2) in QuickTime with 24-bit PCM audio, for editing and mastering.',
    options: { encodingProfile: 'PRORES_422_HQ', container: 'MOV' },
  },
  {
    id: '6b1f0c3e-2d4a-4e5b-9c01-000000000006',
    key: 'dnxhr-hq-mxf',
    name: 'DNxHR HQ MXF',
    description:
      'Re-encodes to Avid DNxHR HQ (8-bit 4:2:2) in MXF OP1a with 24-bit PCM audio, for Avid workflows. ' + 'DNxHR is progressive here: interlaced video is deinterlaced (one frame per field).',
    options: { encodingProfile: 'DNXHR_HQ', container: 'MXF', processingSettings: { outputScanning: 'PROGRESSIVE' } },
  },
  {
    id: '6b1f0c3e-2d4a-4e5b-9c01-000000000007',
    key: 'sd-archive-restore',
    name: 'Deinterlace and denoise an SD archive',
    description:
      'Deinterlaces (one frame per field, field order from the metadata), removes noise and encodes H.264 in MP4 at the source size. ' +
      'The DEINT and DENOISE filters are applied as bwdif and non-local means.',
    options: {
      container: 'MP4',
      encodingConfiguration: { codec: 'H264', pixelFormat: { yuv: '4:2:0', bitDepth: 8 } },
      filters: { deinterlacer: 'DEINT', denoiser: 'DENOISE' },
      filterSettings: { interlacedFieldOrderMode: 'AUTO_METADATA' },
      processingSettings: { outputScanning: 'PROGRESSIVE' },
    },
  },
];
