import { strict as assert } from 'node:assert';
import { BUILT_IN_CONFIGURATIONS, buildProcessingPlan, validateOptions } from '../../src/processing-planner';
import { PAL_SD_INTERLACED, probeOf } from './helpers';

describe('Built-in processing configurations', function () {
  it('the seven issue-6 configurations, unique ids and keys, names within 1..47 characters', function () {
    assert.deepEqual(
      BUILT_IN_CONFIGURATIONS.map((c) => c.key),
      ['upscale-full-hd', 'upscale-4k', 'convert-hevc-mp4', 'compress-h264', 'prores-422-hq-mov', 'dnxhr-hq-mxf', 'sd-archive-restore'],
    );
    assert.equal(new Set(BUILT_IN_CONFIGURATIONS.map((c) => c.id)).size, BUILT_IN_CONFIGURATIONS.length);
    for (const c of BUILT_IN_CONFIGURATIONS) {
      assert.match(c.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(c.name.length >= 1 && c.name.length <= 47, c.name);
      assert.ok(c.description.length > 0 && c.description.length <= 511);
    }
  });

  for (const c of BUILT_IN_CONFIGURATIONS) {
    it(`${c.name}: valid, and plans for an interlaced SD source and an HD source`, function () {
      validateOptions(c.options);
      for (const source of [probeOf(PAL_SD_INTERLACED), probeOf({ width: 1920, height: 1080 })]) {
        const plan = buildProcessingPlan(c.options, source, { startMs: 0, endMs: source.durationMs });
        assert.ok(plan.filterGraph.startsWith('[0:v:0]'));
      }
    });
  }

  it('what each one makes from interlaced PAL SD', function () {
    const sd = probeOf(PAL_SD_INTERLACED);
    const out = (key: string) => {
      const c = BUILT_IN_CONFIGURATIONS.find((x) => x.key === key)!;
      const p = buildProcessingPlan(c.options, sd, { startMs: 0, endMs: sd.durationMs });
      return `${p.output.codec} ${p.container} ${p.output.width}x${p.output.height} ${p.output.scanning} ${p.output.fps.num}/${p.output.fps.den} ${p.output.pixelFormat}`;
    };
    assert.equal(out('upscale-full-hd'), 'H264 MP4 1920x1080 PROGRESSIVE 50/1 yuv420p');
    assert.equal(out('upscale-4k'), 'HEVC MP4 3840x2160 PROGRESSIVE 50/1 yuv420p10le');
    assert.equal(out('convert-hevc-mp4'), 'HEVC MP4 720x576 PROGRESSIVE 50/1 yuv420p');
    assert.equal(out('compress-h264'), 'H264 MP4 720x576 INTERLACED_TOP_FIRST 25/1 yuv420p');
    assert.equal(out('prores-422-hq-mov'), 'PRORES MOV 720x576 INTERLACED_TOP_FIRST 25/1 yuv422p10le');
    assert.equal(out('dnxhr-hq-mxf'), 'DNXHR MXF 720x576 PROGRESSIVE 50/1 yuv422p'); // DNxHR is progressive only
    assert.equal(out('sd-archive-restore'), 'H264 MP4 720x576 PROGRESSIVE 50/1 yuv420p');
  });
});
