/**
 * Sources shaped like what users send, processed whole and split, judged from the output file by
 * the output checker (src/media/output-check.ts): the planned frame count, every output frame the
 * right source frame (none dropped, none repeated), increasing timestamps, audio in step with the
 * picture (where it starts and ends, and where its content is: the sound is pink noise, which the
 * checker places to the sample; split outputs had it 21.4 ms late before the audio pass kept the
 * AAC priming out), and the file's scanning, pixel format, frame rate and size as `appliedOptions` says.
 *
 * The corpus (tiny: 160x120, 3 s): H.264 with B-frames and a long GOP in MP4, 29.97 and 23.976
 * frames/s, broadcast-style MPEG-TS (timestamps from 1.4 s), a phone-style variable frame rate,
 * audio starting 0.5 s after the video and video starting 0.52 s after the audio (Matroska keeps
 * both), open-GOP HEVC, interlaced ProRes (top field first) with PCM, H.264 in MXF with PCM.
 * Each is processed with three sets of options (H.264 in MP4; ProRes 422 in MOV; a range of
 * 0.5..2.5 s to H.264), unsplit and split into 1 s segments; a shape that cannot be split exactly
 * must be one job with the note saying why. Results are printed as a table.
 */
import { strict as assert } from 'node:assert';
import path from 'node:path';
import { checkOutput, probeMedia, type MediaBinaries, type OutputCheckReport, type ProbeResult } from '../../src/media';
import { buildProcessingPlan, estimateProcessing, runProcessing, type ProcessingOptions, type ProcessingPlan, type SegmentedProcessingPlan } from '../../src/processing-planner';
import { encodeCached } from '../helpers/media-cache';
import { bins } from '../media/fixtures';
import { readCachingBins } from './cached-reads';
import { capabilities, pinkNoise, processSplit, workDir } from './engine-fixtures';
import { scaled } from '../helpers/timeouts';

const L = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'];
const video = (rate: string, seconds = 3) => ['-f', 'lavfi', '-i', `testsrc2=size=160x120:rate=${rate}:duration=${seconds}`];
const sound = (seconds = 3, delay?: number) => [...(delay ? ['-itsoffset', String(delay)] : []), ...pinkNoise(seconds)];
const X264 = ['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p'];

interface CorpusSource {
  name: string;
  file: string;
  args: string[];
  /** Why it is one job when split (a part of the note), or undefined when it is split. */
  oneJob?: RegExp;
  /** The frame rate changes on the way (a variable rate made constant): frames may repeat; only their order is checked. */
  timingChanged?: string;
}

const CORPUS: CorpusSource[] = [
  { name: 'H.264 long GOP with B-frames + AAC in MP4, 25 frames/s', file: 'rw-bframes.mp4', args: [...video('25'), ...sound(), ...X264, '-bf', '3', '-g', '75', '-c:a', 'aac', '-shortest'] },
  { name: 'H.264 + AAC in MP4, 29.97 frames/s', file: 'rw-ntsc.mp4', args: [...video('30000/1001'), ...sound(), ...X264, '-c:a', 'aac', '-shortest'] },
  { name: 'H.264 + AAC in MOV, 23.976 frames/s', file: 'rw-film.mov', args: [...video('24000/1001'), ...sound(), ...X264, '-c:a', 'aac', '-shortest'] },
  {
    name: 'broadcast MPEG-TS (H.264 with B-frames + AAC, timestamps from 1.4 s)',
    file: 'rw-broadcast.ts',
    args: [...video('25'), ...sound(), ...X264, '-bf', '2', '-g', '50', '-c:a', 'aac', '-shortest', '-f', 'mpegts'],
    oneJob: /container \(mpegts\)/,
  },
  {
    name: 'phone-style variable frame rate (every 7th frame dropped) + AAC in MP4',
    file: 'rw-vfr.mp4',
    args: [...video('30'), ...sound(), '-vf', "select='not(eq(mod(n\\,7)\\,3))'", '-fps_mode', 'vfr', ...X264, '-c:a', 'aac', '-shortest'],
    oneJob: /variable frame rate/,
  },
  {
    name: 'audio starting 0.5 s after the video (Matroska)',
    file: 'rw-audio-late.mkv',
    args: [...video('25'), ...sound(2.5, 0.5), '-map', '0:v', '-map', '1:a', ...X264, '-c:a', 'aac'],
    oneJob: /audio starts 4[789]\d ms after its video/,
  },
  {
    name: 'video starting 0.52 s after the audio (Matroska)',
    file: 'rw-video-late.mkv',
    args: ['-f', 'lavfi', '-itsoffset', '0.52', '-i', 'testsrc2=size=160x120:rate=25:duration=2.48', ...sound(), '-map', '0:v', '-map', '1:a', ...X264, '-c:a', 'aac'],
    oneJob: /audio starts 5\d\d ms before its video/,
  },
  {
    name: 'open-GOP HEVC + AAC in MP4 (x265 defaults)',
    file: 'rw-hevc.mp4',
    args: [
      ...video('25'),
      ...sound(),
      '-c:v',
      'libx265',
      '-preset',
      'ultrafast',
      '-x265-params',
      'log-level=error:keyint=25:open-gop=1',
      '-pix_fmt',
      'yuv420p',
      '-tag:v',
      'hvc1',
      '-c:a',
      'aac',
      '-shortest',
    ],
  },
  {
    name: 'interlaced ProRes 422 (top field first) + PCM in MOV',
    file: 'rw-prores-tff.mov',
    args: [...video('50'), ...sound(), '-vf', 'interlace=scan=tff,setfield=tff', '-c:v', 'prores_ks', '-profile:v', '2', '-flags', '+ildct', '-c:a', 'pcm_s16le', '-shortest'],
  },
  {
    name: 'DNxHR SQ + PCM in MOV (256x144: the smallest DNxHR frame is 256x120)',
    file: 'rw-dnxhr.mov',
    args: ['-f', 'lavfi', '-i', 'testsrc2=size=256x144:rate=25:duration=3', ...sound(), '-c:v', 'dnxhd', '-profile:v', 'dnxhr_sq', '-pix_fmt', 'yuv422p', '-c:a', 'pcm_s16le', '-shortest'],
  },
  {
    name: 'DNxHR SQ + PCM in MXF',
    file: 'rw-dnxhr.mxf',
    args: [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=256x144:rate=25:duration=3',
      ...sound(),
      '-c:v',
      'dnxhd',
      '-profile:v',
      'dnxhr_sq',
      '-pix_fmt',
      'yuv422p',
      '-c:a',
      'pcm_s16le',
      '-shortest',
      '-f',
      'mxf',
    ],
    oneJob: /container \(mxf\)/,
  },
  {
    name: 'interlaced ProRes 422 (bottom field first) + PCM in MOV',
    file: 'rw-prores-bff.mov',
    args: [...video('50'), ...sound(), '-vf', 'interlace=scan=bff,setfield=bff', '-c:v', 'prores_ks', '-profile:v', '2', '-flags', '+ildct', '-c:a', 'pcm_s16le', '-shortest'],
  },
  {
    name: 'audio starting 0.45 s after the video through an MP4 edit list',
    file: 'rw-editlist-audio-late.mp4',
    args: [...video('25'), ...sound(2.5, 0.45), '-map', '0:v', '-map', '1:a', ...X264, '-c:a', 'aac'],
    oneJob: /audio starts 4\d\d ms after its video/,
  },
  {
    name: 'H.264 + PCM in MXF',
    file: 'rw-h264.mxf',
    args: [...video('25'), ...sound(), ...X264, '-bf', '0', '-c:a', 'pcm_s16le', '-shortest', '-f', 'mxf'],
    oneJob: /container \(mxf\)/,
  },
];

const OPTIONS: { name: string; options: ProcessingOptions; range?: { startMs: number; endMs: number } }[] = [
  { name: 'H.264 in MP4', options: { container: 'MP4', encodingConfiguration: { codec: 'H264' } } },
  { name: 'ProRes 422 in MOV', options: { container: 'MOV', encodingProfile: 'PRORES_422_STANDARD' } },
  { name: '0.5..2.5 s to H.264 in MP4', options: { container: 'MP4', encodingConfiguration: { codec: 'H264' } }, range: { startMs: 500, endMs: 2500 } },
];

const made = new Map<string, Promise<{ file: string; probe: ProbeResult }>>();
function corpusFile(s: CorpusSource) {
  let p = made.get(s.file);
  if (!p) {
    p = (async () => {
      const b = await bins();
      const file = path.join(workDir, s.file);
      await encodeCached(b.ffmpeg, [...L, ...s.args], file);
      return { file, probe: await probeMedia(b, file, { detectScanning: true }) };
    })();
    made.set(s.file, p);
  }
  return p;
}

let checkerBins: Promise<MediaBinaries> | undefined;

async function judge(source: { file: string; probe: ProbeResult }, plan: ProcessingPlan, output: string, timingChanged: boolean): Promise<OutputCheckReport> {
  const a = plan.applied.output;
  // A variable frame rate is kept: the frames of a range are as many as fall in it, which the
  // plan can only estimate from the average rate (known gap: the charge uses that estimate).
  const variableRate = source.probe.frameRateMode === 'VARIABLE';
  // Each source is read once however many outputs are judged against it (./cached-reads.ts).
  checkerBins ??= bins().then((b) =>
    readCachingBins(
      b,
      CORPUS.map((c) => path.join(workDir, c.file)),
    ),
  );
  const report = await checkOutput(await checkerBins, source.file, output, {
    ...(variableRate ? { variableRate } : { frames: plan.output.frames }),
    startS: ((source.probe.fileStartMs ?? 0) + a.startPositionMilliseconds) / 1000,
    timingChanged,
    scanning: a.scanning,
    pixelFormat: a.pixelFormat.name,
    frameRate: a.frameRate.rational,
    width: a.width,
    height: a.height,
  });
  // What is charged (gigapixels: width x height x frames, src/processing-planner/estimate.ts) is
  // what the file holds, counted from the file (the known gap above aside).
  if (!variableRate) {
    const billed = estimateProcessing(plan, source.probe).gigapixels;
    const held = Math.round(((a.width * a.height * report.outputFrames) / 1e9) * 1e6) / 1e6;
    if (billed !== held) report.problems.push(`charged for ${billed} gigapixels, the file holds ${held} (${report.outputFrames} frames)`);
  }
  return report;
}

describe('Real-world-shaped sources, whole and split, judged by the output checker', function () {
  this.timeout(scaled(600_000));
  const table: string[] = [];
  after(() => {
    if (table.length) console.log(`      ${table.join('\n      ')}`);
  });

  for (const s of CORPUS) {
    describe(s.name, () => {
      for (const o of OPTIONS) {
        it(`${o.name}: whole and split (${s.oneJob ? 'one job, noted' : '1 s segments'}) pass the checker`, async () => {
          const src = await corpusFile(s);
          const range = o.range ?? { startMs: 0, endMs: src.probe.durationMs };
          const env = { capabilities: await capabilities(), encoderPreset: 'veryfast' as const };
          const whole = buildProcessingPlan(o.options, src.probe, range, env);
          const split = buildProcessingPlan(o.options, src.probe, range, { ...env, segmentSeconds: 1 });
          const base = path.join(workDir, `${path.parse(s.file).name}-${OPTIONS.indexOf(o)}`);
          const wholeFile = `${base}-whole${whole.fileExtension}`;
          await runProcessing(await bins(), src.file, wholeFile, whole, { durationMs: whole.output.durationMs, timeoutMs: scaled(120_000) });
          const verdicts: [string, OutputCheckReport][] = [['whole', await judge(src, whole, wholeFile, !!s.timingChanged)]];
          if (s.oneJob) {
            assert.equal(split.segmented, undefined, 'one job');
            assert.match(split.applied.notes.find((n) => n.appliedAs === 'one job')?.note ?? '', s.oneJob);
          } else {
            assert.ok(split.segmented, `split: ${JSON.stringify(split.applied.notes)}`);
            const splitFile = `${base}-split${split.fileExtension}`;
            await processSplit(src.file, split as SegmentedProcessingPlan, splitFile);
            verdicts.push([`split in ${split.segmented.segments.length}`, await judge(src, split, splitFile, !!s.timingChanged)]);
          }
          for (const [how, r] of verdicts) {
            table.push(
              `${s.file} | ${o.name} | ${how}: ${r.outputFrames} frames, ${r.dropped.length} dropped, ${r.repeated.length} repeated, audio ${r.audioOffset ? `${r.audioOffset.output.toFixed(3)}/${r.audioOffset.expected.toFixed(3)} s` : '-'}, content ${r.audioContentLate !== undefined ? `${(r.audioContentLate * 1000).toFixed(1)} ms late` : '-'}: ${r.problems.length ? r.problems.join('; ') : 'pass'}`,
            );
          }
          for (const [how, r] of verdicts) assert.deepEqual(r.problems, [], `${how}: ${s.timingChanged ?? ''}`);
        });
      }
    });
  }
});
