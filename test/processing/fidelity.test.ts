/**
 * Fidelity of the engine with real ffmpeg, read back with ffprobe: HDR10 static metadata carried
 * from the source, frame-exact range starts, DNxHR from an interlaced source.
 */
import { strict as assert } from 'node:assert';
import type { ProcessingOptions } from '../../src/processing-planner';
import { decodeYuv, firstFrameSideData, frameCount, lumaPsnr, processed, source, streamInfo, streamStart, type SourceName } from './engine-fixtures';
import { scaled } from '../helpers/timeouts';

/** ffprobe's mastering display values (`35400/50000`) as numbers. */
const ratio = (v: string | number | undefined) => {
  const [n = NaN, d] = String(v).split('/').map(Number);
  return d ? n / d : n;
};

describe('Processing fidelity with ffmpeg', function () {
  this.timeout(scaled(120_000));

  describe("an HDR10 source's static metadata reaches the output", function () {
    const cases: [string, SourceName, ProcessingOptions, { maxLuminance: number; red: [number, number]; maxCll: number; maxFall: number }][] = [
      ['{} from the 4000-nit source', 'hdr10At4000', {}, { maxLuminance: 4000, red: [0.708, 0.292], maxCll: 4000, maxFall: 1000 }],
      ['{} from the 1000-nit source', 'hdr10At1000', {}, { maxLuminance: 1000, red: [0.68, 0.32], maxCll: 1000, maxFall: 400 }],
      [
        'input SOURCE_PRIORITY',
        'hdr10At4000',
        { processingSettings: { inputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY' } } },
        { maxLuminance: 4000, red: [0.708, 0.292], maxCll: 4000, maxFall: 1000 },
      ],
      [
        'USER_PRIORITY HDR10 without a mastering display',
        'hdr10At4000',
        { encodingConfiguration: { codec: 'HEVC' }, processingSettings: { outputColorSpaceConversion: { mappingMode: 'USER_PRIORITY', colorProfile: { hdrFormat: 'HDR10' } } } },
        { maxLuminance: 4000, red: [0.708, 0.292], maxCll: 4000, maxFall: 1000 },
      ],
    ];
    for (const [name, src, options, want] of cases) {
      it(`${name}: mastering display and light levels read back, the probe says HDR10`, async function () {
        const { output, probe } = await processed(src, options, `hdr10-${name.replace(/\W+/g, '-')}`);
        const side = await firstFrameSideData(output);
        const md = side['Mastering display metadata'];
        const cll = side['Content light level metadata'];
        assert.ok(md && cll, `side data: ${JSON.stringify(side)}`);
        assert.ok(Math.abs(ratio(md.max_luminance) - want.maxLuminance) < 0.01, `max_luminance ${md.max_luminance}`);
        assert.ok(Math.abs(ratio(md.min_luminance) - 0.005) < 1e-6, `min_luminance ${md.min_luminance}`);
        assert.ok(Math.abs(ratio(md.red_x) - want.red[0]) < 1e-4 && Math.abs(ratio(md.red_y) - want.red[1]) < 1e-4, `red ${md.red_x},${md.red_y}`);
        assert.deepEqual([cll.max_content, cll.max_average], [want.maxCll, want.maxFall]);
        assert.equal(probe.metadata.hdrStandardName, 'HDR10');
        assert.equal(probe.metadata.colorTransferName, 'smpte2084');
        assert.deepEqual(probe.hdr10?.maxCll, want.maxCll);
      });
    }
    it('the probe reads the static metadata of a source', async function () {
      const { probe } = await source('hdr10At4000');
      assert.equal(probe.metadata.hdrStandardName, 'HDR10');
      assert.deepEqual(probe.hdr10, {
        masteringDisplay: { red: [0.708, 0.292], green: [0.17, 0.797], blue: [0.131, 0.046], whitePoint: [0.3127, 0.329], minLuminance: 0.005, maxLuminance: 4000 },
        maxCll: 4000,
        maxFall: 1000,
      });
      assert.equal((await source('pq')).probe.hdr10, undefined);
    });
  });

  describe('a range starts on the first frame at or after its start', function () {
    it('25 frames/s, 1.5 s from 500 ms: 37 frames (12.5 falls between frames 12 and 13), the first is frame 13 and is not repeated', async function () {
      const { output, probe } = await processed('clip25', { container: 'MP4', encodingConfiguration: { codec: 'H264' } }, 'clip-25', { startMs: 500, endMs: 2000 });
      const { frames, firstPts } = await frameCount(output);
      assert.equal(frames, 37);
      assert.ok(Math.abs(firstPts) < 0.001, `first frame at ${firstPts} s`);
      const out = await decodeYuv(output, 320, 180, { maxFrames: 2 });
      const src = await source('clip25');
      const frame13 = await decodeYuv(src.file, 320, 180, { vf: 'select=eq(n\\,13)', maxFrames: 1 });
      const frame12 = await decodeYuv(src.file, 320, 180, { vf: 'select=eq(n\\,12)', maxFrames: 1 });
      const first = { ...out, frames: [out.frames[0]!] };
      const second = { ...out, frames: [out.frames[1]!] };
      assert.ok(lumaPsnr(first, frame13) > lumaPsnr(first, frame12) + 3, 'the first frame is source frame 13');
      assert.ok(lumaPsnr(second, first) < 60, 'the second frame is not a repeat of the first');
      assert.ok(Math.abs(probe.durationMs - 1480) <= 40, `duration ${probe.durationMs}`);
    });
    it('25 frames/s, from 234 to 1777 ms: the planned (billed) frames are the frames the output holds (39: the last starts at 1.52 s, before the end)', async function () {
      const { output, plan } = await processed('clip25', { container: 'MP4', encodingConfiguration: { codec: 'H264' } }, 'clip-25-odd', { startMs: 234, endMs: 1777 });
      const { frames } = await frameCount(output);
      assert.equal(plan.output.frames, 39);
      assert.equal(frames, plan.output.frames);
    });
    it('a video that starts 0.52 s after its audio: the whole range starts on its first frame (not repeated to fill the gap), the audio cut to start with it', async function () {
      const src = await source('videoLate');
      assert.equal(src.probe.videoStartMs, 520);
      const { output, plan } = await processed('videoLate', { container: 'MOV', encodingConfiguration: { codec: 'H264' } }, 'video-late');
      const { frames, firstPts } = await frameCount(output);
      assert.equal(frames, 50);
      assert.equal(plan.output.frames, 50);
      assert.ok(Math.abs(firstPts) < 0.001, `first frame at ${firstPts} s`);
      const out = await decodeYuv(output, 320, 180, { maxFrames: 2 });
      assert.ok(lumaPsnr({ ...out, frames: [out.frames[1]!] }, { ...out, frames: [out.frames[0]!] }) < 60, 'the second frame is not a repeat of the first');
      const audio = await streamStart(output, 'a:0');
      assert.ok(Math.abs(audio - firstPts) < 0.022, `the audio starts with the video: ${audio} s`);
    });
    it('29.97 frames/s, from 500 ms to 2000 ms: 45 frames, the first at 0', async function () {
      const { output } = await processed('ntsc', { container: 'MP4', encodingConfiguration: { codec: 'H264' } }, 'clip-ntsc', { startMs: 500, endMs: 2000 });
      const { frames, firstPts } = await frameCount(output);
      assert.equal(frames, 45);
      assert.ok(Math.abs(firstPts) < 0.001, `first frame at ${firstPts} s`);
    });
  });

  it('the applied output (processing.appliedOptions.output) is what ffprobe reads: codec profile, pixel format, size, aspect, rate, scanning', async function () {
    const cases: [SourceName, ProcessingOptions][] = [
      ['palInterlaced', { encodingConfiguration: { codec: 'H264' }, filters: { reshaper: 'CROP' }, filterSettings: { normalizedCropCoordinates: { x1: 0.1, y1: 0.125, x2: 0.9, y2: 0.875 } } }],
      ['palInterlaced', { encodingConfiguration: { codec: 'MPEG2', pixelFormat: { yuv: '4:2:2', bitDepth: 8 } } }],
      ['palInterlaced', { encodingProfile: 'PRORES_422_HQ' }],
      ['small', { encodingConfiguration: { codec: 'HEVC', pixelFormat: { yuv: '4:2:0', bitDepth: 10 } } }],
      ['small', { encodingProfile: 'PRORES_4444_XQ' }],
      ['small', { encodingProfile: 'DNXHR_SQ' }],
      ['small', { encodingConfiguration: { codec: 'H264' } }],
    ];
    let i = 0;
    for (const [src, options] of cases) {
      const { plan, output, probe } = await processed(src, options, `applied-${i++}`, { startMs: 0, endMs: 1000 });
      const a = plan.applied.output;
      const s = await streamInfo(output);
      const what = JSON.stringify(options);
      assert.equal(a.codecProfile, s.profile, what);
      // As read: ProRes 4444 is a 12-bit stream (reported so since issue 24).
      assert.equal(a.pixelFormat.name, s.pix_fmt, what);
      assert.equal(`${a.width}x${a.height}`, `${probe.metadata.frameWidth}x${probe.metadata.frameHeight}`, what);
      assert.equal(a.sampleAspectRatio, s.sample_aspect_ratio === 'N/A' || !s.sample_aspect_ratio ? '1:1' : s.sample_aspect_ratio, what);
      assert.equal(a.frameRate.rational, probe.metadata.averageFrameRate?.rational, what);
      assert.equal(a.scanning, probe.metadata.scanning?.metadata ?? 'PROGRESSIVE', what);
    }
  });

  it('DNxHR SQ in MXF from interlaced PAL: deinterlaced to 720x576p50 (the encoder is progressive only), not a failed job', async function () {
    const { output, probe, plan } = await processed('palInterlaced', { encodingProfile: 'DNXHR_SQ', container: 'MXF' }, 'dnxhr-from-interlaced', { startMs: 0, endMs: 1000 });
    const s = await streamInfo(output);
    assert.equal(s.profile, 'DNXHR SQ');
    assert.equal(probe.metadata.averageFrameRate?.rational, '50:1');
    assert.equal(plan.output.scanning, 'PROGRESSIVE');
    assert.notEqual(probe.metadata.scanning?.heuristics, 'INTERLACED_TOP_FIRST');
    assert.ok(plan.applied.notes.some((n) => n.field === 'processingSettings.outputScanning'));
  });
});
