/**
 * `appliedOptions.output` is the truth of the output file (issue 24): every output the product
 * offers (each codec in each container that holds it, each encoding profile in each of its
 * containers), and the source shapes that changed what came out (full range, bottom field first,
 * 10-bit H.264 at an AVC-Intra size), encoded from tiny sources (a few frames) and judged by the
 * output checker against the applied output: scanning and field order, pixel format, bit depth,
 * codec profile, frame rate, size and the colour tags the file records.
 *
 * What it found and what changed: ProRes 4444 and 4444 XQ are read as 12-bit (reported 10-bit);
 * full-range 8-bit H.264/HEVC are read as yuvj formats; ProRes and FFV1 in MOV cannot record full
 * range, nor MPEG-2 (a full-range picture came out tagged limited or untagged; it is now converted
 * to limited, noted); DNxHD/DNxHR in MXF record SMPTE 170M as the BT.601 matrix and the BT.709 curve (the same
 * matrix and curve, ffprobe's bt470bg and bt709); FFV1 in MOV records no range (none is reported);
 * bottom-field-first H.264 in MXF is read as top field first (refused when asked for, shifted
 * when kept from the source); 10-bit H.264 of AVC-Intra sizes in MOV was tagged AVC-Intra and
 * misread (`-tag:v avc1`).
 */
import { strict as assert } from 'node:assert';
import path from 'node:path';
import { checkOutput, probeMedia, type MediaBinaries, type ProbeResult } from '../../src/media';
import { CONTAINER_CODECS, ENCODING_PROFILES, buildProcessingPlan, checkerExpectation, runProcessing, type ProcessingOptions } from '../../src/processing-planner';
import { PROFILE_SPECS, dnxhdFrameSizes } from '../../src/processing-planner/encoders';
import { bins } from '../media/fixtures';
import { encodeCached } from '../helpers/media-cache';
import { readCachingBins } from './cached-reads';
import { capabilities, workDir } from './engine-fixtures';
import { scaled } from '../helpers/timeouts';

const L = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'];
const SOURCES = {
  /** NTSC SD, untagged (its colour is inferred: SMPTE 170M), 3 frames. */
  ntsc: ['truth-ntsc.mp4', ['-f', 'lavfi', '-i', 'testsrc2=size=720x480:rate=30000/1001:duration=0.1', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p']],
  /** Full range (a phone's or webcam's yuvj420p), 3 frames. */
  full: ['truth-full.mp4', ['-f', 'lavfi', '-i', 'testsrc2=size=256x144:rate=24000/1001:duration=0.13', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuvj420p']],
  /** Interlaced PAL SD, bottom field first, MPEG-2, 4 frames. */
  bff: ['truth-bff.mpg', ['-f', 'lavfi', '-i', 'testsrc2=size=720x576:rate=50:duration=0.16', '-vf', 'interlace=scan=bff,setfield=bff', '-c:v', 'mpeg2video', '-flags', '+ilme+ildct', '-top', '0']],
} as const;
type SourceName = keyof typeof SOURCES;

const made = new Map<SourceName, Promise<{ file: string; probe: ProbeResult }>>();
function source(name: SourceName) {
  let p = made.get(name);
  if (!p) {
    p = (async () => {
      const b = await bins();
      const [file, args] = SOURCES[name];
      const out = path.join(workDir, file);
      await encodeCached(b.ffmpeg, [...L, ...args, '-an'], out);
      return { file: out, probe: await probeMedia(b, out, { detectScanning: true }) };
    })();
    made.set(name, p);
  }
  return p;
}

/** The binaries for the checker: each source read once however many outputs are judged against it (./cached-reads.ts). */
let checkerBins: Promise<MediaBinaries> | undefined;
function checker(): Promise<MediaBinaries> {
  checkerBins ??= bins().then((b) =>
    readCachingBins(
      b,
      Object.values(SOURCES).map(([file]) => path.join(workDir, file)),
    ),
  );
  return checkerBins;
}

const resizedTo = (width: number, height: number): ProcessingOptions => ({ filters: { scaler: 'SCALE' }, filterSettings: { resolution: { width, height } } });

const CASES: [string, SourceName, ProcessingOptions][] = [];
// Every codec in every container that holds it.
for (const [container, codecs] of Object.entries(CONTAINER_CODECS) as [keyof typeof CONTAINER_CODECS, readonly string[]][]) {
  for (const codec of codecs) {
    if (codec === 'PRORES' || codec === 'DNXHD' || codec === 'DNXHR') continue; // by profile below
    const size = codec === 'XDCAM' ? resizedTo(1280, 720) : {};
    CASES.push([`${codec} in ${container}`, 'ntsc', { container, encodingConfiguration: { codec: codec as 'H264' }, ...size }]);
  }
}
// Every encoding profile in each of its containers (DNxHD at the smallest frame size it takes).
for (const profile of ENCODING_PROFILES) {
  const spec = PROFILE_SPECS[profile];
  if (spec.unsupported) continue;
  const containers = (['MOV', 'MXF'] as const).filter((c) => CONTAINER_CODECS[c].includes(spec.codec));
  const size = spec.mbps
    ? dnxhdFrameSizes(spec.mbps, spec.pixel.bitDepth as 8 | 10)
        .filter((s) => !s.interlaced)
        .sort((a, b) => a.width * a.height - b.width * b.height)[0]
    : undefined;
  for (const container of containers) CASES.push([`${profile} in ${container}`, 'ntsc', { container, encodingProfile: profile, ...(size ? resizedTo(size.width, size.height) : {}) }]);
}
// The shapes that changed what came out.
CASES.push([
  '10-bit H.264 at an AVC-Intra size (960x720) in MOV',
  'ntsc',
  { container: 'MOV', encodingConfiguration: { codec: 'H264', pixelFormat: { yuv: '4:2:0', bitDepth: 10 } }, ...resizedTo(960, 720) },
]);
for (const [what, options] of [
  ['H.264 in MP4', { container: 'MP4', encodingConfiguration: { codec: 'H264' } }],
  ['HEVC in MP4', { container: 'MP4', encodingConfiguration: { codec: 'HEVC' } }],
  ['MPEG-2 in MPEG-TS', { container: 'MPEGTS', encodingConfiguration: { codec: 'MPEG2' } }],
  ['ProRes 422 HQ in MOV', { container: 'MOV', encodingProfile: 'PRORES_422_HQ' }],
  ['FFV1 in MOV', { container: 'MOV', encodingConfiguration: { codec: 'FFV1' } }],
  ['DNxHR SQ in MXF', { container: 'MXF', encodingProfile: 'DNXHR_SQ' }],
] as [string, ProcessingOptions][]) {
  CASES.push([`full range to ${what}`, 'full', options]);
}
for (const [what, options] of [
  ['H.264 in MXF', { container: 'MXF', encodingConfiguration: { codec: 'H264' } }],
  ['H.264 in MP4', { container: 'MP4', encodingConfiguration: { codec: 'H264' } }],
  ['MPEG-2 in MXF', { container: 'MXF', encodingConfiguration: { codec: 'MPEG2' } }],
  ['ProRes 422 in MOV', { container: 'MOV', encodingProfile: 'PRORES_422_STANDARD' }],
] as [string, ProcessingOptions][]) {
  CASES.push([`bottom field first kept (AUTO) to ${what}`, 'bff', options]);
}

describe('appliedOptions.output is what the file is: every output codec, container and profile, judged by the output checker', function () {
  this.timeout(scaled(300_000));
  const verdicts: string[] = [];
  after(() => {
    if (verdicts.length) console.log(`      ${verdicts.join('\n      ')}`);
  });

  for (const [name, src, options] of CASES) {
    it(name, async () => {
      const b = await bins();
      const s = await source(src);
      const plan = buildProcessingPlan(options, s.probe, { startMs: 0, endMs: s.probe.durationMs }, { capabilities: await capabilities(), encoderPreset: 'ultrafast' });
      const out = path.join(workDir, `truth-${CASES.findIndex((c) => c[0] === name)}${plan.fileExtension}`);
      await runProcessing(b, s.file, out, plan, { durationMs: plan.output.durationMs, timeoutMs: scaled(120_000) });
      // The tags only (frame counts are the corpus's part: these sources last a few frames).
      const r = await checkOutput(await checker(), s.file, out, { ...checkerExpectation(plan.applied.output), timingChanged: true });
      const a = plan.applied.output;
      verdicts.push(`${name}: ${a.codecProfile ?? a.codec} ${a.pixelFormat.name} ${a.scanning} ${JSON.stringify(a.colorProfile)}: ${r.problems.length ? r.problems.join('; ') : 'pass'}`);
      assert.deepEqual(r.problems, [], JSON.stringify(plan.applied.notes));
    });
  }

  it('bottom-field-first H.264 in MXF is refused when asked for (readers would take it as top field first)', async () => {
    const s = await source('ntsc');
    assert.throws(
      () =>
        buildProcessingPlan({ container: 'MXF', encodingConfiguration: { codec: 'H264' }, processingSettings: { outputScanning: 'INTERLACED_BOTTOM_FIRST' } }, s.probe, {
          startMs: 0,
          endMs: s.probe.durationMs,
        }),
      (e: { errorCode?: string; message?: string }) => e.errorCode === 'UNSUPPORTED_PROCESSING_OPTION',
    );
  });
});
