import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import Ajv from 'ajv';
import type { components } from '../../generated/api';
import { analysisArgs, buildProcessingPlan, processingArgs, type EngineCapabilities, type PlanEnvironment, type ProcessingOptions, type ProcessingPlan } from '../../src/processing-planner';
import { FULL_CAPABILITIES } from '../../src/processing-planner/capabilities';
import { TRANSFORMS_TOKEN } from '../../src/processing-planner/ffmpeg-args';
import { escapeFilterValue } from '../../src/processing-planner/ffmpeg-syntax';
import { fpsRational } from '../../src/processing-planner/rational';
import { PAL_SD_INTERLACED, probeOf, processingError, type FakeSource } from './helpers';

// Compile-time: the contract's options are the engine's options (a handler maps by assignment).
const fromContract = (o: components['schemas']['VideoProcessingConfigurationOptions']): ProcessingOptions => o;
void fromContract;

const contract = JSON.parse(readFileSync('generated/openapi.json', 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addSchema({ $id: 'contract.json', components: contract.components });
const validateApplied = ajv.compile({ $ref: 'contract.json#/components/schemas/VideoProcessingConfigurationOptions' });
const validateAppliedOutput = ajv.compile({ $ref: 'contract.json#/components/schemas/VideoProcessingAppliedOutput' });
// Compile-time: the applied output is the contract's (the processing view passes it through).
const toContract = (o: ProcessingPlan['applied']['output']): components['schemas']['VideoProcessingAppliedOutput'] => o;
void toContract;

function plan(options: ProcessingOptions, source: FakeSource = {}, range?: { startMs: number; endMs: number }, env: PlanEnvironment = {}): ProcessingPlan {
  const probe = probeOf(source);
  const p = buildProcessingPlan(options, probe, range ?? { startMs: 0, endMs: probe.durationMs }, env);
  // Every applied options object is valid against the contract (it goes into processing.options).
  assert.ok(validateApplied(p.applied.options), JSON.stringify(validateApplied.errors));
  assert.ok(validateAppliedOutput(p.applied.output), JSON.stringify(validateAppliedOutput.errors));
  return p;
}

/** The value after `flag` in an argument list. */
function arg(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}

const graphOf = (p: ProcessingPlan) => p.filterGraph;
const without = (...names: string[]): EngineCapabilities => ({
  filters: new Set([...FULL_CAPABILITIES.filters].filter((f) => !names.includes(f))),
  encoders: new Set(FULL_CAPABILITIES.encoders),
});

const SD_PROGRESSIVE_43: FakeSource = { width: 720, height: 576, dar: '4:3', codecName: 'mpeg2', containerName: 'mpegts' };

describe('Processing plan', function () {
  describe('range: seek and trim', function () {
    it('the whole source needs neither -ss nor -t on the input', function () {
      const p = plan({});
      assert.deepEqual(p.inputArgs, []);
      assert.equal(arg(p.outputArgs, '-t'), '10.000');
      assert.equal(p.output.durationMs, 10_000);
      assert.equal(p.output.frames, 250);
    });
    it('a range seeks on the input and limits its duration (a millisecond either side for rounded stored times; the output -t cuts exactly)', function () {
      const p = plan({}, {}, { startMs: 2000, endMs: 3500 });
      assert.deepEqual(p.inputArgs, ['-ss', '1.999', '-t', '1.502']);
      assert.equal(arg(p.outputArgs, '-t'), '1.500');
      assert.equal(p.output.frames, 38); // 1.5 s x 25 (frames 50..87)
    });
    it('a start between two frames starts on the first frame at or after it (no repeated first frame)', function () {
      const p = plan({}, {}, { startMs: 2500, endMs: 4000 });
      assert.deepEqual(p.inputArgs, ['-ss', '2.519', '-t', '1.482']); // frame 63 at 2.52 s
      assert.equal(arg(p.outputArgs, '-t'), '1.480');
      assert.equal(p.output.frames, 37);
      assert.equal(p.output.durationMs, 1480);
      // 29.97: 500 ms falls between frame 14 (467.1 ms) and frame 15 (500.5 ms); the seek is in
      // microseconds, a millisecond before the frame (Matroska stores frame 15 at 500 or 501 ms).
      const ntsc = plan({}, { rate: '30000:1001' }, { startMs: 500, endMs: 2000 });
      assert.deepEqual(ntsc.inputArgs, ['-ss', '0.499500', '-t', '1.501500']);
      assert.equal(ntsc.applied.output.startPositionMilliseconds, 500.5);
      assert.equal(ntsc.output.frames, 45); // frames 15..59
      // The grid counts from where the video starts (audio first in the file).
      const late = plan({}, { videoStartMs: 10 }, { startMs: 500, endMs: 2000 });
      assert.equal(late.inputArgs[1], '0.529');
      // ... to the microsecond (an MPEG-TS whose video starts 42.667 ms after its 24 kHz AAC).
      const ts = plan({}, { videoStartMs: 42.667, rate: '30000:1001' }, { startMs: 1234, endMs: 7777 });
      assert.equal(ts.applied.output.startPositionMilliseconds, 1243.867);
    });
    it('a range ending before the end needs -t only', function () {
      assert.deepEqual(plan({}, {}, { startMs: 0, endMs: 5000 }).inputArgs, ['-t', '5.001']);
    });
    const BAD: [string, number, number, string][] = [
      ['negative start', -1, 1000, 'INVALID_START_POSITION'],
      ['start at the end', 10_000, 10_001, 'INVALID_START_POSITION'],
      ['end past the source', 0, 10_001, 'INVALID_END_POSITION'],
      ['end before start', 5000, 4000, 'INVALID_END_POSITION'],
      ['empty range', 5000, 5000, 'INVALID_END_POSITION'],
    ];
    for (const [name, startMs, endMs, code] of BAD) {
      it(`${name}: 400 ${code}`, function () {
        assert.equal(processingError(() => buildProcessingPlan({}, probeOf(), { startMs, endMs })).errorCode, code);
      });
    }
  });

  describe('codec and container', function () {
    it('without options the source codec, container and pixel format are kept, at a quality target', function () {
      const p = plan({});
      assert.equal(p.container, 'MP4');
      assert.equal(p.output.codec, 'H264');
      assert.equal(arg(p.outputArgs, '-c:v'), 'libx264');
      assert.equal(arg(p.outputArgs, '-preset'), 'medium');
      assert.equal(arg(p.outputArgs, '-crf'), '20');
      assert.equal(arg(p.outputArgs, '-pix_fmt'), 'yuv420p');
      assert.equal(arg(p.outputArgs, '-f'), 'mp4');
      assert.equal(arg(p.outputArgs, '-movflags'), '+faststart+write_colr');
      assert.equal(p.outputArgs.includes('-x265-params') || p.outputArgs.includes('-flags'), false);
      assert.equal(arg(p.outputArgs, '-tag:v'), 'avc1', 'the plain AVC sample entry, never an AVC-Intra one');
      assert.equal(p.output.crf, 20);
      assert.equal(p.output.bitrate, undefined);
      assert.deepEqual(p.applied.options.encodingConfiguration, { codec: 'H264', pixelFormat: { yuv: '4:2:0', bitDepth: 8, name: 'yuv420p' } });
      assert.equal(p.applied.options.container, 'MP4');
    });
    it('the encoder preset is an installation setting', function () {
      assert.equal(arg(plan({}, {}, undefined, { encoderPreset: 'veryfast' }).outputArgs, '-preset'), 'veryfast');
    });
    it('a source codec no container option allows becomes H.264; an unknown source container becomes the codec default', function () {
      const p = plan({}, { codecName: 'prores', containerName: 'mov', pixelFormatName: 'yuv422p10le', bitDepth: 10 });
      assert.equal(p.output.codec, 'H264');
      assert.equal(p.container, 'MOV');
      assert.equal(p.output.pixelFormat, 'yuv422p10le');
      const mkv = plan({}, { codecName: 'hevc', containerName: 'matroska', pixelFormatName: 'yuv420p10le', bitDepth: 10 });
      assert.equal(mkv.output.codec, 'HEVC');
      assert.equal(mkv.container, 'MP4');
      assert.equal(mkv.fileExtension, '.mp4');
    });
    it('MPEG-2 in a transport stream is kept as it is', function () {
      const p = plan({}, SD_PROGRESSIVE_43);
      assert.equal(p.output.codec, 'MPEG2');
      assert.equal(p.container, 'MPEGTS');
    });
    it('a container that cannot hold the source codec gets H.264', function () {
      assert.equal(plan({ container: 'MP4' }, SD_PROGRESSIVE_43).output.codec, 'H264');
    });
    const CONTAINERS: [ProcessingOptions['container'], string, string, string][] = [
      ['MP4', 'mp4', '.mp4', 'video/mp4'],
      ['MOV', 'mov', '.mov', 'video/quicktime'],
      ['MXF', 'mxf', '.mxf', 'application/mxf'],
      ['MPEGTS', 'mpegts', '.ts', 'video/mp2t'],
    ];
    for (const [container, muxer, ext, mime] of CONTAINERS) {
      it(`container ${container}: muxer ${muxer}, ${ext}, ${mime}`, function () {
        const p = plan({ container, encodingConfiguration: { codec: 'H264' } });
        assert.equal(arg(p.outputArgs, '-f'), muxer);
        assert.equal(p.fileExtension, ext);
        assert.equal(p.mimeType, mime);
        assert.equal(p.outputArgs.includes('-movflags'), container === 'MP4' || container === 'MOV');
      });
    }
    it('a bitrate is the target of H.264 and HEVC (with a VBV of 1.5x / 2x)', function () {
      const p = plan({ encodingConfiguration: { codec: 'H264', bitrate: 4_000_000 } });
      assert.equal(arg(p.outputArgs, '-b:v'), '4000000');
      assert.equal(arg(p.outputArgs, '-maxrate'), '6000000');
      assert.equal(arg(p.outputArgs, '-bufsize'), '8000000');
      assert.equal(p.outputArgs.includes('-crf'), false);
      assert.equal(p.applied.options.encodingConfiguration!.bitrate, 4_000_000);
      assert.equal(p.output.bitrate, 4_000_000);
    });
    it('HEVC: libx265 with its log level, CRF 22, hvc1 tag in MP4 and MOV only', function () {
      const p = plan({ encodingConfiguration: { codec: 'HEVC' } });
      assert.equal(arg(p.outputArgs, '-c:v'), 'libx265');
      assert.equal(arg(p.outputArgs, '-crf'), '22');
      assert.equal(arg(p.outputArgs, '-x265-params'), 'log-level=error');
      assert.equal(arg(p.outputArgs, '-tag:v'), 'hvc1');
      assert.equal(plan({ encodingConfiguration: { codec: 'HEVC' }, container: 'MPEGTS' }).outputArgs.includes('-tag:v'), false);
    });
    it('MPEG-2 without a bitrate gets 0.4 bits per pixel', function () {
      const p = plan({ encodingConfiguration: { codec: 'MPEG2' } }, SD_PROGRESSIVE_43);
      assert.equal(arg(p.outputArgs, '-c:v'), 'mpeg2video');
      assert.equal(p.output.bitrate, 4_147_000); // 0.4 x 720 x 576 x 25
      assert.equal(p.applied.options.encodingConfiguration!.bitrate, 4_147_000);
      assert.equal(arg(plan({ encodingConfiguration: { codec: 'MPEG2', bitrate: 8_000_000 } }).outputArgs, '-b:v'), '8000000');
    });
    it('XDCAM: HD422 50 Mbit/s CBR by default, XDCAM HD 35 Mbit/s for 4:2:0, HD sizes only', function () {
      const p = plan({ encodingConfiguration: { codec: 'XDCAM' } });
      assert.equal(p.container, 'MXF');
      assert.equal(arg(p.outputArgs, '-c:v'), 'mpeg2video');
      assert.equal(arg(p.outputArgs, '-b:v'), '50000000');
      assert.equal(arg(p.outputArgs, '-minrate'), '50000000');
      assert.equal(p.output.pixelFormat, 'yuv422p');
      const hd35 = plan({ encodingConfiguration: { codec: 'XDCAM', pixelFormat: { yuv: '4:2:0', bitDepth: 8 } } });
      assert.equal(arg(hd35.outputArgs, '-b:v'), '35000000');
      assert.equal(hd35.outputArgs.includes('-minrate'), false);
      const err = processingError(() => plan({ encodingConfiguration: { codec: 'XDCAM' } }, SD_PROGRESSIVE_43));
      assert.equal(err.errorCode, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE');
      assert.match(err.message, /1920x1080, 1280x720/);
    });
    it('FFV1: level 3, intra, sliced with CRCs, lossless (no bitrate)', function () {
      const p = plan({ encodingConfiguration: { codec: 'FFV1' } });
      assert.deepEqual(p.outputArgs.slice(p.outputArgs.indexOf('-c:v'), p.outputArgs.indexOf('-c:v') + 10), ['-c:v', 'ffv1', '-level', '3', '-g', '1', '-slices', '4', '-slicecrc', '1']);
      assert.equal(p.container, 'MOV');
      assert.equal(p.output.bitrate, undefined);
    });
    const PRORES: [string, string, string][] = [
      ['PRORES_422_PROXY', '0', 'yuv422p10le'],
      ['PRORES_422_LT', '1', 'yuv422p10le'],
      ['PRORES_422_STANDARD', '2', 'yuv422p10le'],
      ['PRORES_422_HQ', '3', 'yuv422p10le'],
      ['PRORES_4444_STANDARD', '4', 'yuv444p10le'],
      ['PRORES_4444_XQ', '5', 'yuv444p10le'],
    ];
    for (const [profile, n, pixFmt] of PRORES) {
      it(`${profile}: prores_ks profile ${n}, ${pixFmt}, MOV`, function () {
        const p = plan({ encodingProfile: profile as ProcessingOptions['encodingProfile'] });
        assert.equal(arg(p.outputArgs, '-c:v'), 'prores_ks');
        assert.equal(arg(p.outputArgs, '-profile:v'), n);
        assert.equal(arg(p.outputArgs, '-vendor'), 'apl0');
        assert.equal(arg(p.outputArgs, '-pix_fmt'), pixFmt);
        assert.equal(p.container, 'MOV');
        assert.equal(p.applied.options.encodingProfile, profile);
        assert.equal(p.applied.options.encodingConfiguration, undefined);
      });
    }
    const DNXHR: [string, string, string][] = [
      ['DNXHR_LB', 'dnxhr_lb', 'yuv422p'],
      ['DNXHR_SQ', 'dnxhr_sq', 'yuv422p'],
      ['DNXHR_HQ', 'dnxhr_hq', 'yuv422p'],
      ['DNXHR_HQX', 'dnxhr_hqx', 'yuv422p10le'],
      ['DNXHR_444', 'dnxhr_444', 'yuv444p10le'],
    ];
    for (const [profile, name, pixFmt] of DNXHR) {
      it(`${profile}: dnxhd profile ${name}, ${pixFmt}, any size from 256x120, MXF by default`, function () {
        const p = plan({ encodingProfile: profile as ProcessingOptions['encodingProfile'] }, SD_PROGRESSIVE_43);
        assert.equal(arg(p.outputArgs, '-c:v'), 'dnxhd');
        assert.equal(arg(p.outputArgs, '-profile:v'), name);
        assert.equal(arg(p.outputArgs, '-pix_fmt'), pixFmt);
        assert.equal(p.container, 'MXF');
      });
    }
    it('DNxHD: the bitrate selects the profile; 8 or 10 bits; fixed frame sizes', function () {
      const hq = plan({ encodingProfile: 'DNXHD_220_HQ' });
      assert.equal(arg(hq.outputArgs, '-b:v'), '220M');
      assert.equal(arg(hq.outputArgs, '-pix_fmt'), 'yuv422p');
      assert.equal(hq.output.bitrate, 220_000_000);
      assert.equal(arg(plan({ encodingProfile: 'DNXHD_185X_HQX' }).outputArgs, '-pix_fmt'), 'yuv422p10le');
      assert.equal(arg(plan({ encodingProfile: 'DNXHD_90_LB' }, { width: 1280, height: 720 }).outputArgs, '-b:v'), '90M');
      const err = processingError(() => plan({ encodingProfile: 'DNXHD_36_LB' }, SD_PROGRESSIVE_43));
      assert.equal(err.errorCode, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE');
      assert.equal(err.details!.validationErrors![0]!.field, 'encodingProfile');
      assert.match(err.message, /1920x1080p/);
    });
    it('a profile ignores encodingConfiguration, and says so', function () {
      const p = plan({ encodingProfile: 'PRORES_422_HQ', encodingConfiguration: { codec: 'H264', bitrate: 1_000_000 } });
      assert.equal(p.applied.options.encodingConfiguration, undefined);
      assert.ok(p.applied.notes.some((n) => n.field === 'encodingConfiguration' && n.appliedAs === 'ignored'));
    });
  });

  describe('pixel format and bit depth', function () {
    it('an explicit pixel format is used as given', function () {
      const p = plan({ encodingConfiguration: { codec: 'HEVC', pixelFormat: { yuv: '4:2:2', bitDepth: 12 } } });
      assert.equal(p.output.pixelFormat, 'yuv422p12le');
      assert.match(p.filterGraph, /format=yuv422p12le,/);
      assert.deepEqual(p.applied.options.encodingConfiguration!.pixelFormat, { yuv: '4:2:2', bitDepth: 12, name: 'yuv422p12le' });
    });
    it('yuv and bitDepth default to 4:2:0 and 8 (contract defaults)', function () {
      assert.equal(plan({ encodingConfiguration: { codec: 'H264', pixelFormat: { bitDepth: 10 } } }).output.pixelFormat, 'yuv420p10le');
      assert.equal(plan({ encodingConfiguration: { codec: 'H264', pixelFormat: { yuv: '4:4:4' } } }).output.pixelFormat, 'yuv444p');
    });
    it("an absent pixel format keeps the source's", function () {
      assert.equal(plan({ encodingConfiguration: { codec: 'H264' } }, { pixelFormatName: 'yuv422p10le', bitDepth: 10 }).output.pixelFormat, 'yuv422p10le');
      assert.equal(plan({ encodingConfiguration: { codec: 'FFV1' } }, { pixelFormatName: 'yuv444p12le', bitDepth: 12 }).output.pixelFormat, 'yuv444p12le');
      assert.equal(plan({ encodingConfiguration: { codec: 'H264' } }, { pixelFormatName: 'yuvj420p' }).output.pixelFormat, 'yuv420p');
    });
    it('...as near as the codec can, with a note', function () {
      const p = plan({ encodingConfiguration: { codec: 'H264' } }, { pixelFormatName: 'yuv444p12le', bitDepth: 12 });
      assert.equal(p.output.pixelFormat, 'yuv444p10le');
      assert.ok(p.applied.notes.some((n) => n.field === 'encodingConfiguration.pixelFormat'));
      assert.equal(plan({ encodingConfiguration: { codec: 'MPEG2' } }, { pixelFormatName: 'yuv444p10le', bitDepth: 10 }).output.pixelFormat, 'yuv422p');
    });
    it('an explicit pixel format the automatically kept codec cannot make is refused', function () {
      const err = processingError(() => plan({ encodingConfiguration: { pixelFormat: { yuv: '4:2:0', bitDepth: 12 } } }));
      assert.equal(err.errorCode, 'UNSUPPORTED_PROCESSING_OPTION');
      assert.equal(err.details!.validationErrors![0]!.field, 'encodingConfiguration.pixelFormat');
    });
  });

  describe('audio', function () {
    const AUDIO: [ProcessingOptions, string[]][] = [
      [{ container: 'MP4' }, ['-c:a', 'aac', '-b:a', '192k']],
      [{ container: 'MPEGTS' }, ['-c:a', 'aac', '-b:a', '192k']],
      [{ container: 'MOV', encodingConfiguration: { codec: 'H264' } }, ['-c:a', 'aac', '-b:a', '192k']],
      [{ container: 'MOV', encodingProfile: 'PRORES_422_HQ' }, ['-c:a', 'pcm_s24le', '-ar', '48000']],
      [{ container: 'MXF', encodingProfile: 'DNXHR_HQ' }, ['-c:a', 'pcm_s24le', '-ar', '48000']],
    ];
    for (const [options, expected] of AUDIO) {
      it(`${options.container} ${options.encodingProfile ?? options.encodingConfiguration?.codec ?? ''}: every audio stream, ${expected[1]}`, function () {
        const p = plan(options);
        assert.deepEqual(p.outputArgs.slice(0, 2 + expected.length), ['-map', '0:a?', ...expected]);
      });
    }
    it('no audio: -an', function () {
      const p = plan({}, { hasAudio: false });
      assert.equal(p.outputArgs[0], '-an');
      assert.equal(p.output.hasAudio, false);
    });
  });

  describe('filters.deinterlacer', function () {
    const CASES: [string, string][] = [
      ['BWDIF', 'bwdif=mode=send_field:parity=tff:deint=all'],
      ['DEINT', 'bwdif=mode=send_field:parity=tff:deint=all'],
      ['YADIF', 'yadif=mode=send_field:parity=tff:deint=all'],
      ['WESTON3F', 'w3fdif=filter=complex:mode=field:parity=tff:deint=all'],
    ];
    for (const [deinterlacer, filter] of CASES) {
      it(`${deinterlacer}: ${filter.split('=')[0]}, one frame per field`, function () {
        const p = plan({ filters: { deinterlacer: deinterlacer as 'BWDIF' }, filterSettings: { interlacedFieldOrderMode: 'AUTO_METADATA' } }, PAL_SD_INTERLACED);
        assert.ok(p.filterGraph.includes(filter), p.filterGraph);
        assert.deepEqual(p.output.fps, { num: 50, den: 1 });
        assert.equal(p.output.scanning, 'PROGRESSIVE');
        assert.equal(p.applied.options.filterSettings!.interlacedFieldOrderMode, 'TOP_FIELD_FIRST');
        assert.equal(
          p.applied.notes.some((n) => n.field === 'filters.deinterlacer'),
          deinterlacer === 'DEINT',
        );
      });
    }
    it('the field order comes from the metadata, the analysis or the setting', function () {
      const src = { ...PAL_SD_INTERLACED, scanning: { metadata: 'INTERLACED_TOP_FIRST' as const, heuristics: 'INTERLACED_BOTTOM_FIRST' as const } };
      const parity = (mode?: string) => /parity=(\w+)/.exec(plan({ filters: { deinterlacer: 'BWDIF' }, filterSettings: { interlacedFieldOrderMode: mode as 'AUTO_METADATA' } }, src).filterGraph)![1];
      assert.equal(parity(undefined), 'tff');
      assert.equal(parity('AUTO_METADATA'), 'tff');
      assert.equal(parity('AUTO_SEGMENT_ANALYSIS'), 'bff');
      assert.equal(parity('BOTTOM_FIELD_FIRST'), 'bff');
      assert.equal(parity('TOP_FIELD_FIRST'), 'tff');
    });
    it('a progressive source is not deinterlaced (noted), unless a field order is forced', function () {
      const p = plan({ filters: { deinterlacer: 'BWDIF' } }, { scanning: { metadata: 'PROGRESSIVE' } });
      assert.doesNotMatch(p.filterGraph, /bwdif/);
      assert.equal(p.applied.options.filters!.deinterlacer, null);
      assert.ok(p.applied.notes.some((n) => n.field === 'filters.deinterlacer' && n.appliedAs === 'not applied'));
      const forced = plan({ filters: { deinterlacer: 'BWDIF' }, filterSettings: { interlacedFieldOrderMode: 'BOTTOM_FIELD_FIRST' } }, { scanning: { metadata: 'PROGRESSIVE' } });
      assert.match(forced.filterGraph, /bwdif=mode=send_field:parity=bff/);
    });
  });

  describe('filters.reshaper (crop)', function () {
    it('normalized coordinates become a pixel rectangle (even, inside the frame), reported as cropRectangle', function () {
      const p = plan({ filters: { reshaper: 'CROP' }, filterSettings: { normalizedCropCoordinates: { x1: 0.1, y1: 0.1, x2: 0.6, y2: 0.9 } } }, { width: 1280, height: 720 });
      assert.match(p.filterGraph, /crop=w=640:h=576:x=128:y=72/);
      assert.deepEqual(p.applied.options.filterSettings!.cropRectangle, { width: 640, height: 576, x: 128, y: 72 });
      assert.equal(p.output.width, 640);
      assert.equal(p.output.height, 576);
    });
    it('the whole frame crops nothing', function () {
      const p = plan({ filters: { reshaper: 'CROP' }, filterSettings: { normalizedCropCoordinates: { x1: 0, y1: 0, x2: 1, y2: 1 } } });
      assert.doesNotMatch(p.filterGraph, /crop=/);
    });
    it('a pixel rectangle may be given instead; outside the frame is refused', function () {
      const p = plan({ filters: { reshaper: 'CROP' }, filterSettings: { cropRectangle: { width: 1000, height: 500, x: 11, y: 20 } } });
      assert.match(p.filterGraph, /crop=w=1000:h=500:x=10:y=20/);
      const err = processingError(() => plan({ filters: { reshaper: 'CROP' }, filterSettings: { cropRectangle: { width: 1920, height: 500, x: 10 } } }));
      assert.equal(err.errorCode, 'VALIDATION_ERROR');
      assert.equal(err.details!.validationErrors![0]!.field, 'filterSettings.cropRectangle');
    });
    it('a crop of less than 2x2 pixels is refused', function () {
      const err = processingError(() => plan({ filters: { reshaper: 'CROP' }, filterSettings: { normalizedCropCoordinates: { x1: 0.5, y1: 0.5, x2: 0.5001, y2: 0.6 } } }));
      assert.equal(err.errorCode, 'VALIDATION_ERROR');
    });
  });

  describe('filters.prescaler', function () {
    it('scales to the given size before the other filters (Lanczos)', function () {
      const p = plan({ filters: { prescaler: 'SCALE', denoiser: 'HQDN3D' }, filterSettings: { prescaledResolution: { width: 960, height: 540 } } });
      assert.match(p.filterGraph, /scale=w=960:h=540:flags=lanczos,hqdn3d/);
      assert.equal(p.output.width, 960);
    });
  });

  describe('filters.denoiser', function () {
    it('HQDN3D: hqdn3d', function () {
      assert.match(plan({ filters: { denoiser: 'HQDN3D' } }).filterGraph, /hqdn3d=4:3:6:4\.5/);
    });
    it('DENOISE: non-local means, noted as the classical equivalent', function () {
      const p = plan({ filters: { denoiser: 'DENOISE' } });
      assert.match(p.filterGraph, /nlmeans=s=3:p=7:r=9/);
      const note = p.applied.notes.find((n) => n.field === 'filters.denoiser')!;
      assert.match(note.note, /proprietary AI denoiser.*non-local means/);
    });
  });

  describe('filters.stabilizer', function () {
    it('DEJIT with vidstab: a detection pass, then the transform', function () {
      const p = plan({ filters: { deinterlacer: 'BWDIF', denoiser: 'HQDN3D', stabilizer: 'DEJIT' } }, PAL_SD_INTERLACED);
      assert.ok(p.analysis);
      assert.equal(p.analysis.filterGraph, `[0:v:0]bwdif=mode=send_field:parity=tff:deint=all,vidstabdetect=shakiness=5:accuracy=15:stepsize=6:result=${TRANSFORMS_TOKEN}[vout]`);
      assert.match(p.filterGraph, /hqdn3d=[^,]+,vidstabtransform=input=@VIDMILL_TRANSFORMS@:smoothing=10/);
      const args = processingArgs(p, 'in.ts', '/tmp/out dir/a:b,c.mp4');
      const graph = arg(args, '-filter_complex')!;
      assert.ok(graph.includes(`vidstabtransform=input=${escapeFilterValue('/tmp/out dir/a:b,c.mp4.trf')}:`));
      assert.ok(!graph.includes(TRANSFORMS_TOKEN));
      const pass1 = analysisArgs(p, 'in.ts', '/tmp/o.mp4')!;
      assert.deepEqual(pass1.slice(-4), ['-dn', '-f', 'null', '-']);
      assert.match(arg(pass1, '-filter_complex')!, /result=\/tmp\/o\.mp4\.trf\[vout\]$/);
    });
    it('DEJIT without vidstab: deshake, one pass', function () {
      const p = plan({ filters: { stabilizer: 'DEJIT' } }, {}, undefined, { capabilities: without('vidstabdetect', 'vidstabtransform') });
      assert.match(p.filterGraph, /,deshake,/);
      assert.equal(p.analysis, undefined);
      assert.equal(analysisArgs(p, 'a', 'b'), undefined);
    });
  });

  describe('filters.augmenter (FACEFORWARD)', function () {
    it('grey-world white balance, vibrance and a gamma lift over the whole frame, noted', function () {
      const p = plan({ filters: { augmenter: 'FACEFORWARD' }, filterSettings: { faceForward: { colorBoost: 15, autoWhiteBalance: true, relightIntensity: 100, backgroundBlur: 0 } } });
      assert.match(p.filterGraph, /grayworld,vibrance=intensity=0\.3,eq=gamma=1\.2/);
      assert.match(p.applied.notes.find((n) => n.field === 'filters.augmenter')!.note, /proprietary AI face enhancer/);
      const off = plan({ filters: { augmenter: 'FACEFORWARD' }, filterSettings: { faceForward: { colorBoost: 0, autoWhiteBalance: false, relightIntensity: 0, backgroundBlur: 0 } } });
      assert.doesNotMatch(off.filterGraph, /grayworld|vibrance|eq=/);
    });
  });

  describe('filters.scaler and filterSettings.resolution', function () {
    const scaled = (resolution: object, source: FakeSource = {}, scaler = 'SCALE') => plan({ filters: { scaler: scaler as 'SCALE' }, filterSettings: { resolution } }, source);
    const TAGS: [string, FakeSource, number, number, string][] = [
      ['STANDARD_HD', {}, 1280, 720, '1/1'],
      ['FULL_HD', { width: 1280, height: 720 }, 1920, 1080, '1/1'],
      ['UHD_4K', {}, 3840, 2160, '1/1'],
      ['UHD_8K', {}, 7680, 4320, '1/1'],
      ['FULL_HD', SD_PROGRESSIVE_43, 1440, 1080, '1/1'],
      ['FULL_HD', { width: 720, height: 576, dar: '16:9' }, 1920, 1080, '1/1'],
      ['1X', { width: 720, height: 576, dar: '16:9' }, 720, 576, '64/45'],
      ['2X', { width: 720, height: 576, dar: '16:9' }, 1440, 1152, '64/45'],
      ['3X', { width: 640, height: 360 }, 1920, 1080, '1/1'],
      ['4X', { width: 960, height: 540 }, 3840, 2160, '1/1'],
    ];
    for (const [tag, source, w, h, sar] of TAGS) {
      it(`tag ${tag} on ${source.width ?? 1920}x${source.height ?? 1080}${source.dar ? ` (${source.dar})` : ''}: ${w}x${h}, SAR ${sar}`, function () {
        const p = scaled({ tag }, source);
        assert.equal(`${p.output.width}x${p.output.height}`, `${w}x${h}`);
        assert.equal(`${p.output.sar.num}/${p.output.sar.den}`, sar);
        assert.match(p.filterGraph, new RegExp(`setsar=${sar}`));
        assert.deepEqual(p.applied.options.filterSettings!.resolution, { tag, width: w, height: h });
      });
    }
    it('a tag wins over width and height', function () {
      assert.equal(scaled({ tag: 'STANDARD_HD', width: 640, height: 480 }).output.width, 1280);
    });
    it('both width and height: exactly that size, square pixels, aspectRatioTag ignored', function () {
      const p = scaled({ width: 1000, height: 1000, aspectRatioTag: '16:9' });
      assert.match(p.filterGraph, /scale=w=1000:h=1000:flags=lanczos/);
      assert.deepEqual(p.output.sar, { num: 1, den: 1 });
    });
    const ONE_SIDE: [object, FakeSource, number, number, string][] = [
      [{ width: 1280, aspectRatioTag: 'DISPLAY' }, {}, 1280, 720, '1/1'],
      [{ height: 1080, aspectRatioTag: 'DISPLAY' }, { width: 720, height: 576, dar: '16:9' }, 1920, 1080, '1/1'],
      [{ height: 1152, aspectRatioTag: 'STORAGE' }, { width: 720, height: 576, dar: '16:9' }, 1440, 1152, '1/1'],
      [{ height: 1152, aspectRatioTag: 'PAR_PRESERVED' }, { width: 720, height: 576, dar: '16:9' }, 1440, 1152, '64/45'],
      [{ width: 1920, aspectRatioTag: '4:3' }, {}, 1920, 1440, '1/1'],
      [{ height: 720, aspectRatioTag: '16:9' }, SD_PROGRESSIVE_43, 1280, 720, '1/1'],
      [{ width: 1001, aspectRatioTag: 'DISPLAY' }, {}, 1002, 564, '1/1'],
    ];
    for (const [resolution, source, w, h, sar] of ONE_SIDE) {
      it(`${JSON.stringify(resolution)} on ${source.width ?? 1920}x${source.height ?? 1080}: ${w}x${h} SAR ${sar}`, function () {
        const p = scaled(resolution, source);
        assert.equal(`${p.output.width}x${p.output.height}`, `${w}x${h}`);
        assert.equal(`${p.output.sar.num}/${p.output.sar.den}`, sar);
      });
    }
    it('a computed size outside 16..7680 x 16..4320: 400 TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', function () {
      let err = processingError(() => scaled({ tag: '4X' }, { width: 3840, height: 2160 }));
      assert.equal(err.errorCode, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE');
      assert.equal(err.details!.validationErrors![0]!.field, 'filterSettings.resolution.tag');
      assert.equal(err.details!.validationErrors![0]!.value, '15360x8640');
      err = processingError(() => scaled({ width: 16, aspectRatioTag: '16:9' }));
      assert.equal(err.errorCode, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE');
      assert.equal(err.details!.validationErrors![0]!.field, 'filterSettings.resolution.height');
      err = processingError(() => scaled({ width: 7680, aspectRatioTag: '4:3' }, {}, 'SCALE'));
      assert.equal(err.details!.validationErrors![0]!.value, '7680x5760');
      err = processingError(() => scaled({ width: 7680, aspectRatioTag: 'DISPLAY' }, { width: 1000, height: 1000 }));
      assert.equal(err.errorCode, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE');
      assert.equal(err.details!.validationErrors![0]!.value, '7680x7680');
    });
    it('AI scalers only enlarge: 400 TARGET_RESOLUTION_CANNOT_BE_LOWER_THAN_CALCULATED_ASPECT_RATIO_RESOLUTION; SCALE shrinks', function () {
      for (const scaler of ['DVRES2', 'DVRES', 'PABSR1']) {
        const err = processingError(() => scaled({ tag: 'STANDARD_HD' }, {}, scaler));
        assert.equal(err.errorCode, 'TARGET_RESOLUTION_CANNOT_BE_LOWER_THAN_CALCULATED_ASPECT_RATIO_RESOLUTION');
      }
      // Anamorphic 16:9 PAL is 1024x576 in square pixels: 960x540 is below it.
      const err = processingError(() => scaled({ width: 960, height: 540 }, { width: 720, height: 576, dar: '16:9' }, 'DVRES2'));
      assert.equal(err.errorCode, 'TARGET_RESOLUTION_CANNOT_BE_LOWER_THAN_CALCULATED_ASPECT_RATIO_RESOLUTION');
      assert.equal(scaled({ tag: 'STANDARD_HD' }, {}, 'SCALE').output.width, 1280);
      assert.equal(scaled({ tag: '1X' }, {}, 'DVRES2').output.width, 1920);
    });
    const AI: [string, object, RegExp][] = [
      ['DVRES2', {}, /scale=w=1920:h=1080:flags=lanczos,unsharp=5:5:0\.8:3:3:0/],
      ['DVRES2', { dvres2Variant: 'FINE_TUNING' }, /lanczos,unsharp=3:3:0\.6:3:3:0/],
      ['DVRES2', { dvres2Variant: 'SELFIE_STYLE' }, /lanczos,hqdn3d=1\.5:1\.5:3:3,unsharp=5:5:0\.4:3:3:0/],
      ['DVRES', {}, /lanczos,unsharp=5:5:0\.6:3:3:0/],
      ['PABSR1', {}, /lanczos,unsharp=5:5:0\.75:3:3:0/],
      ['PABSR1', { clarityBoost: 'VERY_HIGH' }, /lanczos,unsharp=5:5:1\.4:3:3:0/],
      ['PABSR1', { clarityBoost: 'MARGINAL' }, /lanczos,unsharp=5:5:0\.2:3:3:0/],
      ['PABSR1', { clarityBoost: 'NONE' }, /lanczos,format=/],
      ['SCALE', {}, /lanczos,format=/],
    ];
    for (const [scaler, settings, re] of AI) {
      it(`${scaler} ${JSON.stringify(settings)}: ${re.source}`, function () {
        const p = plan({ filters: { scaler: scaler as 'SCALE' }, filterSettings: { resolution: { tag: 'FULL_HD' }, ...settings } }, { width: 1280, height: 720 });
        assert.match(p.filterGraph, re);
        const note = p.applied.notes.find((n) => n.field === 'filters.scaler');
        if (scaler === 'SCALE') assert.equal(note, undefined);
        else assert.match(note!.note, /proprietary AI super-resolution model.*Lanczos resampling followed by an unsharp mask/);
      });
    }
    it('a larger enlargement uses a wider sharpening kernel; the same size resamples nothing', function () {
      assert.match(scaled({ tag: '3X' }, { width: 640, height: 360 }, 'DVRES2').filterGraph, /unsharp=7:7:0\.8/);
      const same = scaled({ tag: '1X' }, {}, 'DVRES2');
      assert.doesNotMatch(same.filterGraph, /scale=w=/);
      assert.match(same.filterGraph, /unsharp=5:5:0\.8/);
    });
    it('dvres2Variant and clarityBoost are reported only for their scaler', function () {
      const p = plan({ filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: '2X' }, dvres2Variant: 'SELFIE_STYLE', clarityBoost: 'HIGH' } }, { width: 640, height: 360 });
      assert.equal(p.applied.options.filterSettings!.dvres2Variant, undefined);
      assert.equal(p.applied.options.filterSettings!.clarityBoost, undefined);
      const d = plan({ filters: { scaler: 'DVRES2' }, filterSettings: { resolution: { tag: '2X' } } }, { width: 640, height: 360 });
      assert.equal(d.applied.options.filterSettings!.dvres2Variant, 'GENERIC');
    });
  });

  describe('filters.frameRateConverter and filterSettings.frameRate', function () {
    const TAGS: [string, string][] = [
      ['FILM_NTSC', '24000/1001'],
      ['FILM', '24/1'],
      ['VIDEO_PAL', '25/1'],
      ['VIDEO_NTSC', '30000/1001'],
      ['VIDEO_HD', '30/1'],
      ['VIDEO_PAL_FAST', '50/1'],
      ['VIDEO_NTSC_FAST', '60000/1001'],
      ['VIDEO_HD_FAST', '60/1'],
      ['VIDEO_PAL_UHD', '100/1'],
      ['VIDEO_NTSC_UHD', '120000/1001'],
      ['VIDEO_UHD_FAST', '120/1'],
    ];
    for (const [tag, rate] of TAGS) {
      it(`tag ${tag}: ${rate}`, function () {
        const p = plan({ filters: { frameRateConverter: 'FPS' }, filterSettings: { frameRate: { tag: tag as 'FILM', fps: 5 } } });
        assert.ok(p.filterGraph.includes(`fps=fps=${rate},`), p.filterGraph);
        assert.equal(`${p.output.fps.num}/${p.output.fps.den}`, rate);
      });
    }
    it('fps numbers become exact rates (29.97 is 30000/1001)', function () {
      assert.deepEqual(fpsRational(29.97), { num: 30000, den: 1001 });
      assert.deepEqual(fpsRational(23.976), { num: 24000, den: 1001 });
      assert.deepEqual(fpsRational(12.5), { num: 25, den: 2 });
      assert.deepEqual(fpsRational(0.001), { num: 1, den: 1000 });
      assert.deepEqual(fpsRational(999), { num: 999, den: 1 });
      const p = plan({ filters: { frameRateConverter: 'FPS' }, filterSettings: { frameRate: { fps: 29.97 } } });
      assert.deepEqual(p.output.fps, { num: 30000, den: 1001 });
      assert.deepEqual(p.applied.options.filterSettings!.frameRate, { fps: 29.97 });
      assert.equal(p.output.frames, 300);
    });
    const FILTERS: [string, RegExp, boolean][] = [
      ['FPS', /,fps=fps=50\/1,/, false],
      ['FBLEND', /,framerate=fps=50\/1,/, false],
      ['MCINTERPOLATE', /,tpad=stop_mode=clone:stop=2,minterpolate=fps=50\/1:mi_mode=mci:mc_mode=obmc:me_mode=bilat,/, false],
      ['VFI', /,tpad=stop_mode=clone:stop=2,minterpolate=fps=50\/1:mi_mode=mci:mc_mode=aobmc:me_mode=bidir:vsbmc=1,/, true],
    ];
    for (const [frc, re, noted] of FILTERS) {
      it(`${frc}: ${re.source}`, function () {
        const p = plan({ filters: { frameRateConverter: frc as 'FPS' }, filterSettings: { frameRate: { tag: 'VIDEO_PAL_FAST' } } });
        assert.match(p.filterGraph, re);
        assert.equal(
          p.applied.notes.some((n) => n.field === 'filters.frameRateConverter' && /proprietary AI frame interpolation/.test(n.note)),
          noted,
        );
      });
    }
  });

  describe('filters.debander and filters.postProcessor', function () {
    it('GRADFUN: gradfun on 8-bit output, deband (noted) on 10-bit', function () {
      assert.match(plan({ filters: { debander: 'GRADFUN' } }).filterGraph, /gradfun=strength=1\.2:radius=16/);
      const p = plan({ filters: { debander: 'GRADFUN' }, encodingConfiguration: { codec: 'HEVC', pixelFormat: { yuv: '4:2:0', bitDepth: 10 } } });
      assert.match(p.filterGraph, /deband=1thr=0\.02/);
      assert.ok(p.applied.notes.some((n) => n.field === 'filters.debander'));
    });
    const GRAIN: [string, string][] = [
      ['SUPER_FINE', '[fgraw]scale=w=1920:h=1080,format=yuv420p,lutyuv'],
      ['FINE', '[fgraw]scale=w=1280:h=720,format=yuv420p,lutyuv'],
      ['MEDIUM', '[fgraw]scale=w=960:h=540,format=yuv420p,lutyuv'],
      ['COARSE', '[fgraw]scale=w=640:h=360,format=yuv420p,lutyuv'],
      ['VERY_COARSE', '[fgraw]scale=w=480:h=270,format=yuv420p,lutyuv'],
    ];
    for (const [grainSize, expected] of GRAIN) {
      it(`FILMGRAIN ${grainSize}: an 8-bit mid-grey grain plane at its size, enlarged, merged into luma only`, function () {
        const p = plan({ filters: { postProcessor: 'FILMGRAIN' }, filterSettings: { filmGrain: { grainSize: grainSize as 'FINE', grainStrength: 12 } } });
        assert.ok(p.filterGraph.includes(expected), p.filterGraph);
        assert.match(
          p.filterGraph,
          /lutyuv=y=128:u=128:v=128,noise=c0s=12:c0f=t,scale=w=1920:h=1080:flags=bicubic\[fgnoise\];\[fgsrc\]\[fgnoise\]blend=c0_mode=grainmerge:c1_mode=normal:c1_opacity=1:c2_mode=normal:c2_opacity=1/,
        );
      });
    }
    it("FILMGRAIN: the grain's mid grey makes up for the noise filter's slightly negative mean", function () {
      const p = plan({ filters: { postProcessor: 'FILMGRAIN' }, filterSettings: { filmGrain: { grainSize: 'MEDIUM', grainStrength: 50 } } });
      assert.match(p.filterGraph, /lutyuv=y=129:u=128:v=128,noise=c0s=50:c0f=t/);
    });
    it('FILMGRAIN with strength 0 adds nothing (noted)', function () {
      const p = plan({ filters: { postProcessor: 'FILMGRAIN' }, filterSettings: { filmGrain: { grainSize: 'FINE', grainStrength: 0 } } });
      assert.doesNotMatch(p.filterGraph, /noise/);
      assert.ok(p.applied.notes.some((n) => n.field === 'filters.postProcessor'));
    });
  });

  describe('processingSettings.fixedOutputResolution', function () {
    it('pads a smaller picture with black, centred', function () {
      const p = plan({ filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'FULL_HD' } }, processingSettings: { fixedOutputResolution: 'FULL_HD' } }, SD_PROGRESSIVE_43);
      assert.match(p.filterGraph, /scale=w=1440:h=1080:flags=lanczos,pad=w=1920:h=1080:x=240:y=0:color=black/);
      assert.equal(`${p.output.width}x${p.output.height}`, '1920x1080');
    });
    it('crops a larger picture, centred; both where needed', function () {
      assert.match(plan({ processingSettings: { fixedOutputResolution: 'STANDARD_HD' } }).filterGraph, /crop=w=1280:h=720:x=320:y=180/);
      const both = plan({ processingSettings: { fixedOutputResolution: 'FULL_HD' } }, { width: 2048, height: 858 });
      assert.match(both.filterGraph, /crop=w=1920:h=858:x=64:y=0,pad=w=1920:h=1080:x=0:y=110:color=black/);
    });
  });

  describe('processingSettings.outputScanning', function () {
    it('AUTO keeps a progressive source progressive', function () {
      assert.equal(plan({}).output.scanning, 'PROGRESSIVE');
    });
    it('AUTO keeps an untouched interlaced source interlaced (field order, +ildct+ilme)', function () {
      const p = plan({ encodingConfiguration: { codec: 'H264' } }, PAL_SD_INTERLACED);
      assert.equal(p.output.scanning, 'INTERLACED_TOP_FIRST');
      assert.match(p.filterGraph, /setfield=tff,scale=interl=1,format=yuv420p/);
      assert.equal(arg(p.outputArgs, '-flags'), '+ildct+ilme');
      assert.equal(arg(p.outputArgs, '-x264-params'), 'tff=1');
      assert.deepEqual(p.output.fps, { num: 25, den: 1 });
      assert.equal(p.applied.options.processingSettings!.outputScanning, 'INTERLACED_TOP_FIRST');
    });
    it('AUTO with filters on an interlaced source: processed per field and interlaced again (noted)', function () {
      const p = plan({ encodingConfiguration: { codec: 'H264' }, filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'FULL_HD' } } }, PAL_SD_INTERLACED);
      assert.match(p.filterGraph, /bwdif=mode=send_field:parity=tff:deint=all,scale=w=1920:h=1080:flags=lanczos,format=yuv422p,interlace=scan=tff:lowpass=complex,scale=interl=1,format=yuv420p/);
      assert.deepEqual(p.output.fps, { num: 25, den: 1 });
      assert.equal(p.output.scanning, 'INTERLACED_TOP_FIRST');
      assert.ok(p.applied.notes.some((n) => n.field === 'processingSettings.outputScanning'));
    });
    it('AUTO with HEVC deinterlaces an interlaced source (HEVC is progressive here)', function () {
      const p = plan({ encodingConfiguration: { codec: 'HEVC' } }, PAL_SD_INTERLACED);
      assert.equal(p.output.scanning, 'PROGRESSIVE');
      assert.match(p.filterGraph, /bwdif=mode=send_field/);
      assert.deepEqual(p.output.fps, { num: 50, den: 1 });
    });
    it('PROGRESSIVE deinterlaces an interlaced source even without a deinterlacer', function () {
      const p = plan({ processingSettings: { outputScanning: 'PROGRESSIVE' } }, PAL_SD_INTERLACED);
      assert.match(p.filterGraph, /bwdif/);
      assert.equal(p.output.scanning, 'PROGRESSIVE');
    });
    it('INTERLACED_*: two progressive frames make one interlaced frame (half the frame rate)', function () {
      const p = plan({ encodingConfiguration: { codec: 'H264' }, processingSettings: { outputScanning: 'INTERLACED_BOTTOM_FIRST' } }, { rate: '50:1' });
      assert.match(p.filterGraph, /format=yuv422p,interlace=scan=bff:lowpass=complex,scale=interl=1,format=yuv420p/);
      assert.deepEqual(p.output.fps, { num: 25, den: 1 });
      assert.equal(p.output.frames, 250);
      assert.equal(arg(p.outputArgs, '-flags'), '+ildct+ilme');
      assert.equal(arg(p.outputArgs, '-x264-params'), 'bff=1');
      const prores = plan({ encodingProfile: 'PRORES_422_HQ', processingSettings: { outputScanning: 'INTERLACED_TOP_FIRST' } }, { rate: '50:1' });
      assert.match(prores.filterGraph, /,interlace=scan=tff:lowpass=complex,scale=interl=1,format=yuv422p10le/);
      assert.equal(arg(prores.outputArgs, '-flags'), '+ildct');
    });
    it('an untouched interlaced source with the other field order is shifted (fieldorder)', function () {
      const p = plan({ encodingConfiguration: { codec: 'H264' }, processingSettings: { outputScanning: 'INTERLACED_BOTTOM_FIRST' } }, PAL_SD_INTERLACED);
      assert.match(p.filterGraph, /fieldorder=bff,setfield=bff/);
    });
    it('DNxHR is progressive only: AUTO deinterlaces an interlaced source (noted), an interlaced output is 400 UNSUPPORTED_PROCESSING_OPTION', function () {
      const p = plan({ encodingProfile: 'DNXHR_SQ', container: 'MXF' }, PAL_SD_INTERLACED);
      assert.equal(p.output.scanning, 'PROGRESSIVE');
      assert.match(p.filterGraph, /bwdif=mode=send_field:parity=tff/);
      assert.deepEqual(p.output.fps, { num: 50, den: 1 });
      assert.equal(arg(p.outputArgs, '-flags'), undefined);
      assert.ok(
        p.applied.notes.some((n) => n.field === 'processingSettings.outputScanning' && /DNXHR is encoded progressive only/.test(n.note)),
        JSON.stringify(p.applied.notes),
      );
      for (const [options, source] of [
        [{ encodingProfile: 'DNXHR_SQ', container: 'MXF', processingSettings: { outputScanning: 'INTERLACED_TOP_FIRST' } }, PAL_SD_INTERLACED],
        [{ encodingProfile: 'DNXHR_HQ', processingSettings: { outputScanning: 'INTERLACED_TOP_FIRST' } }, { rate: '50:1' }],
      ] as [ProcessingOptions, FakeSource][]) {
        const err = processingError(() => plan(options, source));
        assert.equal(err.errorCode, 'UNSUPPORTED_PROCESSING_OPTION');
        assert.equal(err.issues[0]!.field, 'processingSettings.outputScanning');
      }
    });
    it('DNxHR frames are at least 256x120; DNxHD 1440x1080i takes 120 and 145 Mbit/s only', function () {
      const small = processingError(() => plan({ encodingProfile: 'DNXHR_LB' }, { width: 240, height: 136 }));
      assert.equal(small.errorCode, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE');
      assert.equal(small.issues[0]!.field, 'encodingProfile');
      assert.equal(plan({ encodingProfile: 'DNXHR_LB' }, { width: 256, height: 120 }).output.width, 256);
      const hdv = { width: 1440, height: 1080, dar: '16:9', scanning: { metadata: 'INTERLACED_TOP_FIRST' } } as FakeSource;
      assert.equal(plan({ encodingProfile: 'DNXHD_145_SQ' }, hdv).output.scanning, 'INTERLACED_TOP_FIRST');
      assert.equal(processingError(() => plan({ encodingProfile: 'DNXHD_90_LB' }, hdv)).errorCode, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE');
    });
    it("MXF holds only ffmpeg's SMPTE frame rates: interlacing 25p (12.5 interlaced frames/s) into MXF is 400 UNSUPPORTED_PROCESSING_OPTION", function () {
      const err = processingError(() =>
        plan({ encodingConfiguration: { codec: 'MPEG2' }, container: 'MXF', processingSettings: { outputScanning: 'INTERLACED_TOP_FIRST' } }, { width: 720, height: 576 }),
      );
      assert.equal(err.errorCode, 'UNSUPPORTED_PROCESSING_OPTION');
      assert.equal(err.issues[0]!.field, 'container');
      assert.match(err.message, /12\.5 frames\/s/);
      // The same into MPEG-TS, and 50p interlaced to 25i into MXF, are fine; so is 29.97.
      plan({ encodingConfiguration: { codec: 'MPEG2' }, container: 'MPEGTS', processingSettings: { outputScanning: 'INTERLACED_TOP_FIRST' } }, { width: 720, height: 576 });
      plan({ encodingConfiguration: { codec: 'MPEG2' }, container: 'MXF', processingSettings: { outputScanning: 'INTERLACED_TOP_FIRST' } }, { width: 720, height: 576, rate: '50:1' });
      plan({ encodingConfiguration: { codec: 'H264' }, container: 'MXF' }, { rate: '30000:1001' });
      const fps15 = processingError(() => plan({ encodingConfiguration: { codec: 'H264' }, container: 'MXF', filters: { frameRateConverter: 'FPS' }, filterSettings: { frameRate: { fps: 15 } } }));
      assert.equal(fps15.issues[0]!.field, 'container');
    });
    it('an automatically kept HEVC cannot be interlaced', function () {
      const err = processingError(() => plan({ processingSettings: { outputScanning: 'INTERLACED_TOP_FIRST' } }, { codecName: 'hevc' }));
      assert.equal(err.errorCode, 'UNSUPPORTED_PROCESSING_OPTION');
    });
    it('interlaced 4:2:0 needs a height divisible by 4', function () {
      const err = processingError(() => plan({ encodingConfiguration: { codec: 'H264' }, processingSettings: { outputScanning: 'INTERLACED_TOP_FIRST' } }, { width: 640, height: 362 }));
      assert.equal(err.errorCode, 'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE');
    });
  });

  describe('colour', function () {
    const tagsOf = (p: ProcessingPlan) => [arg(p.outputArgs, '-color_primaries'), arg(p.outputArgs, '-color_trc'), arg(p.outputArgs, '-colorspace'), arg(p.outputArgs, '-color_range')].join(' ');
    it("the source's tags are kept and written", function () {
      const p = plan({}, { color: { colorSpaceName: 'bt709', colorPrimariesName: 'bt709', colorTransferName: 'bt709', colorRangeName: 'pc' } });
      assert.equal(tagsOf(p), 'bt709 bt709 bt709 pc');
      assert.match(p.filterGraph, /^\[0:v:0\]setparams=color_primaries=bt709:color_trc=bt709:colorspace=bt709:range=pc,/);
      assert.doesNotMatch(p.filterGraph, /zscale|colorspace=ispace/);
    });
    const INFERRED: [string, FakeSource, string][] = [
      ['NTSC SD', { width: 720, height: 480, rate: '30000:1001' }, 'smpte170m smpte170m smpte170m tv'],
      ['PAL SD', { width: 720, height: 576, rate: '25:1' }, 'bt470bg smpte170m bt470bg tv'],
      ['HD', { width: 1280, height: 720 }, 'bt709 bt709 bt709 tv'],
      ['UHD', { width: 3840, height: 2160 }, 'bt2020 bt2020-10 bt2020nc tv'],
    ];
    for (const [name, source, tags] of INFERRED) {
      it(`untagged ${name} is interpreted from its resolution: ${tags}`, function () {
        assert.equal(tagsOf(plan({}, source)), tags);
      });
    }
    const SRC_601: FakeSource = { width: 720, height: 576, color: { colorSpaceName: 'smpte170m', colorPrimariesName: 'smpte170m' } };
    const PROFILE = { colorSpace: 'BT709', colorPrimaries: 'BT709', transferCharacteristics: 'BT709', colorRange: 'FULL' } as const;
    const INPUT_MODES: [string, object, string][] = [
      ['STRICT_USER', { mappingMode: 'STRICT_USER', colorProfile: PROFILE }, 'bt709 bt709 bt709 pc'],
      ['USER_PRIORITY', { mappingMode: 'USER_PRIORITY', colorProfile: { colorSpace: 'BT709' } }, 'smpte170m smpte170m bt709 tv'],
      ['SOURCE_PRIORITY', { mappingMode: 'SOURCE_PRIORITY', colorProfile: { colorSpace: 'BT709', colorRange: 'FULL' } }, 'smpte170m smpte170m smpte170m pc'],
      ['RESOLUTION_ONLY', { mappingMode: 'RESOLUTION_ONLY', colorProfile: PROFILE }, 'bt470bg smpte170m bt470bg tv'],
    ];
    for (const [mode, conv, tags] of INPUT_MODES) {
      it(`input ${mode}: interpreted (and, without an output conversion, tagged) as ${tags}`, function () {
        const p = plan({ processingSettings: { inputColorSpaceConversion: conv as never } }, SRC_601);
        assert.equal(tagsOf(p), tags);
        assert.doesNotMatch(p.filterGraph, /zscale/);
        const applied = p.applied.options.processingSettings!.inputColorSpaceConversion!;
        assert.equal(applied.metadataOnly, false);
        assert.ok(applied.colorProfile!.colorSpace);
      });
    }
    it('output RESOLUTION_ONLY converts SD colour to Rec.709 for an HD output (zscale)', function () {
      const p = plan(
        { filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'FULL_HD' } }, processingSettings: { outputColorSpaceConversion: { mappingMode: 'RESOLUTION_ONLY' } } },
        { width: 720, height: 576, dar: '16:9' },
      );
      assert.match(p.filterGraph, /zscale=min=470bg:pin=bt470bg:tin=601:rin=limited:m=709:p=709:t=709:r=limited:dither=error_diffusion/);
      assert.equal(tagsOf(p), 'bt709 bt709 bt709 tv');
      assert.deepEqual(p.output.color, { colorSpace: 'BT709', colorPrimaries: 'BT709', transferCharacteristics: 'BT709', colorRange: 'LIMITED' });
    });
    it('output metadataOnly tags without converting', function () {
      const p = plan({ processingSettings: { outputColorSpaceConversion: { mappingMode: 'STRICT_USER', metadataOnly: true, colorProfile: PROFILE } } }, SRC_601);
      assert.doesNotMatch(p.filterGraph, /zscale/);
      assert.equal(tagsOf(p), 'bt709 bt709 bt709 pc');
    });
    it('without zscale an SDR conversion uses the colorspace filter', function () {
      const p = plan({ processingSettings: { outputColorSpaceConversion: { mappingMode: 'STRICT_USER', colorProfile: PROFILE } } }, SRC_601, undefined, { capabilities: without('zscale') });
      assert.match(p.filterGraph, /colorspace=ispace=smpte170m:iprimaries=smpte170m:itrc=smpte170m:irange=tv:space=bt709:primaries=bt709:trc=bt709:range=pc/);
    });
    it('zimg has no SMPTE 240M transfer: that conversion uses colorspace', function () {
      const p = plan({ processingSettings: { outputColorSpaceConversion: { mappingMode: 'USER_PRIORITY', colorProfile: { transferCharacteristics: 'SMPTE240M' } } } });
      assert.match(p.filterGraph, /colorspace=ispace=bt709.*trc=smpte240m/);
    });
    it('an HDR conversion without zscale is refused', function () {
      const src: FakeSource = { color: { colorSpaceName: 'bt2020nc', colorPrimariesName: 'bt2020', colorTransferName: 'smpte2084', colorRangeName: 'tv' } };
      const err = processingError(() =>
        plan({ processingSettings: { outputColorSpaceConversion: { mappingMode: 'STRICT_USER', colorProfile: { ...PROFILE, colorRange: 'LIMITED' } } } }, src, undefined, {
          capabilities: without('zscale'),
        }),
      );
      assert.equal(err.errorCode, 'UNSUPPORTED_PROCESSING_OPTION');
      assert.equal(err.details!.validationErrors![0]!.field, 'processingSettings.outputColorSpaceConversion');
    });
    const PQ_SOURCE: FakeSource = {
      width: 3840,
      height: 2160,
      pixelFormatName: 'yuv420p10le',
      bitDepth: 10,
      codecName: 'hevc',
      color: { colorSpaceName: 'bt2020nc', colorPrimariesName: 'bt2020', colorTransferName: 'smpte2084', colorRangeName: 'tv' },
    };
    it('toneMapper: HDR to SDR Rec.709 with zscale and tonemap (peak from the input profile)', function () {
      const p = plan(
        {
          encodingConfiguration: { codec: 'H264', pixelFormat: { yuv: '4:2:0', bitDepth: 8 } },
          processingSettings: { inputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY', colorProfile: { maxCll: 1000 }, toneMapper: { algorithm: 'MOBIUS', outputNits: 200 } } },
        },
        PQ_SOURCE,
      );
      assert.match(
        p.filterGraph,
        /zscale=min=2020_ncl:pin=2020:tin=smpte2084:rin=limited:m=2020_ncl:p=2020:r=limited:t=linear:npl=200,format=gbrpf32le,zscale=p=709,tonemap=tonemap=mobius:desat=0:peak=5,zscale=t=709:m=709:r=limited/,
      );
      assert.equal(tagsOf(p), 'bt709 bt709 bt709 tv');
      assert.deepEqual(p.applied.options.processingSettings!.inputColorSpaceConversion!.toneMapper, { algorithm: 'MOBIUS', outputNits: 200 });
    });
    for (const algorithm of ['LINEAR', 'CLIP', 'HABLE', 'REINHARD', 'MOBIUS']) {
      it(`toneMapper ${algorithm}: tonemap=${algorithm.toLowerCase()}, 100 nits by default`, function () {
        const p = plan({ processingSettings: { inputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY', toneMapper: { algorithm: algorithm as 'HABLE' } } } }, PQ_SOURCE);
        assert.ok(p.filterGraph.includes(`tonemap=tonemap=${algorithm.toLowerCase()}:desat=0,`));
        assert.match(p.filterGraph, /npl=100,/);
      });
    }
    it('toneMapper on an SDR source does nothing (noted)', function () {
      const p = plan({ processingSettings: { inputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY', toneMapper: { algorithm: 'HABLE' } } } });
      assert.doesNotMatch(p.filterGraph, /tonemap/);
      assert.equal(p.applied.options.processingSettings!.inputColorSpaceConversion!.toneMapper, undefined);
      assert.ok(p.applied.notes.some((n) => n.field === 'processingSettings.inputColorSpaceConversion.toneMapper'));
    });
    it('HDR10: HEVC chosen, 10-bit 4:2:0, x265 HDR10 SEI with mastering display and light levels', function () {
      const p = plan({
        processingSettings: {
          outputColorSpaceConversion: {
            mappingMode: 'USER_PRIORITY',
            colorProfile: { hdrFormat: 'HDR10', maxCll: 1000, maxFall: 400, masteringDisplay: { tag: 'P3_D65', maxLuminance: 1000, minLuminance: 0.0001 } },
            inverseToneMapper: { algorithm: 'LINEAR', outputNits: 203 },
          },
        },
      });
      assert.equal(p.output.codec, 'HEVC');
      assert.equal(p.output.pixelFormat, 'yuv420p10le');
      assert.equal(arg(p.outputArgs, '-x265-params'), 'log-level=error:hdr10=1:master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):max-cll=1000,400');
      assert.equal(tagsOf(p), 'bt2020 smpte2084 bt2020nc tv');
      assert.match(p.filterGraph, /zscale=min=709:pin=709:tin=709:rin=limited:m=2020_ncl:p=2020:t=smpte2084:r=limited:npl=203:dither=error_diffusion/);
      assert.ok(p.applied.notes.some((n) => n.field === 'processingSettings.outputColorSpaceConversion.inverseToneMapper'));
    });
    it('an HDR profile that only fills gaps (INPUT_PRIORITY on SDR) writes no HDR metadata (noted)', function () {
      const p = plan({
        encodingConfiguration: { codec: 'HEVC' },
        processingSettings: { outputColorSpaceConversion: { mappingMode: 'INPUT_PRIORITY', colorProfile: { hdrFormat: 'HDR10', maxCll: 1000 } } },
      });
      assert.equal(arg(p.outputArgs, '-x265-params'), 'log-level=error');
      assert.equal(arg(p.outputArgs, '-color_trc'), 'bt709');
      assert.equal(p.output.pixelFormat, 'yuv420p');
      assert.ok(p.applied.notes.some((n) => n.field === 'processingSettings.outputColorSpaceConversion.colorProfile' && n.appliedAs === 'not applied'));
    });
    describe("an HDR10 source's static metadata", function () {
      const MD_4000 = { red: [0.708, 0.292], green: [0.17, 0.797], blue: [0.131, 0.046], whitePoint: [0.3127, 0.329], minLuminance: 0.005, maxLuminance: 4000 } as const;
      const HDR10_4000: FakeSource = {
        width: 320,
        height: 180,
        codecName: 'hevc',
        pixelFormatName: 'yuv420p10le',
        bitDepth: 10,
        color: { colorSpaceName: 'bt2020nc', colorPrimariesName: 'bt2020', colorTransferName: 'smpte2084', colorRangeName: 'tv' },
        hdr10: { masteringDisplay: { ...MD_4000, red: [...MD_4000.red], green: [...MD_4000.green], blue: [...MD_4000.blue], whitePoint: [...MD_4000.whitePoint] }, maxCll: 4000, maxFall: 1000 },
      };
      const SOURCE_X265 = 'log-level=error:hdr10=1:master-display=G(8500,39850)B(6550,2300)R(35400,14600)WP(15635,16450)L(40000000,50):max-cll=4000,1000';
      it('is carried to an HEVC output that stays PQ: with {} and with SOURCE_PRIORITY (noted)', function () {
        for (const options of [
          {},
          { processingSettings: { inputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY' } } },
          { processingSettings: { outputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY' } } },
        ] as ProcessingOptions[]) {
          const p = plan(options, HDR10_4000);
          assert.equal(p.output.codec, 'HEVC');
          assert.equal(arg(p.outputArgs, '-x265-params'), SOURCE_X265, JSON.stringify(options));
          assert.deepEqual(p.output.hdr?.fromSource, ['maxCll', 'maxFall', 'masteringDisplay']);
          assert.ok(p.applied.notes.some((n) => n.appliedAs === 'carried from the source'));
        }
      });
      it('USER_PRIORITY HDR10 without a mastering display keeps the 4000-nit BT.2020 display and light levels, not the 1000-nit P3 default', function () {
        const p = plan({ processingSettings: { outputColorSpaceConversion: { mappingMode: 'USER_PRIORITY', colorProfile: { hdrFormat: 'HDR10' } } } }, HDR10_4000);
        assert.equal(arg(p.outputArgs, '-x265-params'), SOURCE_X265);
        // What the user sets wins, field by field; a source MaxFALL above the user's MaxCLL is dropped.
        const own = plan({ processingSettings: { outputColorSpaceConversion: { mappingMode: 'USER_PRIORITY', colorProfile: { hdrFormat: 'HDR10', maxCll: 800 } } } }, HDR10_4000);
        assert.equal(arg(own.outputArgs, '-x265-params'), 'log-level=error:hdr10=1:master-display=G(8500,39850)B(6550,2300)R(35400,14600)WP(15635,16450)L(40000000,50):max-cll=800,0');
      });
      it('is not carried when the picture leaves PQ or the codec cannot write it (noted)', function () {
        const sdr = plan(
          { encodingConfiguration: { codec: 'HEVC' }, processingSettings: { inputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY', toneMapper: { algorithm: 'HABLE' } } } },
          HDR10_4000,
        );
        assert.equal(arg(sdr.outputArgs, '-x265-params'), 'log-level=error');
        assert.equal(sdr.output.hdr, undefined);
        const h264 = plan({ encodingConfiguration: { codec: 'H264', pixelFormat: { yuv: '4:2:0', bitDepth: 10 } } }, HDR10_4000);
        assert.ok(
          h264.applied.notes.some((n) => n.appliedAs === 'not written' && /PQ10/.test(n.note)),
          JSON.stringify(h264.applied.notes),
        );
        const hlg = plan({ processingSettings: { outputColorSpaceConversion: { mappingMode: 'USER_PRIORITY', colorProfile: { hdrFormat: 'HLG' } } } }, HDR10_4000);
        assert.doesNotMatch(arg(hlg.outputArgs, '-x265-params')!, /master-display/);
      });
    });
    it('HDR10 without a mastering display writes P3-D65 (noted)', function () {
      const p = plan({ encodingConfiguration: { codec: 'HEVC' }, processingSettings: { outputColorSpaceConversion: { mappingMode: 'USER_PRIORITY', colorProfile: { hdrFormat: 'HDR10' } } } });
      assert.match(arg(p.outputArgs, '-x265-params')!, /hdr10=1:master-display=G\(13250,34500\)B\(7500,3000\)R\(34000,16000\)WP\(15635,16450\)L\(10000000,50\):max-cll=0,0/);
      assert.ok(p.applied.notes.some((n) => /masteringDisplay$/.test(n.field)));
    });
    it('INFINITEHDR: saturation boost, then linear expansion with SDR white at 203 nits (noted)', function () {
      const p = plan({
        encodingConfiguration: { codec: 'HEVC' },
        processingSettings: { outputColorSpaceConversion: { mappingMode: 'USER_PRIORITY', colorProfile: { hdrFormat: 'HLG' }, inverseToneMapper: { algorithm: 'INFINITEHDR', saturationBoost: 1.5 } } },
      });
      assert.match(p.filterGraph, /eq=saturation=1\.5,zscale=.*t=arib-std-b67.*:npl=203/);
      assert.equal(p.output.bitDepth, 10);
      assert.match(p.applied.notes.find((n) => /inverseToneMapper$/.test(n.field))!.note, /proprietary AI inverse tone mapper/);
    });
  });

  describe('the assembled command', function () {
    it('processingArgs: overwrite, seek, input, graph, video map, output arguments, output', function () {
      const p = plan({ filters: { denoiser: 'HQDN3D' } }, {}, { startMs: 1000, endMs: 2000 });
      const args = processingArgs(p, '-odd.mp4', '/out/x.mp4');
      assert.deepEqual(args.slice(0, 10), ['-y', '-ss', '0.999', '-t', '1.002', '-i', './-odd.mp4', '-filter_complex', p.filterGraph, '-map']);
      assert.equal(args[10], '[vout]');
      assert.deepEqual(args.slice(11, -1), p.outputArgs);
      assert.equal(args[args.length - 1], '/out/x.mp4');
      assert.match(graphOf(p), /^\[0:v:0\].*\[vout\]$/);
    });
    it('escapeFilterValue escapes both levels of the filter syntax', function () {
      assert.equal(escapeFilterValue('/a/b.trf'), '/a/b.trf');
      assert.equal(escapeFilterValue('/a:b/c,d.trf'), '/a\\\\:b/c\\,d.trf');
      assert.equal(escapeFilterValue("it's"), "it\\\\\\'s");
    });
    it('the work list names every costed stage for the estimate', function () {
      const p = plan(
        { encodingProfile: 'PRORES_422_HQ', filters: { deinterlacer: 'DEINT', denoiser: 'DENOISE', scaler: 'DVRES2' }, filterSettings: { resolution: { tag: 'FULL_HD' } } },
        PAL_SD_INTERLACED,
      );
      assert.deepEqual(
        p.work.map((w) => w.key),
        ['decode', 'bwdif', 'nlmeans', 'scale_lanczos', 'unsharp', 'prores_ks'],
      );
      const byKey = Object.fromEntries(p.work.map((w) => [w.key, w.pixelsPerSecond]));
      assert.equal(byKey.decode, 720 * 576 * 25);
      assert.equal(byKey.nlmeans, 720 * 576 * 50);
      assert.equal(byKey.prores_ks, 1920 * 1080 * 50);
    });
  });
});
