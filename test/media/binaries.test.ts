import { strict as assert } from 'node:assert';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MediaBinariesProvider, MediaBinaryError, assessQuality, mediaReadiness, parseVersionLine, probeMedia, resolveMediaBinaries } from '../../src/media';
import { availableFilters } from '../../src/media/binaries';
import { fixture } from './fixtures';
import { scaled } from '../helpers/timeouts';

const SYSTEM_DIR = path.dirname('/usr/bin/ffmpeg');

function npmBinariesInstalled(): boolean {
  try {
    require.resolve('@ffmpeg-installer/ffmpeg');
    require.resolve('@ffprobe-installer/ffprobe');
    return true;
  } catch {
    return false;
  }
}

describe('Media binaries: resolution order configured -> PATH -> npm', function () {
  this.timeout(scaled(20_000));

  before(function () {
    if (!existsSync('/usr/bin/ffmpeg') || !existsSync('/usr/bin/ffprobe')) this.skip();
  });

  it('parses the version from the first line of -version', () => {
    assert.equal(parseVersionLine('ffmpeg', 'ffmpeg version 5.1.9-0+deb12u1 Copyright (c) 2000-2026 the FFmpeg developers\nbuilt with gcc'), '5.1.9-0+deb12u1');
    assert.equal(parseVersionLine('ffprobe', 'ffprobe version N-66595-gc2b38619c0-static https://x Copyright'), 'N-66595-gc2b38619c0-static');
    assert.equal(parseVersionLine('ffmpeg', 'ffprobe version 5.1'), undefined);
  });

  it('a configured path wins over PATH', async () => {
    const bins = await resolveMediaBinaries({ ffmpegPath: '/usr/bin/ffmpeg', ffprobePath: '/usr/bin/ffprobe', searchPath: '' });
    assert.deepEqual(bins.source, { ffmpeg: 'configured', ffprobe: 'configured' });
    assert.equal(bins.ffmpeg, '/usr/bin/ffmpeg');
    assert.match(bins.ffmpegVersion, /^\d+\.\d+/);
    assert.match(bins.ffprobeVersion, /^\d+\.\d+/);
  });

  it('without configuration: the first ffmpeg on PATH', async () => {
    const bins = await resolveMediaBinaries({ searchPath: ['/nonexistent/dir', SYSTEM_DIR].join(path.delimiter) });
    assert.deepEqual(bins.source, { ffmpeg: 'path', ffprobe: 'path' });
    assert.equal(bins.ffmpeg, '/usr/bin/ffmpeg');
    assert.equal(bins.ffprobe, '/usr/bin/ffprobe');
  });

  it('nothing on PATH: the npm-shipped binaries, which run', async function () {
    if (!npmBinariesInstalled()) this.skip();
    const bins = await resolveMediaBinaries({ searchPath: '' });
    assert.deepEqual(bins.source, { ffmpeg: 'npm', ffprobe: 'npm' });
    assert.match(bins.ffmpeg, /node_modules[/\\]@ffmpeg-installer[/\\]/);
    assert.match(bins.ffprobe, /node_modules[/\\]@ffprobe-installer[/\\]/);
    assert.ok(bins.ffmpegVersion.length > 0 && bins.ffprobeVersion.length > 0);
    assert.deepEqual(await mediaReadiness(bins), { ffmpeg: bins.ffmpegVersion, ffprobe: bins.ffprobeVersion });
  });

  it('the npm-shipped (older) ffmpeg probes and assesses quality with the filters it has', async function () {
    if (!npmBinariesInstalled()) this.skip();
    const bins = await resolveMediaBinaries({ searchPath: '' });
    const input = await fixture('h264Mp4');
    const probe = await probeMedia(bins, input);
    assert.equal(probe.metadata.codecName, 'h264');
    const filters = await availableFilters(bins);
    const quality = await assessQuality(bins, input, { durationMs: probe.durationMs });
    const names = quality.metrics.map((m) => m.name);
    assert.ok(names.includes('luma_range') && names.includes('saturation'));
    assert.equal(names.includes('blur'), filters.has('blurdetect'));
    assert.ok(quality.overallSubjectiveScore >= 0 && quality.overallSubjectiveScore <= 5);
  });

  it('a configured path that does not run is an error naming the setting, even when PATH has ffmpeg', async () => {
    await assert.rejects(resolveMediaBinaries({ ffmpegPath: '/nonexistent/bin/ffmpeg', searchPath: SYSTEM_DIR }), (err: unknown) => {
      assert.ok(err instanceof MediaBinaryError);
      assert.match(err.message, /^VIDMILL_FFMPEG_PATH: configured ffmpeg "\/nonexistent\/bin\/ffmpeg" does not run: could not start ffmpeg .*ENOENT/);
      return true;
    });
  });

  it('a configured path to another program is refused', async () => {
    await assert.rejects(resolveMediaBinaries({ ffmpegPath: '/usr/bin/ffprobe', searchPath: SYSTEM_DIR }), /VIDMILL_FFMPEG_PATH: configured ffmpeg "\/usr\/bin\/ffprobe" is not ffmpeg/);
    await assert.rejects(resolveMediaBinaries({ ffprobePath: '/bin/false', searchPath: SYSTEM_DIR }), /VIDMILL_FFPROBE_PATH: configured ffprobe "\/bin\/false" does not run: false exited with code 1/);
  });

  it('nothing anywhere: an error that says where it looked', async () => {
    await assert.rejects(resolveMediaBinaries({ searchPath: '', allowNpm: false }), /ffmpeg not found: set VIDMILL_FFMPEG_PATH, put ffmpeg on PATH or install @ffmpeg-installer\/ffmpeg/);
  });

  it("the process's provider resolves once, and again after a failure (ffmpeg installed meanwhile)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'vidmill-bins-'));
    try {
      const ffmpegPath = path.join(dir, 'ffmpeg');
      const provider = new MediaBinariesProvider({ ffmpegPath, searchPath: SYSTEM_DIR });
      await assert.rejects(provider.get(), /VIDMILL_FFMPEG_PATH: configured ffmpeg/);
      symlinkSync('/usr/bin/ffmpeg', ffmpegPath);
      const first = provider.get();
      assert.equal((await first).ffmpeg, ffmpegPath);
      assert.equal(provider.get(), first, 'kept, not resolved again');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('readiness reports both versions', async () => {
    const bins = await resolveMediaBinaries({ searchPath: SYSTEM_DIR });
    assert.deepEqual(await mediaReadiness(bins), { ffmpeg: bins.ffmpegVersion, ffprobe: bins.ffprobeVersion });
    await assert.rejects(mediaReadiness({ ...bins, ffmpeg: '/nonexistent/ffmpeg' }), /does not run/);
  });
});
