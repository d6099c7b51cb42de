import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { clipContainer, clipWindow, cutClip, planClipCut, probeMedia, type VideoPacket } from '../../src/media';
import { clipEncoderArgs, clipMuxArgs, clipSegmentArgs, cleanCutAt, segmentSeek } from '../../src/media/clip';
import { audioSpan, bins, decodedVideoFrames, decodeErrors, fixture, fixtureDir, framePsnr, type FixtureName } from './fixtures';
import { scaled } from '../helpers/timeouts';

const run = promisify(execFile);
let n = 0;
const outDir = () => mkdtempSync(path.join(fixtureDir, `clip-${++n}-`));

/**
 * Packets in decode order of a stream at `fps` with a keyframe every `gop` frames and a P-frame
 * every `m` frames within each GOP (and on its last frame); the B-frames between two of these
 * anchors are decoded after the later one (I P B B P B B ...). `openGop`: a GOP does not end on
 * an anchor, so the B-frames before the next keyframe are decoded after it (they refer across it).
 */
function packets(frames: number, fps: number, gop: number, m: number, openGop = false): VideoPacket[] {
  const anchors = new Set<number>([frames - 1]);
  for (let g = 0; g < frames; g += gop) {
    for (let i = g; i < Math.min(frames, g + gop); i += m) anchors.add(i);
    if (!openGop && g > 0) anchors.add(g - 1);
  }
  const order = [...anchors].sort((a, b) => a - b);
  const out: VideoPacket[] = [];
  const t = (i: number) => Math.round((i / fps) * 1e6) / 1e6;
  order.forEach((a, k) => {
    out.push({ pts: t(a), key: a % gop === 0 });
    for (let b = (k > 0 ? order[k - 1] : a)! + 1; b < a; b++) out.push({ pts: t(b), key: false });
  });
  return out;
}

describe('The free clip', function () {
  this.timeout(scaled(60_000));

  describe('window and plan (pure)', () => {
    it('centred 10-second window, the whole video when shorter; the muxer of the container', () => {
      assert.deepEqual(clipWindow(60_000), { startMs: 25_000, durationMs: 10_000 });
      assert.deepEqual(clipWindow(12_012), { startMs: 1006, durationMs: 10_000 });
      assert.deepEqual(clipWindow(10_000), { startMs: 0, durationMs: 10_000 });
      assert.deepEqual(clipWindow(4_000), { startMs: 0, durationMs: 4_000 });
      assert.deepEqual(clipWindow(0), { startMs: 0, durationMs: 0 });
      assert.deepEqual(clipContainer('matroska'), { format: 'matroska', extension: '.mkv' });
      assert.deepEqual(clipContainer('mpegts'), { format: 'mpegts', extension: '.ts' });
      assert.equal(clipContainer('nonsense'), undefined);
    });

    it('a clean cut: the frames before it are exactly the packets before it in decode order', () => {
      const p = packets(20, 10, 10, 3);
      assert.deepEqual(
        p.slice(0, 11).map((x) => Math.round(x.pts * 10)),
        [0, 3, 1, 2, 6, 4, 5, 9, 7, 8, 10],
      );
      assert.equal(cleanCutAt(p, 0.4), true);
      assert.equal(cleanCutAt(p, 0.3), false, 'P3 is decoded before B1 and B2');
      assert.equal(cleanCutAt(p, 1.0), true);
      assert.equal(cleanCutAt(packets(30, 10, 12, 3, true), 1.2), false, 'an open GOP refers across its keyframe');
    });

    it('long GOP with B-frames: re-encodes the head up to the keyframe and the tail after the last clean cut, copies the rest', () => {
      // 14 s at 10 fps, keyframes at 0 and 10 s, window 2..12 s.
      const plan = planClipCut(packets(140, 10, 100, 3), { startMs: 2000, durationMs: 10_000 }, { splice: true });
      assert.equal(plan.frames, 100);
      assert.ok(Math.abs(plan.frameSeconds - 0.1) < 1e-9);
      assert.deepEqual(
        plan.segments.map((s) => [s.mode, Number(s.start.toFixed(3)), s.frames]),
        [
          ['encode', 2, 80],
          ['copy', 10, 19],
          ['encode', 11.9, 1],
        ],
      );
    });

    it('copies alone when the window starts on a keyframe and ends on a clean cut; every frame is a keyframe for intra codecs', () => {
      const aligned = planClipCut(packets(300, 25, 25, 3), { startMs: 2000, durationMs: 10_000 }, { splice: true });
      assert.deepEqual(aligned.segments, [{ mode: 'copy', start: 2, frames: 250 }]);
      const intra = Array.from({ length: 140 }, (_, i) => ({ pts: i / 10, key: true }));
      const plan = planClipCut(intra, { startMs: 2000, durationMs: 10_000 }, { splice: false });
      assert.deepEqual(
        plan.segments.map((s) => [s.mode, s.frames]),
        [['copy', 100]],
      );
      const whole = planClipCut(packets(40, 10, 100, 3), { startMs: 0, durationMs: 4000 }, { splice: true });
      assert.deepEqual(whole.segments, [{ mode: 'copy', start: 0, frames: 40 }], 'a short video is copied whole');
    });

    it('re-encodes the whole window when no keyframe in it opens a closed GOP, or when the codec cannot be spliced', () => {
      const open = planClipCut(packets(300, 10, 102, 3, true), { startMs: 5000, durationMs: 10_000 }, { splice: true });
      assert.deepEqual(
        open.segments.map((s) => [s.mode, s.frames]),
        [['encode', 100]],
      );
      const noSplice = planClipCut(packets(140, 10, 100, 3), { startMs: 2000, durationMs: 10_000 }, { splice: false });
      assert.deepEqual(
        noSplice.segments.map((s) => [s.mode, s.frames]),
        [['encode', 100]],
      );
    });

    it("ffmpeg arguments: exact frames per segment, the final mux takes the window's audio (PCM cut to the sample) and cuts it to the clip", () => {
      const enc = clipEncoderArgs({ codec: 'h264', pixFmt: 'yuv420p', fieldOrder: 'tt', colorPrimaries: 'bt709' }, new Set(['libx264']));
      assert.equal(enc.codec, 'h264');
      assert.deepEqual(enc.args, ['-c:v', 'libx264', '-preset', 'fast', '-crf', '16', '-flags', '+ildct+ilme', '-top', '1', '-pix_fmt', 'yuv420p', '-color_primaries', 'bt709']);
      assert.equal(clipEncoderArgs({ codec: 'theora' }, new Set(['libx264'])).codec, 'h264', 'no encoder for the codec: H.264');
      const copy = { mode: 'copy' as const, start: 10, frames: 18 };
      const p = packets(140, 10, 100, 3).map((x) => ({ ...x, dts: x.pts - 0.2 }));
      const round = (x: { input: number; output?: number }) => [x.input.toFixed(3), x.output?.toFixed(3)];
      // A copy: from a frame before its keyframe's decode time (9.8 s), dropping what is decoded before it.
      assert.deepEqual(round(segmentSeek(p, copy, 0.1, true)), ['9.700', '0.050']);
      assert.deepEqual(round(segmentSeek(p, copy, 0.1, false)), ['9.700', '0.050']);
      assert.deepEqual(round(segmentSeek(p, { mode: 'encode', start: 2, frames: 80 }, 0.1, true)), ['1.950', undefined], 'indexed: half a frame early, decoding drops the rest');
      assert.deepEqual(round(segmentSeek(p, { mode: 'encode', start: 11.9, frames: 1 }, 0.1, false)), ['9.799', '2.051'], "no index: from before the keyframe's decode time");
      assert.deepEqual(clipSegmentArgs('/m/in.mp4', '/w/s1.ts', copy, { input: 9.7, output: 0.05 }, { encode: enc.args, format: 'mpegts' }), [
        '-y',
        '-ss',
        '9.700000',
        '-i',
        '/m/in.mp4',
        '-map',
        '0:v:0',
        '-frames:v',
        '18',
        '-ss',
        '0.050000',
        '-c:v',
        'copy',
        '-muxdelay',
        '0',
        '-muxpreload',
        '0',
        '-an',
        '-sn',
        '-dn',
        '-f',
        'mpegts',
        '/w/s1.ts',
      ]);
      assert.deepEqual(clipSegmentArgs('/m/in.ts', '/w/s0.ts', { mode: 'encode', start: 2, frames: 80 }, { input: 0.5, output: 1.5 }, { encode: ['-c:v', 'mpeg2video'], format: 'mpegts' }), [
        '-y',
        '-ss',
        '0.500000',
        '-i',
        '/m/in.ts',
        '-map',
        '0:v:0',
        '-frames:v',
        '80',
        '-vf',
        'trim=start=1.500000,setpts=PTS-STARTPTS',
        '-c:v',
        'mpeg2video',
        '-fps_mode',
        'passthrough',
        '-muxdelay',
        '0',
        '-muxpreload',
        '0',
        '-an',
        '-sn',
        '-dn',
        '-f',
        'mpegts',
        '/w/s0.ts',
      ]);
      const plan = { frameSeconds: 0.1, start: 2, frames: 100, durationS: 10, segments: [] };
      assert.deepEqual(clipMuxArgs('/o/clip.mov', { concatList: '/w/list.txt', master: '/m/in.mov', plan, audioCodecs: ['aac', 'pcm_s24le'], format: 'mov', videoTag: 'avc3' }), [
        '-y',
        '-f',
        'concat',
        '-safe',
        '0',
        '-i',
        '/w/list.txt',
        '-ss',
        '2.000000',
        '-i',
        '/m/in.mov',
        '-map',
        '0:v:0',
        '-map',
        '1:a?',
        '-c:v',
        'copy',
        '-tag:v',
        'avc3',
        // The MOV muxer keeps an H.264 entry only below the default strictness (avc-intra-sizes.test.ts).
        '-strict',
        'unofficial',
        '-c:a',
        'copy',
        '-c:a:1',
        'pcm_s24le',
        '-copypriorss:a',
        '0',
        '-t',
        '10.000000',
        '-map_metadata',
        '1',
        '-sn',
        '-dn',
        '-f',
        'mov',
        '/o/clip.mov',
      ]);
    });
  });

  describe('cut with ffmpeg from long-GOP masters (160x90, 14 s)', () => {
    const cases: Array<{ name: FixtureName; codec: string; container: string; method: string; audio: boolean; fieldOrder?: string }> = [
      { name: 'h264LongGopMp4', codec: 'h264', container: 'mp4', method: 'smart', audio: true },
      { name: 'h264LongGopTs', codec: 'h264', container: 'mpegts', method: 'smart', audio: true },
      { name: 'hevcLongGopMkv', codec: 'hevc', container: 'matroska', method: 'smart', audio: false },
      { name: 'proresLongMov', codec: 'prores', container: 'mov', method: 'copy', audio: true },
      { name: 'mpeg2InterlacedLongGopTs', codec: 'mpeg2', container: 'mpegts', method: 'encode', audio: true, fieldOrder: 'tt' },
    ];
    for (const c of cases) {
      it(`${c.codec} in ${c.container}: 10 s within one frame, ${c.method}, codec and container kept, decodes cleanly`, async () => {
        const b = await bins();
        const input = await fixture(c.name);
        const source = await probeMedia(b, input);
        const window = clipWindow(source.durationMs);
        const out = path.join(outDir(), `clip${clipContainer(source.metadata.containerName)!.extension}`);
        const clip = await cutClip(b, input, out, { ...window, container: source.metadata.containerName });
        assert.equal(clip.path, out);
        assert.equal(clip.fellBack, false);
        assert.equal(clip.method, c.method);
        const p = await probeMedia(b, out);
        assert.equal(p.metadata.codecName, c.codec);
        assert.equal(p.metadata.containerName, c.container);
        const { frames, fps, fieldOrder } = await decodedVideoFrames(out);
        const seconds = frames / fps;
        assert.ok(Math.abs(seconds - 10) <= 1 / fps + 1e-9, `${frames} frames at ${fps} fps = ${seconds} s`);
        assert.equal(clip.frames, frames);
        assert.equal(await decodeErrors(out), '');
        // The right frames: each one close to the master's frame at the same place in the window.
        const psnr = await framePsnr(out, input, Math.round((window.startMs / 1000) * fps));
        assert.equal(psnr.length, frames);
        assert.ok(Math.min(...psnr) > 35, `lowest PSNR against the master ${Math.min(...psnr)} dB (frame ${psnr.indexOf(Math.min(...psnr))})`);
        if (c.fieldOrder) assert.equal(fieldOrder, c.fieldOrder);
        const audio = await audioSpan(out);
        assert.equal(audio !== undefined, c.audio);
        if (audio !== undefined) assert.ok(Math.abs(audio - 10) < 0.05, `audio lasts ${audio} s`);
      });
    }

    /** Presentation times of a file's decoded video frames, seconds from the file's start. */
    const frameTimes = async (file: string): Promise<number[]> => {
      const { ffprobe } = await bins();
      const { stdout } = await run(ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'frame=best_effort_timestamp_time', '-of', 'json', file]);
      return (JSON.parse(stdout).frames as { best_effort_timestamp_time: string }[]).map((f) => Number(f.best_effort_timestamp_time));
    };

    // Phone-style variable frame rate: a 30 frames/s camera that drops every 7th frame (base rate
    // 30, average 25.7), long GOP with B-frames, AAC. The clip must hold the window's 10 s of
    // content on the master's own times, not frames x the median frame step.
    for (const seconds of [20, 10]) {
      it(`a variable-frame-rate master of ${seconds} s: the clip holds the window's frames on their own times (10 s by time, increasing timestamps, audio as long)`, async () => {
        const b = await bins();
        const input = path.join(outDir(), `vfr-${seconds}.mp4`);
        await run(b.ffmpeg, [
          ...[
            '-hide_banner',
            '-loglevel',
            'error',
            '-y',
            '-f',
            'lavfi',
            '-i',
            `testsrc2=size=160x90:rate=30:duration=${seconds}`,
            '-f',
            'lavfi',
            '-i',
            `sine=frequency=440:sample_rate=48000:duration=${seconds}`,
          ],
          ...['-vf', "select='not(eq(mod(n\\,7)\\,3))'", '-fps_mode', 'vfr', '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '60', '-bf', '2', '-c:a', 'aac', '-shortest', input],
        ]);
        const source = await probeMedia(b, input);
        assert.equal(source.frameRateMode, 'VARIABLE');
        const window = clipWindow(source.durationMs);
        const out = path.join(outDir(), 'clip.mp4');
        const clip = await cutClip(b, input, out, { ...window, container: 'mp4' });
        const masterTimes = await frameTimes(input);
        const from = masterTimes.find((t) => t >= window.startMs / 1000 - 1 / 60)!;
        const expected = masterTimes.filter((t) => t >= from && t < from + window.durationMs / 1000 - 1 / 60);
        const times = await frameTimes(out);
        assert.equal(times.length, expected.length, `frames: ${times.length}, the master shows ${expected.length} in the window`);
        assert.equal(clip.frames, times.length);
        for (let i = 1; i < times.length; i++) assert.ok(times[i]! > times[i - 1]!, `timestamps increase at frame ${i}: ${times[i - 1]} then ${times[i]}`);
        // Each frame where it was in the master, relative to the clip's start.
        for (let i = 0; i < times.length; i++)
          assert.ok(Math.abs(times[i]! - times[0]! - (expected[i]! - from)) < 0.002, `frame ${i} at ${times[i]! - times[0]!} s, in the master at ${expected[i]! - from} s`);
        const { stdout } = await run(b.ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=duration', '-of', 'csv=p=0', out]);
        const span = Number(stdout.trim());
        assert.ok(Math.abs(span - window.durationMs / 1000) <= 1 / 30 + 0.002, `the clip lasts ${span} s`);
        const audio = (await audioSpan(out))!;
        assert.ok(Math.abs(audio - window.durationMs / 1000) < 0.05, `audio lasts ${audio} s`);
      });
    }

    it('a short master is copied whole: ProRes stays ProRes in QuickTime', async () => {
      const b = await bins();
      const out = path.join(outDir(), 'clip.mov');
      const clip = await cutClip(b, await fixture('proresMov'), out, { ...clipWindow(3003), container: 'mov' });
      assert.equal(clip.method, 'copy');
      const p = await probeMedia(b, out);
      assert.equal(p.metadata.codecName, 'prores');
      assert.equal(p.metadata.pixelFormatName, 'yuv422p10le');
      assert.equal(p.metadata.totalFrames, 72);
    });

    it('when the muxer of the same name refuses the streams, Matroska with a .mkv name, and says so', async () => {
      const b = await bins();
      // ffmpeg's MXF muxer takes no AAC audio.
      const out = path.join(outDir(), 'clip.mxf');
      const clip = await cutClip(b, await fixture('h264Mp4'), out, { startMs: 1000, durationMs: 2000, container: 'mxf' });
      assert.deepEqual([clip.path, clip.container, clip.fellBack], [out.replace(/\.mxf$/, '.mkv'), 'matroska', true]);
      const p = await probeMedia(b, clip.path);
      assert.equal(p.metadata.containerName, 'matroska');
      assert.equal(p.metadata.codecName, 'h264');
      assert.equal(p.hasAudio, true);
      const { frames } = await decodedVideoFrames(clip.path);
      assert.ok(Math.abs(frames - 60) <= 1, `${frames} frames`);
    });
  });
});
