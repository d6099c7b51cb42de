/**
 * 10-bit H.264 at a frame size AVC-Intra also uses, in MOV: ffmpeg's MOV muxer picks the sample
 * entry of H.264 itself at the default strictness and writes AVC-Intra whatever `-tag:v` asks:
 * 4:2:0 at AVC-Intra 50 sizes (960x720 here; 1440x1080) as `ai5q`, 4:2:2 at AVC-Intra 100 sizes
 * (1280x720 here; 1920x1080) as `ai1q` (4:2:2 at 960x720 keeps `avc1`). Readers of AVC-Intra ignore
 * the stream's own parameter sets, so the file decodes with errors (High 10 read as High 10 Intra,
 * High 4:2:2 as High 4:2:2 Intra). Every MOV that Vidmill writes from H.264 must carry the plain
 * `avc1` entry and decode cleanly: a processing output whole and split (the join writes the entry
 * again), and the free clip copied from such a master. MP4 keeps `avc1` on its own (checked too).
 */
import { strict as assert } from 'node:assert';
import path from 'node:path';
import { clipSampleEntry, clipWindow, cutClip, probeMedia, runMedia } from '../../src/media';
import { buildProcessingPlan, runProcessing, type SegmentedProcessingPlan } from '../../src/processing-planner';
import { encodeCached } from '../helpers/media-cache';
import { bins } from '../media/fixtures';
import { capabilities, processSplit, workDir } from './engine-fixtures';
import { scaled } from '../helpers/timeouts';

const L = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'];

/**
 * The two shapes: 4:2:0 at an AVC-Intra 50 size, 4:2:2 at an AVC-Intra 100 size (2 s in 1 s
 * segments: the larger frame). Each clip window starts on a keyframe (one a second), so the clip
 * is a copy.
 */
const SHAPES = [
  { chroma: '4:2:0', size: '960x720', pixFmt: 'yuv420p10le', profile: 'High 10', seconds: 4, segmentSeconds: 2, clip: clipWindow(4000, 2000) },
  { chroma: '4:2:2', size: '1280x720', pixFmt: 'yuv422p10le', profile: 'High 4:2:2', seconds: 2, segmentSeconds: 1, clip: { startMs: 1000, durationMs: 1000 } },
] as const;
type Shape = (typeof SHAPES)[number];

/** A master ffmpeg writes correctly (`avc1` kept with `-strict unofficial`): 10-bit H.264 of the shape, 25 frames/s, with AAC. */
async function master(container: 'mov' | 'mp4', shape: Shape = SHAPES[0]): Promise<string> {
  const file = path.join(workDir, `avc-intra-size-master${shape.chroma === '4:2:0' ? '' : '-422'}.${container}`);
  await encodeCached(
    (await bins()).ffmpeg,
    [
      ...L,
      ...['-f', 'lavfi', '-i', `testsrc2=size=${shape.size}:rate=25:duration=${shape.seconds}`, '-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${shape.seconds}`],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', shape.pixFmt, '-g', '25', '-c:a', 'aac', '-shortest', '-tag:v', 'avc1', '-strict', 'unofficial'],
    ],
    file,
  );
  return file;
}

/** The sample entry, the profile and whatever a full decode of the file reports as an error. */
async function readBack(file: string): Promise<{ tag: string; profile: string; decodeErrors: string }> {
  const b = await bins();
  const probe = await runMedia(b.ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=codec_tag_string,profile', '-of', 'json', file], { tool: 'ffprobe', rawArgs: true });
  const stream = (JSON.parse(probe.stdout) as { streams: { codec_tag_string: string; profile: string }[] }).streams[0]!;
  const decode = await runMedia(b.ffmpeg, ['-v', 'error', '-nostdin', '-i', file, '-f', 'null', '-'], { tool: 'ffmpeg', rawArgs: true });
  return { tag: stream.codec_tag_string, profile: stream.profile, decodeErrors: decode.stderrTail.trim() };
}

describe('10-bit H.264 at AVC-Intra frame sizes keeps the plain AVC sample entry', function () {
  this.timeout(scaled(300_000));

  for (const shape of SHAPES) {
    const clean = { tag: 'avc1', profile: shape.profile, decodeErrors: '' };
    const what = `10-bit ${shape.chroma} H.264 at ${shape.size}`;

    it(`the source is what users send (${what}): avc1, ${shape.profile}, decodes cleanly`, async () => {
      assert.deepEqual(await readBack(await master('mov', shape)), clean);
    });

    for (const container of ['MOV', 'MP4'] as const) {
      it(`processing ${what} to 10-bit ${shape.chroma} H.264 in ${container}, whole and split into segments: avc1, ${shape.profile}, decodes cleanly`, async () => {
        const b = await bins();
        const source = await master('mov', shape);
        const probe = await probeMedia(b, source);
        const options = { container, encodingConfiguration: { codec: 'H264' as const, pixelFormat: { yuv: shape.chroma, bitDepth: 10 as const } } };
        const env = { capabilities: await capabilities(), encoderPreset: 'ultrafast' as const };
        const range = { startMs: 0, endMs: probe.durationMs };
        const name = `avc-intra-size-${shape.pixFmt}`;
        const whole = buildProcessingPlan(options, probe, range, env);
        const wholeFile = path.join(workDir, `${name}-whole${whole.fileExtension}`);
        await runProcessing(b, source, wholeFile, whole, { durationMs: whole.output.durationMs, timeoutMs: scaled(120_000) });
        assert.deepEqual(await readBack(wholeFile), clean, 'whole');

        const split = buildProcessingPlan(options, probe, range, { ...env, segmentSeconds: shape.segmentSeconds }) as SegmentedProcessingPlan;
        assert.ok(split.segmented, 'split');
        const out = path.join(workDir, `${name}-split${split.fileExtension}`);
        await processSplit(source, split, out);
        assert.deepEqual(await readBack(out), clean, 'split');
      });
    }

    it(`the free clip of such a MOV master (${what}), copied: avc1, ${shape.profile}, decodes cleanly`, async () => {
      const b = await bins();
      const out = path.join(workDir, `avc-intra-size-clip-${shape.pixFmt}.mov`);
      const clip = await cutClip(b, await master('mov', shape), out, { ...shape.clip, container: 'mov' });
      assert.equal(clip.method, 'copy');
      assert.deepEqual(await readBack(clip.path), clean);
    });
  }

  it('the clip keeps the entry it should: avc1/avc3 of a copied H.264, avc3/hev1 when spliced, the muxer’s own for AVC-Intra and other codecs', () => {
    assert.equal(clipSampleEntry({ codec: 'h264', codecTag: 'avc1' }, false), 'avc1');
    assert.equal(clipSampleEntry({ codec: 'h264', codecTag: 'avc3' }, false), 'avc3');
    assert.equal(clipSampleEntry({ codec: 'h264', codecTag: 'ai5q' }, false), undefined);
    assert.equal(clipSampleEntry({ codec: 'h264', codecTag: 'avc1' }, true), 'avc3');
    assert.equal(clipSampleEntry({ codec: 'hevc', codecTag: 'hvc1' }, true), 'hev1');
    assert.equal(clipSampleEntry({ codec: 'hevc', codecTag: 'hvc1' }, false), undefined);
  });
});
