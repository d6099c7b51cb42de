import { strict as assert } from 'node:assert';
import { ProcessingOptionsError, validateOptions, type EngineCapabilities, type ProcessingOptions } from '../../src/processing-planner';
import { FULL_CAPABILITIES } from '../../src/processing-planner/capabilities';
import { BadRequestError } from '../../src/shared/errors';
import { processingError } from './helpers';

const HDR_OUT = (colorProfile: object, extra: object = {}) => ({
  processingSettings: { outputColorSpaceConversion: { mappingMode: 'USER_PRIORITY', colorProfile, ...extra } },
});

/** [name, options, errorCode, field of the first validation error] */
const INVALID: [string, unknown, string, string][] = [
  // Container / codec pairs (contract description of `container`)
  ['HEVC in MXF', { container: 'MXF', encodingConfiguration: { codec: 'HEVC' } }, 'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC', 'container'],
  ['MPEG2 in MP4', { container: 'MP4', encodingConfiguration: { codec: 'MPEG2' } }, 'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC', 'container'],
  ['FFV1 in MPEGTS', { container: 'MPEGTS', encodingConfiguration: { codec: 'FFV1' } }, 'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC', 'container'],
  ['XDCAM in MOV', { container: 'MOV', encodingConfiguration: { codec: 'XDCAM' } }, 'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC', 'container'],
  ['ProRes in MXF', { container: 'MXF', encodingProfile: 'PRORES_422_HQ' }, 'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC', 'container'],
  ['DNxHR in MP4', { container: 'MP4', encodingProfile: 'DNXHR_HQ' }, 'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC', 'container'],
  ['ProRes in MPEGTS', { container: 'MPEGTS', encodingProfile: 'PRORES_422_LT' }, 'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC', 'container'],
  // Resolution
  ['scaler without resolution', { filters: { scaler: 'SCALE' } }, 'MISSING_CUSTOM_RESOLUTION', 'filterSettings.resolution'],
  ['width only, no aspectRatioTag', { filters: { scaler: 'SCALE' }, filterSettings: { resolution: { width: 1280 } } }, 'MISSING_CUSTOM_RESOLUTION', 'filterSettings.resolution.height'],
  ['height only, no aspectRatioTag', { filters: { scaler: 'DVRES2' }, filterSettings: { resolution: { height: 720 } } }, 'MISSING_CUSTOM_RESOLUTION', 'filterSettings.resolution.width'],
  ['empty resolution', { filters: { scaler: 'SCALE' }, filterSettings: { resolution: { aspectRatioTag: 'DISPLAY' } } }, 'MISSING_CUSTOM_RESOLUTION', 'filterSettings.resolution'],
  ['prescaler without size', { filters: { prescaler: 'SCALE' } }, 'MISSING_CUSTOM_RESOLUTION', 'filterSettings.prescaledResolution'],
  ['width 7682', { filters: { scaler: 'SCALE' }, filterSettings: { resolution: { width: 7682, height: 1080 } } }, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'filterSettings.resolution.width'],
  ['width 15', { filters: { scaler: 'SCALE' }, filterSettings: { resolution: { width: 15, height: 1080 } } }, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'filterSettings.resolution.width'],
  ['height 4321', { filters: { scaler: 'SCALE' }, filterSettings: { resolution: { width: 1920, height: 4321 } } }, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'filterSettings.resolution.height'],
  ['height 8', { filters: { scaler: 'SCALE' }, filterSettings: { resolution: { width: 1920, height: 8 } } }, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'filterSettings.resolution.height'],
  [
    'prescaled 8000 wide',
    { filters: { prescaler: 'SCALE' }, filterSettings: { prescaledResolution: { width: 8000, height: 720 } } },
    'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
    'filterSettings.prescaledResolution.width',
  ],
  // Frame rate
  ['fps 0', { filters: { frameRateConverter: 'FPS' }, filterSettings: { frameRate: { fps: 0 } } }, 'VALIDATION_ERROR', 'filterSettings.frameRate.fps'],
  ['fps 1000', { filters: { frameRateConverter: 'FPS' }, filterSettings: { frameRate: { fps: 1000 } } }, 'VALIDATION_ERROR', 'filterSettings.frameRate.fps'],
  ['frame rate converter without rate', { filters: { frameRateConverter: 'VFI' } }, 'VALIDATION_ERROR', 'filterSettings.frameRate'],
  // Filters that need settings, inconsistent settings
  ['WESTON3F without field order', { filters: { deinterlacer: 'WESTON3F' } }, 'VALIDATION_ERROR', 'filterSettings.interlacedFieldOrderMode'],
  ['crop without coordinates', { filters: { reshaper: 'CROP' } }, 'VALIDATION_ERROR', 'filterSettings.normalizedCropCoordinates'],
  [
    'crop x2 <= x1',
    { filters: { reshaper: 'CROP' }, filterSettings: { normalizedCropCoordinates: { x1: 0.5, y1: 0, x2: 0.5, y2: 1 } } },
    'VALIDATION_ERROR',
    'filterSettings.normalizedCropCoordinates.x2',
  ],
  [
    'crop y2 <= y1',
    { filters: { reshaper: 'CROP' }, filterSettings: { normalizedCropCoordinates: { x1: 0, y1: 0.8, x2: 1, y2: 0.2 } } },
    'VALIDATION_ERROR',
    'filterSettings.normalizedCropCoordinates.y2',
  ],
  [
    'crop coordinate above 1',
    { filters: { reshaper: 'CROP' }, filterSettings: { normalizedCropCoordinates: { x1: 0, y1: 0, x2: 1.5, y2: 1 } } },
    'VALIDATION_ERROR',
    'filterSettings.normalizedCropCoordinates.x2',
  ],
  ['FACEFORWARD without settings', { filters: { augmenter: 'FACEFORWARD' } }, 'VALIDATION_ERROR', 'filterSettings.faceForward'],
  ['FILMGRAIN without settings', { filters: { postProcessor: 'FILMGRAIN' } }, 'VALIDATION_ERROR', 'filterSettings.filmGrain'],
  [
    'grain strength 51',
    { filters: { postProcessor: 'FILMGRAIN' }, filterSettings: { filmGrain: { grainSize: 'FINE', grainStrength: 51 } } },
    'VALIDATION_ERROR',
    'filterSettings.filmGrain.grainStrength',
  ],
  ['unknown filter value', { filters: { scaler: 'WAIFU2X' } }, 'VALIDATION_ERROR', 'filters.scaler'],
  ['unknown option', { filters: { sharpener: 'UNSHARP' } }, 'VALIDATION_ERROR', 'filters.sharpener'],
  ['unknown top-level option', { speed: 'fast' }, 'VALIDATION_ERROR', 'speed'],
  ['bitrate below 10000', { encodingConfiguration: { codec: 'H264', bitrate: 9999 } }, 'VALIDATION_ERROR', 'encodingConfiguration.bitrate'],
  // Pixel formats the encoders cannot produce
  ['H.264 12-bit', { encodingConfiguration: { codec: 'H264', pixelFormat: { yuv: '4:2:0', bitDepth: 12 } } }, 'UNSUPPORTED_PROCESSING_OPTION', 'encodingConfiguration.pixelFormat.bitDepth'],
  ['MPEG-2 10-bit', { encodingConfiguration: { codec: 'MPEG2', pixelFormat: { yuv: '4:2:2', bitDepth: 10 } } }, 'UNSUPPORTED_PROCESSING_OPTION', 'encodingConfiguration.pixelFormat.bitDepth'],
  ['MPEG-2 4:4:4', { encodingConfiguration: { codec: 'MPEG2', pixelFormat: { yuv: '4:4:4', bitDepth: 8 } } }, 'UNSUPPORTED_PROCESSING_OPTION', 'encodingConfiguration.pixelFormat.yuv'],
  ['XDCAM 4:4:4', { encodingConfiguration: { codec: 'XDCAM', pixelFormat: { yuv: '4:4:4', bitDepth: 8 } } }, 'UNSUPPORTED_PROCESSING_OPTION', 'encodingConfiguration.pixelFormat.yuv'],
  ['DNxHD 4:4:4 profile', { encodingProfile: 'DNXHD_440X_444' }, 'UNSUPPORTED_PROCESSING_OPTION', 'encodingProfile'],
  ['FFV1 bitrate', { encodingConfiguration: { codec: 'FFV1', bitrate: 5_000_000 } }, 'UNSUPPORTED_PROCESSING_OPTION', 'encodingConfiguration.bitrate'],
  ['XDCAM bitrate', { encodingConfiguration: { codec: 'XDCAM', bitrate: 25_000_000 } }, 'UNSUPPORTED_PROCESSING_OPTION', 'encodingConfiguration.bitrate'],
  [
    'interlaced HEVC',
    { encodingConfiguration: { codec: 'HEVC' }, processingSettings: { outputScanning: 'INTERLACED_TOP_FIRST' } },
    'UNSUPPORTED_PROCESSING_OPTION',
    'processingSettings.outputScanning',
  ],
  [
    'interlaced DNxHR',
    { encodingProfile: 'DNXHR_SQ', container: 'MXF', processingSettings: { outputScanning: 'INTERLACED_BOTTOM_FIRST' } },
    'UNSUPPORTED_PROCESSING_OPTION',
    'processingSettings.outputScanning',
  ],
  [
    'FACEFORWARD background blur',
    { filters: { augmenter: 'FACEFORWARD' }, filterSettings: { faceForward: { colorBoost: 5, autoWhiteBalance: false, relightIntensity: 0, backgroundBlur: 5 } } },
    'UNSUPPORTED_PROCESSING_OPTION',
    'filterSettings.faceForward.backgroundBlur',
  ],
  [
    'inverse HABLE',
    HDR_OUT({ hdrFormat: 'PQ10' }, { inverseToneMapper: { algorithm: 'HABLE' } }),
    'UNSUPPORTED_PROCESSING_OPTION',
    'processingSettings.outputColorSpaceConversion.inverseToneMapper.algorithm',
  ],
  [
    'mastering display on H.264',
    { encodingConfiguration: { codec: 'H264' }, ...HDR_OUT({ hdrFormat: 'PQ10', masteringDisplay: { tag: 'P3_D65' } }) },
    'UNSUPPORTED_PROCESSING_OPTION',
    'processingSettings.outputColorSpaceConversion.colorProfile.masteringDisplay',
  ],
  ['maxCll on ProRes', { encodingProfile: 'PRORES_4444_XQ', ...HDR_OUT({ maxCll: 1000 }) }, 'UNSUPPORTED_PROCESSING_OPTION', 'processingSettings.outputColorSpaceConversion.colorProfile.maxCll'],
  // Colour
  [
    'STRICT_USER input without profile',
    { processingSettings: { inputColorSpaceConversion: { mappingMode: 'STRICT_USER' } } },
    'INVALID_INPUT_COLOR_CONVERSION',
    'processingSettings.inputColorSpaceConversion.colorProfile',
  ],
  [
    'STRICT_USER input, incomplete',
    { processingSettings: { inputColorSpaceConversion: { mappingMode: 'STRICT_USER', colorProfile: { colorSpace: 'BT709', colorPrimaries: 'BT709' } } } },
    'INVALID_INPUT_COLOR_CONVERSION',
    'processingSettings.inputColorSpaceConversion.colorProfile',
  ],
  [
    'STRICT_USER output, missing range',
    { processingSettings: { outputColorSpaceConversion: { mappingMode: 'STRICT_USER', colorProfile: { colorSpace: 'BT709', colorPrimaries: 'BT709', transferCharacteristics: 'BT709' } } } },
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.colorProfile',
  ],
  [
    'HDR format against explicit transfer',
    HDR_OUT({ hdrFormat: 'HLG', transferCharacteristics: 'SMPTE2084' }),
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.colorProfile.transferCharacteristics',
  ],
  ['HDR in full range', HDR_OUT({ hdrFormat: 'PQ10', colorRange: 'FULL' }), 'INVALID_OUTPUT_COLOR_CONVERSION', 'processingSettings.outputColorSpaceConversion.colorProfile.colorRange'],
  [
    'HDR10 on H.264',
    { encodingConfiguration: { codec: 'H264' }, ...HDR_OUT({ hdrFormat: 'HDR10' }) },
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.colorProfile.hdrFormat',
  ],
  [
    'HDR10 at 8 bits',
    { encodingConfiguration: { codec: 'HEVC', pixelFormat: { yuv: '4:2:0', bitDepth: 8 } }, ...HDR_OUT({ hdrFormat: 'HDR10' }) },
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.colorProfile.hdrFormat',
  ],
  [
    'PQ10 on MPEG-2',
    { encodingConfiguration: { codec: 'MPEG2' }, ...HDR_OUT({ hdrFormat: 'PQ10' }) },
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.colorProfile.hdrFormat',
  ],
  [
    'PQ10 with an 8-bit DNxHR',
    { encodingProfile: 'DNXHR_HQ', ...HDR_OUT({ hdrFormat: 'PQ10' }) },
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.colorProfile.hdrFormat',
  ],
  [
    'mastering display without points',
    HDR_OUT({ hdrFormat: 'HDR10', masteringDisplay: { red: { x: 0.68, y: 0.32 } } }),
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.colorProfile.masteringDisplay',
  ],
  ['maxFall above maxCll', HDR_OUT({ hdrFormat: 'HDR10', maxCll: 400, maxFall: 1000 }), 'INVALID_OUTPUT_COLOR_CONVERSION', 'processingSettings.outputColorSpaceConversion.colorProfile.maxFall'],
  ['maxFall with HLG', HDR_OUT({ hdrFormat: 'HLG', maxFall: 100 }), 'INVALID_OUTPUT_COLOR_CONVERSION', 'processingSettings.outputColorSpaceConversion.colorProfile.maxFall'],
  [
    'inverse tone mapper to SDR',
    HDR_OUT({ colorSpace: 'BT709' }, { inverseToneMapper: { algorithm: 'LINEAR' } }),
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.inverseToneMapper',
  ],
  [
    'inverse tone mapper, metadata only',
    HDR_OUT({ hdrFormat: 'HLG' }, { metadataOnly: true, inverseToneMapper: { algorithm: 'LINEAR' } }),
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.metadataOnly',
  ],
  [
    'tone mapper, metadata only',
    { processingSettings: { inputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY', metadataOnly: true, toneMapper: { algorithm: 'HABLE' } } } },
    'INVALID_INPUT_COLOR_CONVERSION',
    'processingSettings.inputColorSpaceConversion.metadataOnly',
  ],
  [
    'tone mapper into an HDR output',
    {
      processingSettings: {
        inputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY', toneMapper: { algorithm: 'HABLE' } },
        outputColorSpaceConversion: { mappingMode: 'USER_PRIORITY', colorProfile: { hdrFormat: 'PQ10' } },
      },
    },
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.colorProfile',
  ],
  ['input mapping mode missing', { processingSettings: { inputColorSpaceConversion: {} } }, 'INVALID_INPUT_COLOR_CONVERSION', 'processingSettings.inputColorSpaceConversion.mappingMode'],
  [
    'output mapping mode unknown',
    { processingSettings: { outputColorSpaceConversion: { mappingMode: 'BEST' } } },
    'INVALID_OUTPUT_COLOR_CONVERSION',
    'processingSettings.outputColorSpaceConversion.mappingMode',
  ],
];

describe('Processing options: static validation', function () {
  for (const [name, options, code, field] of INVALID) {
    it(`${name}: 400 ${code} at ${field}`, function () {
      const err = processingError(() => validateOptions(options as ProcessingOptions));
      assert.ok(err instanceof BadRequestError);
      assert.equal(err.status, 400);
      assert.equal(err.errorCode, code);
      const fields = err.details!.validationErrors!.map((v) => v.field);
      assert.equal(fields[0], field, JSON.stringify(err.details!.validationErrors));
      assert.ok(err.details!.validationErrors![0]!.message.length > 5);
    });
  }

  it('reports every problem, the most specific code first', function () {
    const err = processingError(() =>
      validateOptions({
        container: 'MP4',
        encodingConfiguration: { codec: 'MPEG2', bitrate: 5 },
        filters: { scaler: 'SCALE', deinterlacer: 'WESTON3F' },
      }),
    );
    assert.equal(err.errorCode, 'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC');
    const fields = err.details!.validationErrors!.map((v) => v.field).sort();
    assert.deepEqual(fields, ['container', 'encodingConfiguration.bitrate', 'filterSettings.interlacedFieldOrderMode', 'filterSettings.resolution']);
    assert.match(err.message, /and 3 more problems/);
  });

  it('withFieldPrefix moves every field under the given name', function () {
    const err = processingError(() => validateOptions({ filters: { scaler: 'SCALE' } })).withFieldPrefix('options');
    assert.equal(err.details!.validationErrors![0]!.field, 'options.filterSettings.resolution');
    assert.equal(err.errorCode, 'MISSING_CUSTOM_RESOLUTION');
  });

  const VALID: [string, ProcessingOptions][] = [
    ['empty options', {}],
    ['every container with H264', { container: 'MXF', encodingConfiguration: { codec: 'H264' } }],
    ['ProRes in MOV', { encodingProfile: 'PRORES_4444_XQ', container: 'MOV' }],
    ['DNxHD in MXF and MOV', { encodingProfile: 'DNXHD_220X_HQX', container: 'MOV' }],
    ['DNxHR in MXF', { encodingProfile: 'DNXHR_444', container: 'MXF' }],
    ['XDCAM in MXF', { encodingConfiguration: { codec: 'XDCAM' }, container: 'MXF' }],
    ['HEVC in MPEGTS, 12-bit 4:4:4', { encodingConfiguration: { codec: 'HEVC', pixelFormat: { yuv: '4:4:4', bitDepth: 12 } }, container: 'MPEGTS' }],
    ['a profile makes encodingConfiguration ignored', { encodingProfile: 'PRORES_422_HQ', encodingConfiguration: { codec: 'MPEG2', pixelFormat: { yuv: '4:4:4', bitDepth: 12 } } }],
    ['width and aspect ratio tag', { filters: { scaler: 'SCALE' }, filterSettings: { resolution: { width: 1280, aspectRatioTag: 'DISPLAY' } } }],
    ['tag wins over a bad width', { filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: '2X', width: 99999 } } }],
    ['settings of filters that are off are ignored', { filterSettings: { resolution: { width: 99999 }, frameRate: { fps: 5000 } } }],
    ['null turns a stage off', { filters: { scaler: null, deinterlacer: null } }],
    ['tag wins over fps', { filters: { frameRateConverter: 'FPS' }, filterSettings: { frameRate: { tag: 'FILM', fps: 5000 } } }],
    ['fps bounds', { filters: { frameRateConverter: 'FPS' }, filterSettings: { frameRate: { fps: 0.001 } } }],
    [
      'HDR10 with points',
      {
        encodingConfiguration: { codec: 'HEVC' },
        ...(HDR_OUT({
          hdrFormat: 'HDR10',
          maxCll: 1000,
          maxFall: 400,
          masteringDisplay: { red: { x: 0.68, y: 0.32 }, green: { x: 0.265, y: 0.69 }, blue: { x: 0.15, y: 0.06 }, whitePoint: { x: 0.3127, y: 0.329 } },
        }) as ProcessingOptions),
      },
    ],
    ['STRICT_USER complete through hdrFormat', { processingSettings: { outputColorSpaceConversion: { mappingMode: 'STRICT_USER', colorProfile: { hdrFormat: 'HLG' } } } }],
    ['inverse LINEAR to PQ', HDR_OUT({ hdrFormat: 'PQ10' }, { inverseToneMapper: { algorithm: 'LINEAR', outputNits: 400 } }) as ProcessingOptions],
    [
      'RESOLUTION_ONLY ignores the profile',
      { encodingConfiguration: { codec: 'H264' }, processingSettings: { outputColorSpaceConversion: { mappingMode: 'RESOLUTION_ONLY', colorProfile: { hdrFormat: 'HDR10' } } } },
    ],
  ];
  for (const [name, options] of VALID) {
    it(`accepts: ${name}`, function () {
      validateOptions(options);
    });
  }

  describe('what this ffmpeg lacks is refused as unsupported', function () {
    const without = (...names: string[]): EngineCapabilities => ({
      filters: new Set([...FULL_CAPABILITIES.filters].filter((f) => !names.includes(f))),
      encoders: new Set([...FULL_CAPABILITIES.encoders].filter((e) => !names.includes(e))),
    });
    const CASES: [string, ProcessingOptions, string[], string][] = [
      ['no libx265', { encodingConfiguration: { codec: 'HEVC' } }, ['libx265'], 'encodingConfiguration.codec'],
      ['no prores_ks', { encodingProfile: 'PRORES_422_HQ' }, ['prores_ks'], 'encodingProfile'],
      ['no w3fdif', { filters: { deinterlacer: 'WESTON3F' }, filterSettings: { interlacedFieldOrderMode: 'AUTO_METADATA' } }, ['w3fdif'], 'filters.deinterlacer'],
      ['no nlmeans', { filters: { denoiser: 'DENOISE' } }, ['nlmeans'], 'filters.denoiser'],
      ['no minterpolate', { filters: { frameRateConverter: 'VFI' }, filterSettings: { frameRate: { fps: 50 } } }, ['minterpolate'], 'filters.frameRateConverter'],
      ['no stabilizer at all', { filters: { stabilizer: 'DEJIT' } }, ['vidstabdetect', 'deshake'], 'filters.stabilizer'],
      [
        'no tonemap',
        { processingSettings: { inputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY', toneMapper: { algorithm: 'HABLE' } } } },
        ['tonemap'],
        'processingSettings.inputColorSpaceConversion.toneMapper',
      ],
      ['no zscale for PQ', HDR_OUT({ hdrFormat: 'PQ10' }) as ProcessingOptions, ['zscale'], 'processingSettings.outputColorSpaceConversion.colorProfile'],
    ];
    for (const [name, options, missing, field] of CASES) {
      it(name, function () {
        validateOptions(options); // fine with everything present
        const err = processingError(() => validateOptions(options, without(...missing)));
        assert.equal(err.errorCode, 'UNSUPPORTED_PROCESSING_OPTION');
        assert.equal(err.details!.validationErrors![0]!.field, field);
        assert.match(err.details!.validationErrors![0]!.message, /^not supported by this installation/);
      });
    }
    it('a stabilizer falls back to deshake without vidstab', function () {
      validateOptions({ filters: { stabilizer: 'DEJIT' } }, without('vidstabdetect', 'vidstabtransform'));
    });
  });

  it('ProcessingOptionsError is a 400 domain error', function () {
    const err = new ProcessingOptionsError([{ code: 'VALIDATION_ERROR', field: 'x', message: 'bad', value: '1' }]);
    assert.equal(err.status, 400);
    assert.deepEqual(err.details!.validationErrors, [{ field: 'x', message: 'bad', value: '1' }]);
  });

  it('validationErrors redact secret-named fields at any depth: a rejected options value is echoed without them', function () {
    const err = processingError(() => validateOptions({ filters: [{ secretAccessKey: 'S3CR3T', nested: { password: 'x' } }] } as unknown as ProcessingOptions));
    const issue = (err.details!.validationErrors ?? []).find((i) => i.field === 'filters');
    assert.ok(issue, JSON.stringify(err.details));
    assert.equal(issue.value, JSON.stringify([{ secretAccessKey: '[redacted]', nested: { password: '[redacted]' } }]));
  });
});
