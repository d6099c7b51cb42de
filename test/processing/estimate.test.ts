import { strict as assert } from 'node:assert';
import calibration from '../../src/processing-planner/calibration.json';
import { buildProcessingPlan, estimateProcessing, type ProcessingOptions } from '../../src/processing-planner';
import { FFV1_RATIO, PASS_OVERHEAD_SECONDS, QUALITY_BITS_PER_PIXEL, rateFor } from '../../src/processing-planner/estimate';
import { PAL_SD_INTERLACED, probeOf, type FakeSource } from './helpers';

function estimate(options: ProcessingOptions, source: FakeSource = {}, range = { startMs: 0, endMs: 10_000 }) {
  const probe = probeOf(source);
  const plan = buildProcessingPlan(options, probe, range);
  return { plan, est: estimateProcessing(plan, probe) };
}

describe('Processing estimate', function () {
  it('the calibration table covers every stage key the plan can produce', function () {
    const keys = Object.keys(calibration.rates);
    for (const k of [
      'decode',
      'libx264:medium',
      'libx265:medium',
      'mpeg2video',
      'ffv1',
      'prores_ks',
      'dnxhd',
      'bwdif',
      'yadif',
      'w3fdif',
      'hqdn3d',
      'nlmeans',
      'vidstabdetect',
      'vidstabtransform',
      'deshake',
      'grayworld',
      'vibrance',
      'eq',
      'scale_lanczos',
      'unsharp',
      'minterpolate',
      'minterpolate_vfi',
      'framerate',
      'gradfun',
      'deband',
      'filmgrain',
      'zscale',
      'colorspace',
      'tonemap',
      'interlace',
      'pad',
    ]) {
      assert.ok(keys.includes(k), k);
    }
    for (const r of Object.values(calibration.rates)) assert.ok(r.mpxPerSecond > 0 && r.mpxPerCpuSecond > 0);
    assert.match(calibration.measuredAt, /^\d{4}-\d\d-\d\dT/);
  });

  it('gigapixels = output width x height x frames / 1e9', function () {
    const { est, plan } = estimate({ filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'UHD_4K' } } });
    assert.equal(plan.output.frames, 250);
    assert.equal(est.gigapixels, (3840 * 2160 * 250) / 1e9);
  });

  it('a range starting between frames is estimated and charged for the frames it makes', function () {
    const { est, plan } = estimate({ filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'UHD_4K' } } }, {}, { startMs: 500, endMs: 2000 });
    assert.equal(plan.output.frames, 37); // frames 13..49 at 25 frames/s, not 1.5 s x 25
    assert.equal(est.gigapixels, Math.round(((3840 * 2160 * 37) / 1e9) * 1e6) / 1e6);
  });

  it('compute time: each stage at its measured rate, plus the start-up of each pass', function () {
    const { est, plan } = estimate({ encodingConfiguration: { codec: 'H264' } }, { hasAudio: false });
    const mpx = (1920 * 1080 * 25 * 10) / 1e6;
    const expected = PASS_OVERHEAD_SECONDS + mpx / rateFor('decode').mpxPerSecond + mpx / rateFor('libx264:medium').mpxPerSecond;
    assert.equal(plan.work.length, 2);
    assert.equal(est.computeSeconds, Math.round(expected * 10) / 10);
    assert.ok(est.cpuSeconds >= est.computeSeconds * 0.9);
  });

  it('heavy filters dominate: non-local means and motion interpolation cost far more than a transcode', function () {
    const base = estimate({ encodingConfiguration: { codec: 'H264' } }).est.computeSeconds;
    assert.ok(estimate({ encodingConfiguration: { codec: 'H264' }, filters: { denoiser: 'DENOISE' } }).est.computeSeconds > base * 3);
    assert.ok(estimate({ encodingConfiguration: { codec: 'H264' }, filters: { frameRateConverter: 'VFI' }, filterSettings: { frameRate: { fps: 50 } } }).est.computeSeconds > base * 2);
    const twoPass = estimate({ filters: { stabilizer: 'DEJIT' } });
    assert.ok(twoPass.plan.analysis && twoPass.est.computeSeconds > base);
  });

  it('an uncalibrated x264 preset scales the medium rate; an unknown stage counts as cheap', function () {
    assert.equal(rateFor('libx264:slow').mpxPerSecond, rateFor('libx264:medium').mpxPerSecond * 0.55);
    assert.equal(rateFor('setparams').mpxPerSecond, 3000);
  });

  const SIZES: [string, ProcessingOptions, FakeSource, (s: number) => number][] = [
    ['a bitrate', { encodingConfiguration: { codec: 'H264', bitrate: 8_000_000 } }, { hasAudio: false }, () => (8_000_000 * 10) / 8],
    ['CRF H.264', { encodingConfiguration: { codec: 'H264' } }, { hasAudio: false }, () => (QUALITY_BITS_PER_PIXEL.H264 * 1920 * 1080 * 25 * 10) / 8],
    ['CRF HEVC', { encodingConfiguration: { codec: 'HEVC' } }, { hasAudio: false }, () => (QUALITY_BITS_PER_PIXEL.HEVC * 1920 * 1080 * 25 * 10) / 8],
    ['FFV1 4:2:0 8-bit', { encodingConfiguration: { codec: 'FFV1' } }, { hasAudio: false }, () => (FFV1_RATIO * 1.5 * 8 * 1920 * 1080 * 25 * 10) / 8],
    ['ProRes 422 HQ: 220 Mbit/s at 1080p29.97', { encodingProfile: 'PRORES_422_HQ' }, { hasAudio: false, rate: '30000:1001' }, () => (220e6 * 10) / 8],
    ['DNxHD 185 at 25 fps: its nominal rate', { encodingProfile: 'DNXHD_185_HQ' }, { hasAudio: false }, () => (185e6 * 10) / 8],
    ['AAC audio adds 192 kbit/s', { encodingConfiguration: { codec: 'H264', bitrate: 8_000_000 } }, {}, () => ((8_000_000 + 192_000) * 10) / 8],
    ['PCM audio in MXF adds 2 x 24 x 48000 bit/s', { encodingProfile: 'DNXHD_185_HQ', container: 'MXF' }, {}, () => ((185e6 + 2_304_000) * 10) / 8],
  ];
  for (const [name, options, source, bytes] of SIZES) {
    it(`output size: ${name} (+1% container)`, function () {
      const { est } = estimate(options, source);
      const expected = bytes(10) * 1.01;
      assert.ok(Math.abs(est.outputBytes - expected) / expected < 0.002, `${est.outputBytes} vs ${expected}`);
    });
  }

  it('an SD archive restoration: deinterlace doubles the frames billed', function () {
    const { est, plan } = estimate({ filters: { deinterlacer: 'DEINT', denoiser: 'DENOISE' } }, PAL_SD_INTERLACED);
    assert.equal(plan.output.frames, 500);
    assert.equal(est.gigapixels, (720 * 576 * 500) / 1e9);
  });
});
