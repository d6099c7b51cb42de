import { strict as assert } from 'node:assert';
import { mkdtempSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import type { components } from '../../generated/api';
import { MediaAbortedError, assessQuality, makeFullFrames, makeThumbnails, makeThumbnailsAndFrames, makeWebVideo, type MediaProgress, type VideoQualityAssessment } from '../../src/media';
import { multiStillsArgs, qualityFromMetadata, qualityLabel, qualityScore, stillPositions, stillsArgs, webVideoArgs } from '../../src/media/recipes';
import { bins, ffprobeStreams, fixture, fixtureDir, mp4TopLevelBoxes, recordKills } from './fixtures';
import { scaled } from '../helpers/timeouts';

// Compile-time: the assessment is the contract's VideoQualityAssessment.
const toContract = (q: VideoQualityAssessment): components['schemas']['VideoQualityAssessment'] => q;
void toContract;

const contract = JSON.parse(readFileSync('generated/openapi.json', 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addSchema({ $id: 'contract.json', components: contract.components });
const validateQuality = ajv.compile({ $ref: 'contract.json#/components/schemas/VideoQualityAssessment' });

let n = 0;
const outDir = () => mkdtempSync(path.join(fixtureDir, `out-${++n}-`));
const isJpeg = (file: string) =>
  readFileSync(file)
    .subarray(0, 3)
    .equals(Buffer.from([0xff, 0xd8, 0xff]));
const isPng = (file: string) =>
  readFileSync(file)
    .subarray(0, 8)
    .equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
const videoOf = async (file: string) => (await ffprobeStreams(file)).streams.find((s) => s.codec_type === 'video')!;

describe('Media recipes', function () {
  this.timeout(scaled(30_000));

  describe('argument builders', () => {
    it('still positions are evenly spaced, away from both ends', () => {
      assert.deepEqual(stillPositions(60_000, 5), [10_000, 20_000, 30_000, 40_000, 50_000]);
      assert.deepEqual(stillPositions(3000, 2), [1000, 2000]);
      assert.deepEqual(stillPositions(0, 5), [0]);
      assert.deepEqual(stillPositions(undefined, 5), [0]);
    });

    it('still images: one process, one fast-seeked input per position', () => {
      const args = stillsArgs(
        '/v/in.mov',
        [
          { positionMs: 0, path: '/o/a.jpg' },
          { positionMs: 1500, path: '/o/b.jpg' },
        ],
        'scale=320:-2',
        ['-q:v', '3'],
      );
      assert.deepEqual(args, [
        '-y',
        '-i',
        '/v/in.mov',
        '-ss',
        '1.500',
        '-i',
        '/v/in.mov',
        '-map',
        '0:v:0',
        '-frames:v',
        '1',
        '-vf',
        'scale=320:-2',
        '-q:v',
        '3',
        '-f',
        'image2',
        '-update',
        '1',
        '/o/a.jpg',
        '-map',
        '1:v:0',
        '-frames:v',
        '1',
        '-vf',
        'scale=320:-2',
        '-q:v',
        '3',
        '-f',
        'image2',
        '-update',
        '1',
        '/o/b.jpg',
      ]);
      assert.ok(stillsArgs('-odd.mp4', [{ positionMs: 0, path: 'x.jpg' }], 'null', []).includes('./-odd.mp4'));
    });

    it('thumbnails and frames together: each position decoded once, split into both images', () => {
      const args = multiStillsArgs('/v/in.mov', [
        {
          positionMs: 0,
          outputs: [
            { path: '/o/t1.jpg', filter: 'scale=320:-2', encode: ['-q:v', '3'] },
            { path: '/o/f1.jpg', filter: 'null', encode: ['-q:v', '2'] },
          ],
        },
        {
          positionMs: 2000,
          outputs: [
            { path: '/o/t2.jpg', filter: 'scale=320:-2', encode: ['-q:v', '3'] },
            { path: '/o/f2.jpg', filter: 'null', encode: ['-q:v', '2'] },
          ],
        },
      ]);
      assert.deepEqual(args, [
        '-y',
        '-i',
        '/v/in.mov',
        '-ss',
        '2.000',
        '-i',
        '/v/in.mov',
        '-filter_complex',
        '[0:v:0]split=2[p0k0][p0k1];[p0k0]scale=320:-2[o0k0];[p0k1]null[o0k1];[1:v:0]split=2[p1k0][p1k1];[p1k0]scale=320:-2[o1k0];[p1k1]null[o1k1]',
        '-map',
        '[o0k0]',
        '-frames:v',
        '1',
        '-q:v',
        '3',
        '-f',
        'image2',
        '-update',
        '1',
        '/o/t1.jpg',
        '-map',
        '[o0k1]',
        '-frames:v',
        '1',
        '-q:v',
        '2',
        '-f',
        'image2',
        '-update',
        '1',
        '/o/f1.jpg',
        '-map',
        '[o1k0]',
        '-frames:v',
        '1',
        '-q:v',
        '3',
        '-f',
        'image2',
        '-update',
        '1',
        '/o/t2.jpg',
        '-map',
        '[o1k1]',
        '-frames:v',
        '1',
        '-q:v',
        '2',
        '-f',
        'image2',
        '-update',
        '1',
        '/o/f2.jpg',
      ]);
    });

    it('web video: H.264 yuv420p + AAC, faststart, audio mapped only when there is some', () => {
      const withAudio = webVideoArgs('/v/in.mxf', '/o/web.mp4', { hasAudio: true });
      for (const a of ['libx264', 'yuv420p', 'aac', '+faststart', '0:a:0']) assert.ok(withAudio.includes(a), a);
      const silent = webVideoArgs('/v/in.mxf', '/o/web.mp4', { hasAudio: false });
      assert.ok(silent.includes('-an') && !silent.includes('aac'));
      assert.ok(webVideoArgs('/v/in.mxf', '/o/web.mp4').includes('0:a:0?'));
    });

    it('quality scores follow the documented anchors', () => {
      assert.equal(qualityScore('blur', 4), 5);
      assert.equal(qualityScore('blur', 9), 2.5);
      assert.equal(qualityScore('blur', 20), 0);
      assert.equal(qualityScore('blockiness', 1), 5);
      assert.equal(qualityScore('blockiness', 30), 0);
      assert.ok(qualityScore('blockiness', 5) > 2 && qualityScore('blockiness', 5) < 3.5);
      assert.equal(qualityScore('luma_range', 70), 2.5);
      assert.equal(qualityLabel('blur', 5), 'excellent');
      assert.equal(qualityLabel('blur', 1.6), 'poor');
      assert.equal(qualityLabel('blur', 0.2), 'untenable');
      assert.equal(qualityLabel('temporal_information', 0), 'still');
      const q = qualityFromMetadata(
        [
          'frame:0 pts:0',
          'lavfi.blur=4',
          'lavfi.siti.ti=0',
          'lavfi.siti.si=45',
          'lavfi.signalstats.YLOW=16',
          'lavfi.signalstats.YHIGH=136',
          'lavfi.signalstats.YMAX=200',
          'lavfi.signalstats.SATAVG=30',
          'vidmill.segment=0',
          'frame:1 pts:1',
          'lavfi.blur=14',
          'lavfi.siti.ti=10',
          'lavfi.siti.si=5',
          'lavfi.signalstats.YLOW=16',
          'lavfi.signalstats.YHIGH=36',
          'lavfi.signalstats.YMAX=200',
          'lavfi.signalstats.SATAVG=0',
          'vidmill.segment=0',
          'frame:2 pts:2',
          'lavfi.siti.ti=0',
          'vidmill.segment=1',
        ].join('\n'),
      );
      const by = Object.fromEntries(q.metrics.map((m) => [m.name, m]));
      assert.equal(by.blur!.sampleMean, 9);
      assert.equal(by.temporal_information!.sampleMean, 10, 'the first frame of each segment has no temporal information');
      assert.equal(by.luma_range!.sampleMean, 70);
      assert.equal(by.blockiness, undefined);
      // blur 2.5 (w 2), si 2.5 (w 1), luma 2.5 (w 1), saturation 2.5 (w 0.5); ti has no weight
      assert.equal(q.overallSubjectiveScore, 2.5);
    });
  });

  describe('on real files', () => {
    it('thumbnails: JPEG, 320 wide, evenly spaced, sizes read back by ffprobe', async () => {
      const b = await bins();
      const input = await fixture('h264Mp4');
      const progress: MediaProgress[] = [];
      const thumbs = await makeThumbnails(b, input, outDir(), { durationMs: 12_012, onProgress: (p) => progress.push(p) });
      assert.equal(thumbs.length, 5);
      assert.deepEqual(
        thumbs.map((t) => t.positionMs),
        stillPositions(12_012, 5),
      );
      for (const t of thumbs) {
        assert.ok(isJpeg(t.path), t.path);
        assert.match(path.basename(t.path), /^thumbnail-0[1-5]\.jpg$/);
        assert.deepEqual([t.width, t.height], [320, 240]);
        const v = await videoOf(t.path);
        assert.deepEqual([v.width, v.height], [320, 240]);
      }
      assert.equal(progress.at(-1)?.percentage, 100);
    });

    it('thumbnails of anamorphic video have the display shape; count and width are honoured', async () => {
      const thumbs = await makeThumbnails(await bins(), await fixture('anamorphicMp4'), outDir(), { durationMs: 1000, count: 3, width: 480 });
      assert.equal(thumbs.length, 3);
      for (const t of thumbs) assert.deepEqual([t.width, t.height], [480, 270]);
    });

    it('full frames: full resolution JPEG by default, capped at 20; PNG on request with square pixels', async () => {
      const b = await bins();
      const frames = await makeFullFrames(b, await fixture('proresMov'), outDir(), { durationMs: 3003 });
      assert.equal(frames.length, 5);
      for (const f of frames) {
        assert.ok(isJpeg(f.path));
        assert.deepEqual([f.width, f.height], [320, 240]);
      }
      const many = await makeFullFrames(b, await fixture('h264Mp4'), outDir(), { durationMs: 12_012, count: 50 });
      assert.equal(many.length, 20);
      const png = await makeFullFrames(b, await fixture('anamorphicMp4'), outDir(), { durationMs: 1000, count: 1, format: 'png' });
      assert.ok(isPng(png[0]!.path));
      assert.deepEqual([png[0]!.width, png[0]!.height], [1920, 1080]);
    });

    it('thumbnails and full frames in one run: same files as the separate recipes', async () => {
      const dir = outDir();
      const { thumbnails, frames } = await makeThumbnailsAndFrames(await bins(), await fixture('anamorphicMp4'), dir, { durationMs: 1000, count: 3 });
      assert.deepEqual(
        thumbnails.map((t) => [path.basename(t.path), t.width, t.height]),
        [
          ['thumbnail-01.jpg', 320, 180],
          ['thumbnail-02.jpg', 320, 180],
          ['thumbnail-03.jpg', 320, 180],
        ],
      );
      assert.deepEqual(
        frames.map((f) => [path.basename(f.path), f.width, f.height]),
        [
          ['frame-01.jpg', 1920, 1080],
          ['frame-02.jpg', 1920, 1080],
          ['frame-03.jpg', 1920, 1080],
        ],
      );
      assert.deepEqual(
        frames.map((f) => f.positionMs),
        thumbnails.map((t) => t.positionMs),
      );
      for (const f of [...thumbnails, ...frames]) assert.ok(isJpeg(f.path));
    });

    it('web video: H.264 yuv420p + AAC in MP4, moov before mdat, progress to 100', async () => {
      const b = await bins();
      const input = await fixture('h264Mp4');
      const out = path.join(outDir(), 'web.mp4');
      const progress: MediaProgress[] = [];
      await makeWebVideo(b, input, out, { durationMs: 12_012, hasAudio: true, onProgress: (p) => progress.push(p) });
      const { streams, format } = await ffprobeStreams(out);
      const v = streams.find((s) => s.codec_type === 'video')!;
      const a = streams.find((s) => s.codec_type === 'audio')!;
      assert.equal(v.codec_name, 'h264');
      assert.equal(v.pix_fmt, 'yuv420p');
      assert.equal(v.profile, 'High');
      assert.deepEqual([v.width, v.height], [320, 240], 'never upscaled');
      assert.equal(a.codec_name, 'aac');
      assert.ok(Math.abs(Number(format.duration) - 12.012) < 0.1);
      const boxes = mp4TopLevelBoxes(out);
      assert.ok(boxes.indexOf('moov') >= 0 && boxes.indexOf('moov') < boxes.indexOf('mdat'), boxes.join(','));
      assert.equal(progress.at(-1)?.percentage, 100);
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.percentage >= progress[i - 1]!.percentage);
    });

    it('web video of anamorphic HD: 1280x720 square pixels, no audio track when the source has none', async () => {
      const out = path.join(outDir(), 'web.mp4');
      await makeWebVideo(await bins(), await fixture('anamorphicMp4'), out, { durationMs: 1000 });
      const { streams } = await ffprobeStreams(out);
      assert.equal(streams.length, 1);
      assert.deepEqual([streams[0]!.width, streams[0]!.height], [1280, 720]);
      assert.ok(['1:1', undefined].includes(streams[0]!.sample_aspect_ratio));
      assert.ok(streams[0]!.height <= 720);
    });

    it('web video of interlaced video is deinterlaced (progressive output)', async () => {
      const out = path.join(outDir(), 'web.mp4');
      await makeWebVideo(await bins(), await fixture('interlacedTs'), out, { durationMs: 3000 });
      const v = await videoOf(out);
      assert.equal(v.field_order, 'progressive');
      assert.deepEqual([v.width, v.height], [352, 288]);
    });

    it('an abort stops the web video at once', async () => {
      const controller = new AbortController();
      const kills = recordKills();
      let sentWithinAbort: string[] | undefined;
      try {
        // Aborted at its first progress report short of the end: in the middle of the encode.
        const onProgress = (p: MediaProgress) => {
          if (controller.signal.aborted || p.percentage >= 100) return;
          controller.abort(new Error('ingestion cancelled'));
          sentWithinAbort = [...kills.signals];
        };
        const err = await makeWebVideo(await bins(), await fixture('h264Mp4'), path.join(outDir(), 'web.mp4'), { signal: controller.signal, onProgress }).catch((e) => e);
        assert.ok(err instanceof MediaAbortedError, String(err));
        assert.match(err.message, /^ffmpeg aborted: ingestion cancelled/);
        assert.deepEqual(sentWithinAbort, ['SIGTERM'], 'SIGTERM is sent within abort()');
        assert.deepEqual(kills.signals, ['SIGTERM'], 'ffmpeg stopped on SIGTERM, without the SIGKILL of the grace time');
      } finally {
        kills.restore();
      }
    });

    it('quality assessment: contract shape, every metric measured, blur seen in a blurred copy; progress through the sampled frames', async () => {
      const b = await bins();
      const progress: MediaProgress[] = [];
      const sharp = await assessQuality(b, await fixture('sharpMp4'), { durationMs: 3000, fps: 25, onProgress: (p) => progress.push(p) });
      assert.equal(progress.at(-1)?.percentage, 100);
      assert.deepEqual(sharp, await assessQuality(b, await fixture('sharpMp4'), { durationMs: 3000 }), 'the same measurements through a file as through stdout');
      const blurred = await assessQuality(b, await fixture('blurredMp4'), { durationMs: 3000 });
      for (const q of [sharp, blurred]) {
        assert.ok(validateQuality(q), JSON.stringify(validateQuality.errors));
        assert.deepEqual(
          q.metrics.map((m) => m.name),
          ['blur', 'blockiness', 'spatial_information', 'luma_range', 'saturation', 'temporal_information'],
        );
        for (const m of q.metrics) {
          assert.ok(Number.isFinite(m.sampleMean));
          assert.ok(m.subjectiveScore >= 0 && m.subjectiveScore <= 5);
          assert.ok(m.subjectiveLabel.length > 0);
        }
        assert.ok(q.overallSubjectiveScore >= 0 && q.overallSubjectiveScore <= 5);
      }
      const metric = (q: VideoQualityAssessment, name: string) => q.metrics.find((m) => m.name === name)!;
      assert.ok(metric(blurred, 'blur').sampleMean > metric(sharp, 'blur').sampleMean + 2, `${metric(blurred, 'blur').sampleMean} vs ${metric(sharp, 'blur').sampleMean}`);
      assert.ok(metric(blurred, 'blur').subjectiveScore < metric(sharp, 'blur').subjectiveScore);
      assert.ok(metric(blurred, 'spatial_information').sampleMean < metric(sharp, 'spatial_information').sampleMean);
      assert.ok(blurred.overallSubjectiveScore < sharp.overallSubjectiveScore);
    });

    it('quality of 10-bit video is measured on the 8-bit scale', async () => {
      const q = await assessQuality(await bins(), await fixture('proresMov'), { durationMs: 3003 });
      const luma = q.metrics.find((m) => m.name === 'luma_range')!;
      assert.ok(luma.sampleMean > 100 && luma.sampleMean <= 255, String(luma.sampleMean));
    });
  });
});
