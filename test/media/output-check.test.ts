/**
 * The output checker (src/media/output-check.ts) finds what it is for, on files made wrong on
 * purpose from one tiny source (160x120, 25 frames/s, 2 s, pink noise): a faithful copy passes; a
 * dropped frame, a first frame repeated to fill a gap, audio moved against the picture (its start,
 * or only its content: one AAC frame of silence put before it, as a lost priming does),
 * presentation times out of order (H.264 with B-frames in MXF) and a tag that is not the promised
 * one are each reported.
 */
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { checkOutput, type MediaBinaries } from '../../src/media';
import { encodeCached } from '../helpers/media-cache';
import { readCachingBins } from '../processing/cached-reads';
import { pinkNoise } from '../processing/engine-fixtures';
import { bins, fixtureDir } from './fixtures';
import { scaled } from '../helpers/timeouts';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(fixtureDir, 'check-'));
const L = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'];
const X264 = ['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p'];

describe('The output checker', function () {
  this.timeout(scaled(120_000));
  let source: string;
  /** The binaries for the checker: the source, judged against six times, read once (test/processing/cached-reads.ts). */
  let checker: MediaBinaries;
  const make = async (name: string, args: string[]) => {
    const file = path.join(dir, name);
    await run((await bins()).ffmpeg, [...L, ...args, file]);
    return file;
  };

  before(async () => {
    source = path.join(dir, 'source.mp4');
    const b = await bins();
    await encodeCached(b.ffmpeg, [...L, '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=25:duration=2', ...pinkNoise(2), ...X264, '-c:a', 'aac', '-shortest'], source);
    checker = readCachingBins(b, [source]);
  });

  it('a faithful re-encode passes: every frame the source frame at its place, audio in step', async () => {
    const out = await make('faithful.mov', ['-i', source, '-c:v', 'prores_ks', '-c:a', 'pcm_s16le']);
    const r = await checkOutput(checker, source, out, { frames: 50, startS: 0, frameRate: '25:1', width: 160, height: 120, scanning: 'PROGRESSIVE' });
    assert.deepEqual(r.problems, []);
    assert.ok(Math.abs(r.audioContentLate!) < 0.001, `content ${r.audioContentLate}`);
    assert.ok(Math.abs(r.audioEnd!.output - r.audioEnd!.expected) < 0.025, JSON.stringify(r.audioEnd));
    assert.deepEqual(
      r.sourceFrameOf,
      Array.from({ length: 50 }, (_, i) => i),
    );
  });

  it('a dropped frame is reported with its number, and the frame count against the planned one', async () => {
    const out = await make('dropped.mp4', ['-i', source, '-vf', "select='not(eq(n\\,10))',setpts=N/25/TB", ...X264, '-c:a', 'aac']);
    const r = await checkOutput(checker, source, out, { frames: 50, startS: 0 });
    assert.deepEqual(r.dropped, [10]);
    assert.ok(r.problems.some((p) => /49 frames, 50 planned/.test(p)) && r.problems.some((p) => /source frames are not shown/.test(p)), r.problems.join('; '));
  });

  it('a first frame repeated to fill a gap (a video starting after its audio, made constant-rate) is reported', async () => {
    const late = await make('late.mkv', ['-itsoffset', '0.52', '-i', source, '-i', source, '-map', '0:v', '-map', '1:a', '-c', 'copy']);
    const out = await make('late-filled.mp4', ['-i', late, ...X264, '-fps_mode', 'cfr', '-c:a', 'aac']);
    const r = await checkOutput(await bins(), late, out);
    assert.ok(r.repeated.length >= 12, `repeated: ${r.repeated.join(',')}`);
    assert.ok(r.problems.some((p) => /repeat the frame before them/.test(p)));
  });

  it('audio moved against the picture is reported', async () => {
    const out = await make('shifted.mkv', ['-i', source, '-itsoffset', '0.3', '-i', source, '-map', '0:v', '-map', '1:a', '-c', 'copy']);
    const r = await checkOutput(checker, source, out);
    assert.ok(
      r.problems.some((p) => /the audio starts/.test(p)),
      r.problems.join('; '),
    );
  });

  it('audio whose content is late while its start is stored in step is reported (21.3 ms: one AAC frame of silence before it, as a lost encoder priming makes)', async () => {
    const out = await make('content-late.mp4', ['-i', source, '-c:v', 'copy', '-af', 'adelay=1024S:all=1', '-c:a', 'aac']);
    const r = await checkOutput(checker, source, out);
    assert.ok(Math.abs(r.audioContentLate! - 0.0213) < 0.001, `content ${r.audioContentLate}`);
    assert.ok(r.audioOffset && Math.abs(r.audioOffset.output) < 0.001, 'the start as stored is in step');
    assert.ok(
      r.problems.some((p) => /audio's content is 21\.\d ms late/.test(p)),
      r.problems.join('; '),
    );
  });

  it('presentation times out of order are reported (H.264 with B-frames written into MXF)', async () => {
    const out = await make('scrambled.mxf', ['-i', source, '-c:v', 'libx264', '-preset', 'medium', '-pix_fmt', 'yuv420p', '-an']);
    const r = await checkOutput(checker, source, out);
    assert.ok(r.nonIncreasing.length > 0, JSON.stringify(r));
    assert.ok(r.problems.some((p) => /do not increase/.test(p)));
  });

  it('a tag that is not the promised one is reported', async () => {
    const out = await make('tagged.mp4', ['-i', source, ...X264, '-color_primaries', 'bt709', '-color_trc', 'bt709', '-colorspace', 'bt709', '-c:a', 'aac']);
    const r = await checkOutput(checker, source, out, { colorSpace: 'smpte170m', frameRate: '30:1' });
    assert.ok(r.problems.some((p) => /colour space is bt709, smpte170m promised/.test(p)));
    assert.ok(r.problems.some((p) => /frame rate is 25:1, 30:1 promised/.test(p)));
  });
});
