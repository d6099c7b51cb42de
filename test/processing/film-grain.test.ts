/**
 * FILMGRAIN with real ffmpeg, measured on the decoded pictures against the same job without the
 * filter: luma-only grain (chroma means equal, luma mean within 1 %), grain that grows with
 * grainStrength and gets coarser with grainSize. The monotonicity runs are FFV1 (lossless), so
 * the differences are the filter's alone.
 */
import { strict as assert } from 'node:assert';
import type { GrainSize, ProcessingOptions } from '../../src/processing-planner';
import { decodeYuv, lumaDifference, lumaPsnr, planeMean, processed, type DecodedVideo, type SourceName } from './engine-fixtures';
import { scaled } from '../helpers/timeouts';

const RANGE = { startMs: 0, endMs: 400 };
const W = 320;
const H = 180;

async function decoded(src: SourceName, options: ProcessingOptions, name: string, bitDepth: 8 | 10 = 8): Promise<DecodedVideo> {
  const { output } = await processed(src, options, name, RANGE);
  return decodeYuv(output, W, H, { bitDepth });
}

const grain = (base: ProcessingOptions, grainSize: GrainSize, grainStrength: number): ProcessingOptions => ({
  ...base,
  filters: { postProcessor: 'FILMGRAIN' },
  filterSettings: { filmGrain: { grainSize, grainStrength } },
});

function assertColourKept(withGrain: DecodedVideo, without: DecodedVideo, what: string, scale = 1): void {
  for (const plane of ['u', 'v'] as const) {
    const a = planeMean(withGrain, plane);
    const b = planeMean(without, plane);
    assert.ok(Math.abs(a - b) <= 0.25 * scale, `${what}: ${plane.toUpperCase()} mean ${a.toFixed(2)} with grain, ${b.toFixed(2)} without`);
  }
  const y = planeMean(withGrain, 'y');
  const y0 = planeMean(without, 'y');
  assert.ok(Math.abs(y - y0) / y0 <= 0.01, `${what}: luma mean ${y.toFixed(2)} with grain, ${y0.toFixed(2)} without (more than 1 % apart)`);
}

describe('FILMGRAIN with ffmpeg', function () {
  this.timeout(scaled(120_000));

  it('the reported job (H.264 MP4, MEDIUM, strength 30): colour and mean brightness kept, only luma grain added', async function () {
    const base: ProcessingOptions = { container: 'MP4', encodingConfiguration: { codec: 'H264' } };
    const without = await decoded('tiny', base, 'grain-h264-off');
    const withGrain = await decoded('tiny', grain(base, 'MEDIUM', 30), 'grain-h264-on');
    assertColourKept(withGrain, without, 'H.264');
    // Grain, not a wrecked picture: PSNR against the clean job well above the reported 14.5 dB.
    const psnr = lumaPsnr(withGrain, without);
    assert.ok(psnr > 20 && psnr < 40, `luma PSNR ${psnr.toFixed(1)} dB`);
  });

  it('a 10-bit HDR source keeps its colour and depth under grain', async function () {
    const base: ProcessingOptions = { container: 'MOV', encodingConfiguration: { codec: 'FFV1', pixelFormat: { yuv: '4:2:0', bitDepth: 10 } } };
    const without = await decoded('pq', base, 'grain-10bit-off', 10);
    const withGrain = await decoded('pq', grain(base, 'FINE', 20), 'grain-10bit-on', 10);
    assertColourKept(withGrain, without, '10-bit', 4);
    // Still 10-bit: grain values land between the 8-bit steps (not only multiples of 4).
    const y = withGrain.frames[0]!.y;
    assert.ok(
      y.some((x) => x % 4 !== 0),
      'the grained picture is not an 8-bit picture scaled up',
    );
  });

  it('stronger grain is stronger, coarser grain is coarser (lossless FFV1, each against the clean job)', async function () {
    const base: ProcessingOptions = { container: 'MOV', encodingConfiguration: { codec: 'FFV1', pixelFormat: { yuv: '4:2:0', bitDepth: 8 } } };
    const clean = await decoded('tiny', base, 'grain-ffv1-off');
    const byStrength: number[] = [];
    for (const s of [5, 15, 30, 50]) {
      const g = await decoded('tiny', grain(base, 'MEDIUM', s), `grain-strength-${s}`);
      assertColourKept(g, clean, `strength ${s}`);
      byStrength.push(lumaDifference(g, clean).stddev);
    }
    for (let i = 1; i < byStrength.length; i++) assert.ok(byStrength[i]! > byStrength[i - 1]! * 1.3, `grain stddev by strength 5, 15, 30, 50: ${byStrength.map((x) => x.toFixed(2)).join(',')}`);
    const bySize: number[] = [];
    for (const size of ['SUPER_FINE', 'FINE', 'MEDIUM', 'COARSE', 'VERY_COARSE'] as const) {
      const g = await decoded('tiny', grain(base, size, 30), `grain-size-${size}`);
      assertColourKept(g, clean, size);
      const d = lumaDifference(g, clean);
      assert.ok(d.stddev > 8, `${size}: grain stddev ${d.stddev.toFixed(2)}`);
      bySize.push(d.correlation);
    }
    assert.ok(bySize[0]! < 0.2, `SUPER_FINE grain is pixel-fine: neighbour correlation ${bySize[0]!.toFixed(3)}`);
    for (let i = 1; i < bySize.length; i++) assert.ok(bySize[i]! > bySize[i - 1]! + 0.03, `neighbour correlation by size: ${bySize.map((x) => x.toFixed(3)).join(',')}`);
  });
});
