/**
 * The engine with real ffmpeg: tiny generated sources (engine-fixtures.ts), processed by the
 * plan and probed back.
 */
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { MediaAbortedError, type MediaBinaries, type ProbeResult } from '../../src/media';
import { buildProcessingPlan, estimateProcessing, runProcessing, type EngineCapabilities, type ProcessingPlan, type ProcessingProgress } from '../../src/processing-planner';
import { bins } from '../media/fixtures';
import { audioCodec, capabilities, processed, source, streamInfo, workDir as dir } from './engine-fixtures';
import { scaled } from '../helpers/timeouts';

let b: MediaBinaries;
let caps: EngineCapabilities;

function assertDurationWithinOneFrame(probe: ProbeResult, plan: ProcessingPlan): void {
  const frameMs = 1000 / (plan.output.fps.num / plan.output.fps.den);
  assert.ok(Math.abs(probe.durationMs - plan.output.durationMs) <= frameMs, `duration ${probe.durationMs} ms, expected ${plan.output.durationMs} +- ${frameMs}`);
}

describe('Processing with ffmpeg', function () {
  this.timeout(scaled(60_000));

  before(async function () {
    b = await bins();
    caps = await capabilities();
  });

  it('this ffmpeg has every filter and encoder the engine uses (Debian 12 ffmpeg 5.1)', function () {
    for (const f of ['bwdif', 'w3fdif', 'nlmeans', 'zscale', 'tonemap', 'vidstabdetect', 'minterpolate']) assert.ok(caps.filters.has(f), f);
    for (const e of ['libx264', 'libx265', 'prores_ks', 'dnxhd', 'ffv1', 'mpeg2video']) assert.ok(caps.encoders.has(e), e);
  });

  it('interlaced SD -> 1080p HEVC MP4, deinterlaced and denoised: hevc, 1920x1080, progressive, 50 fps, duration within a frame', async function () {
    const { plan, probe, progress, result } = await processed(
      'palInterlaced',
      {
        container: 'MP4',
        encodingConfiguration: { codec: 'HEVC' },
        filters: { deinterlacer: 'DEINT', denoiser: 'HQDN3D', scaler: 'DVRES2' },
        filterSettings: { interlacedFieldOrderMode: 'AUTO_METADATA', resolution: { tag: 'FULL_HD' } },
      },
      'hevc-1080p',
    );
    const m = probe.metadata;
    assert.equal(m.codecName, 'hevc');
    assert.equal(m.containerName, 'mp4');
    assert.equal(`${m.frameWidth}x${m.frameHeight}`, '1920x1080');
    assert.equal(m.scanning?.metadata ?? 'PROGRESSIVE', 'PROGRESSIVE');
    assert.equal(m.scanning?.heuristics, 'PROGRESSIVE');
    assert.equal(m.averageFrameRate?.rational, '50:1');
    assert.equal(m.displayAspectRatio?.tag, '16:9');
    assert.equal(probe.hasAudio, true);
    assertDurationWithinOneFrame(probe, plan);
    // The source's audio starts 10 ms before its video: a constant-rate MP4 repeats the first frame.
    assert.ok(Math.abs(m.totalFrames! - plan.output.frames) <= 1, `${m.totalFrames} frames, planned ${plan.output.frames}`);
    assert.equal(m.colorSpaceName, 'bt470bg'); // the SD colours are kept and tagged, not converted
    assert.equal(result.passes, 1);
    assert.ok(progress.length > 0);
    assert.equal(progress[progress.length - 1]!.percentage, 100);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.percentage >= progress[i - 1]!.percentage);
    assert.ok(plan.applied.notes.some((n) => n.field === 'filters.deinterlacer' && /bwdif/.test(n.appliedAs)));
  });

  it('ProRes 422 HQ in MOV with 24-bit PCM audio', async function () {
    const { probe, output, plan } = await processed('small', { encodingProfile: 'PRORES_422_HQ', container: 'MOV' }, 'prores');
    const s = await streamInfo(output);
    assert.equal(s.codec_name, 'prores');
    assert.equal(s.profile, 'HQ');
    assert.equal(s.pix_fmt, 'yuv422p10le');
    assert.equal(probe.metadata.containerName, 'mov');
    assert.equal(await audioCodec(output), 'pcm_s24le');
    assertDurationWithinOneFrame(probe, plan);
  });

  it('DNxHR HQ in MXF with 24-bit PCM audio at 48 kHz', async function () {
    const { probe, output, plan } = await processed('small', { encodingProfile: 'DNXHR_HQ', container: 'MXF' }, 'dnxhr');
    const s = await streamInfo(output);
    assert.equal(s.codec_name, 'dnxhd');
    assert.equal(s.profile, 'DNXHR HQ');
    assert.equal(s.pix_fmt, 'yuv422p');
    assert.equal(probe.metadata.containerName, 'mxf');
    assert.equal(await audioCodec(output), 'pcm_s24le');
    assertDurationWithinOneFrame(probe, plan);
  });

  it('H.264 at a bitrate, cropped, from a range of the source', async function () {
    const { probe, output, plan } = await processed(
      'palInterlaced',
      {
        encodingConfiguration: { codec: 'H264', bitrate: 1_500_000 },
        filters: { deinterlacer: 'YADIF', reshaper: 'CROP' },
        filterSettings: { normalizedCropCoordinates: { x1: 0.25, y1: 0.25, x2: 0.75, y2: 0.75 } },
      },
      'h264-crop',
      { startMs: 500, endMs: 1500 },
    );
    assert.equal(probe.metadata.codecName, 'h264');
    assert.equal(plan.container, 'MPEGTS'); // the source's container holds H.264
    assert.equal(`${probe.metadata.frameWidth}x${probe.metadata.frameHeight}`, '360x288');
    assert.ok(Math.abs(probe.durationMs - 1000) <= 40, `duration ${probe.durationMs}`);
    const s = await streamInfo(output);
    assert.equal(s.sample_aspect_ratio, '64:45');
    // ABR over one second of test picture: within a factor of two of the target.
    const bits = (probe.metadata.videoStreamSize ?? probe.metadata.size!) * 8;
    assert.ok(bits > 1_500_000 / 2 && bits < 1_500_000 * 2, `${bits} bits in 1 s`);
  });

  it('interlaced H.264 output (bottom field first) from a 50p source: 25 frames/s, field order in the stream', async function () {
    const { probe, output, plan } = await processed('fast', { encodingConfiguration: { codec: 'H264' }, processingSettings: { outputScanning: 'INTERLACED_BOTTOM_FIRST' } }, 'interlaced');
    assert.equal(probe.metadata.scanning?.metadata, 'INTERLACED_BOTTOM_FIRST');
    assert.equal(probe.metadata.averageFrameRate?.rational, '25:1');
    const s = await streamInfo(output);
    assert.equal(s.field_order, 'bb');
    assertDurationWithinOneFrame(probe, plan);
  });

  it('DEJIT with vidstab: two passes, the transforms file next to an output whose path needs escaping, removed afterwards', async function () {
    const { plan, probe, result, output, progress } = await processed('small', { filters: { stabilizer: 'DEJIT' } }, 'odd: name, [x]');
    assert.ok(plan.analysis);
    assert.equal(result.passes, 2);
    assert.equal(existsSync(`${output}.trf`), false);
    assert.ok(progress.some((p) => p.pass === 'analysis') && progress.some((p) => p.pass === 'encode'));
    assert.equal(progress[progress.length - 1]!.percentage, 100);
    assertDurationWithinOneFrame(probe, plan);
  });

  it('VFI to 50 fps, DENOISE, FACEFORWARD, film grain and the debander run, with the frame count of the range', async function () {
    const { probe, plan } = await processed(
      'small',
      {
        filters: { denoiser: 'DENOISE', augmenter: 'FACEFORWARD', frameRateConverter: 'VFI', debander: 'GRADFUN', postProcessor: 'FILMGRAIN' },
        filterSettings: {
          faceForward: { colorBoost: 10, autoWhiteBalance: true, relightIntensity: 50, backgroundBlur: 0 },
          frameRate: { tag: 'VIDEO_PAL_FAST' },
          filmGrain: { grainSize: 'COARSE', grainStrength: 15 },
        },
      },
      'filters',
      { startMs: 0, endMs: 600 },
    );
    assert.equal(probe.metadata.averageFrameRate?.rational, '50:1');
    assert.equal(probe.metadata.totalFrames, 30);
    assertDurationWithinOneFrame(probe, plan);
  });

  it('HDR PQ -> SDR H.264 by tone mapping: tagged Rec.709', async function () {
    const { probe } = await processed(
      'pq',
      {
        encodingConfiguration: { codec: 'H264', pixelFormat: { yuv: '4:2:0', bitDepth: 8 } },
        processingSettings: { inputColorSpaceConversion: { mappingMode: 'SOURCE_PRIORITY', toneMapper: { algorithm: 'HABLE' } } },
      },
      'tonemapped',
    );
    const m = probe.metadata;
    assert.equal(m.pixelFormatName, 'yuv420p');
    assert.deepEqual([m.colorPrimariesName, m.colorTransferName, m.colorSpaceName], ['bt709', 'bt709', 'bt709']);
    assert.equal(m.hdrStandardName, undefined);
  });

  it('SDR -> HDR10 HEVC with static metadata (the probe reads HDR10)', async function () {
    const { probe } = await processed(
      'small',
      {
        processingSettings: {
          outputColorSpaceConversion: {
            mappingMode: 'USER_PRIORITY',
            colorProfile: { hdrFormat: 'HDR10', maxCll: 1000, maxFall: 300, masteringDisplay: { tag: 'BT2020' } },
            inverseToneMapper: { algorithm: 'LINEAR', outputNits: 203 },
          },
        },
      },
      'hdr10',
    );
    const m = probe.metadata;
    assert.equal(m.codecName, 'hevc');
    assert.equal(m.pixelFormatName, 'yuv420p10le');
    assert.equal(m.colorTransferName, 'smpte2084');
    assert.equal(m.hdrStandardName, 'HDR10');
  });

  it('H.264 in MXF at the default preset (B-frames elsewhere): presentation times increase (the muxer does not reorder)', async function () {
    const src = await source('clip25');
    const plan = buildProcessingPlan({ container: 'MXF', encodingConfiguration: { codec: 'H264' } }, src.probe, { startMs: 0, endMs: 2000 }, { capabilities: caps, encoderPreset: 'medium' });
    const output = path.join(dir, `h264-mxf${plan.fileExtension}`);
    await runProcessing(b, src.file, output, plan, { durationMs: plan.output.durationMs, timeoutMs: scaled(60_000) });
    const { stdout } = await promisify(execFile)(b.ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'frame=pts_time', '-of', 'csv=p=0', output]);
    const pts = stdout
      .split('\n')
      .filter((l) => /^\d/.test(l))
      .map((l) => Number(l.split(',')[0]));
    assert.equal(pts.length, plan.output.frames);
    for (let i = 1; i < pts.length; i++) assert.ok(pts[i]! > pts[i - 1]!, `frame ${i} at ${pts[i]} s after ${pts[i - 1]} s`);
  });

  it('XDCAM HD422 in MXF and MPEG-2 in a transport stream keep an interlaced source interlaced', async function () {
    const xdcam = await processed('palInterlaced', { encodingConfiguration: { codec: 'XDCAM' }, filters: { scaler: 'SCALE' }, filterSettings: { resolution: { tag: 'FULL_HD' } } }, 'xdcam', {
      startMs: 0,
      endMs: 1000,
    });
    const s = await streamInfo(xdcam.output);
    assert.equal(s.codec_name, 'mpeg2video');
    assert.equal(s.pix_fmt, 'yuv422p');
    assert.equal(xdcam.probe.metadata.containerName, 'mxf');
    assert.equal(xdcam.probe.metadata.scanning?.metadata, 'INTERLACED_TOP_FIRST');
    assert.equal(`${xdcam.probe.metadata.frameWidth}x${xdcam.probe.metadata.frameHeight}`, '1920x1080');
    const mpeg2 = await processed('palInterlaced', { encodingConfiguration: { codec: 'MPEG2' } }, 'mpeg2', { startMs: 0, endMs: 1000 });
    assert.equal(mpeg2.plan.container, 'MPEGTS');
    assert.equal(mpeg2.probe.metadata.codecName, 'mpeg2');
    assert.equal(mpeg2.probe.metadata.scanning?.metadata, 'INTERLACED_TOP_FIRST');
    assert.equal(mpeg2.probe.metadata.scanning?.heuristics, 'INTERLACED_TOP_FIRST');
    assert.equal(mpeg2.probe.metadata.averageFrameRate?.rational, '25:1');
  });

  it("progress with ffmpeg's speed; an abort kills ffmpeg and leaves no output", async function () {
    const src = await source('palInterlaced');
    const plan = buildProcessingPlan(
      { filters: { denoiser: 'DENOISE' }, encodingConfiguration: { codec: 'HEVC' } },
      src.probe,
      { startMs: 0, endMs: src.probe.durationMs },
      { capabilities: caps, encoderPreset: 'medium' },
    );
    const output = path.join(dir, 'aborted' + plan.fileExtension);
    const controller = new AbortController();
    const seen: ProcessingProgress[] = [];
    await assert.rejects(
      runProcessing(b, src.file, output, plan, {
        durationMs: plan.output.durationMs,
        signal: controller.signal,
        onProgress: (p) => {
          seen.push(p);
          if (p.percentage > 0 && p.speed !== undefined) controller.abort(new Error('test abort'));
        },
      }),
      MediaAbortedError,
    );
    assert.equal(existsSync(output), false);
    assert.ok(seen.some((p) => p.percentage > 0 && p.speed !== undefined));
    assert.ok(
      seen.every((p) => p.percentage < 100),
      'no 100% after an abort',
    );
  });

  it('the estimate is in the range of the real run (same machine)', async function () {
    const { plan, src, result } = await processed('palInterlaced', { encodingConfiguration: { codec: 'H264', bitrate: 2_000_000 }, filters: { deinterlacer: 'BWDIF' } }, 'estimate');
    const est = estimateProcessing(plan, src.probe);
    assert.ok(est.outputBytes > result.bytes / 2 && est.outputBytes < result.bytes * 2, `estimated ${est.outputBytes}, wrote ${result.bytes}`);
    assert.equal(est.gigapixels, Math.round(((720 * 576 * plan.output.frames) / 1e9) * 1e6) / 1e6);
    assert.ok(est.computeSeconds > 0 && est.computeSeconds < 30);
  });
});
