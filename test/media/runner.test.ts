import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { mock } from 'node:test';
import { MediaAbortedError, MediaProcessError, MediaTimeoutError, runMedia, type MediaProgress } from '../../src/media';
import { mediaArgs, ProgressParser, STDERR_TAIL_BYTES } from '../../src/media/runner';
import { waitFor } from '../helpers/scenario';
import { bins, recordKills } from './fixtures';
import { scaled } from '../helpers/timeouts';

/** Processes whose command line contains `marker` (Linux /proc). */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes(marker)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('Media runner', function () {
  this.timeout(scaled(20_000));
  // How a run is stopped is told by the signals sent and, for the time limits, by mocked timers.
  let kills: ReturnType<typeof recordKills>;
  beforeEach(() => (kills = recordKills()));
  afterEach(() => {
    mock.timers.reset();
    kills.restore();
  });

  it('adds -hide_banner -nostdin, a log level and -progress only for ffmpeg', () => {
    assert.deepEqual(mediaArgs('/usr/bin/ffmpeg', ['-i', 'a']), ['-hide_banner', '-nostdin', '-loglevel', 'error', '-i', 'a']);
    assert.deepEqual(mediaArgs('/usr/bin/ffmpeg', ['-loglevel', 'info', '-i', 'a'], { onProgress: () => undefined }), [
      '-hide_banner',
      '-nostdin',
      '-progress',
      'pipe:1',
      '-nostats',
      '-loglevel',
      'info',
      '-i',
      'a',
    ]);
    assert.deepEqual(mediaArgs('/usr/bin/ffprobe', ['-i', 'a']), ['-i', 'a']);
    assert.deepEqual(mediaArgs('/opt/ff/ffmpeg', ['-version'], { rawArgs: true }), ['-version']);
  });

  it('parses -progress blocks: out_time_us (or the old out_time_ms, also microseconds), speed, end = 100', () => {
    const seen: MediaProgress[] = [];
    const parser = new ProgressParser(10_000, (p) => seen.push(p));
    parser.push('frame=10\nout_time_us=2500000\nspeed=2.5x\nprogress=continue\nout_time_ms=5000000\nspe');
    parser.push('ed=N/A\nprogress=continue\nout_time_us=N/A\nout_time=00:00:04.000000\nprogress=continue\n');
    parser.push('out_time_us=10000000\nspeed=3x\nprogress=end\n');
    assert.deepEqual(seen, [
      { percentage: 25, outTimeMs: 2500, speed: 2.5 },
      { percentage: 50, outTimeMs: 5000 },
      // position went back (4 s): the percentage never does
      { percentage: 50, outTimeMs: 4000 },
      { percentage: 100, outTimeMs: 10000, speed: 3 },
    ]);
  });

  it('progress of a real ffmpeg run: several reports, never decreasing, ending at 100', async () => {
    const { ffmpeg } = await bins();
    const seen: MediaProgress[] = [];
    const result = await runMedia(ffmpeg, ['-re', '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=25:duration=2', '-f', 'null', '-'], {
      durationMs: 2000,
      onProgress: (p) => seen.push(p),
    });
    assert.equal(result.stdout, '');
    assert.ok(seen.length >= 3, `only ${seen.length} progress reports`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.percentage >= seen[i - 1]!.percentage, JSON.stringify(seen));
    assert.ok(
      seen.some((p) => p.percentage > 0 && p.percentage < 100),
      JSON.stringify(seen),
    );
    assert.equal(seen.at(-1)!.percentage, 100);
    assert.ok(seen.some((p) => p.speed !== undefined));
  });

  it('a non-zero exit rejects with MediaProcessError carrying the exit code and the stderr tail', async () => {
    const { ffmpeg } = await bins();
    const err = await runMedia(ffmpeg, ['-i', '/nonexistent/input.mp4', '-f', 'null', '-']).then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof MediaProcessError);
    assert.notEqual(err.exitCode, 0);
    assert.match(err.stderrTail, /No such file or directory/);
    assert.match(err.message, /^ffmpeg exited with code \d+: .*No such file or directory/);
  });

  it('keeps only the last ~8 KiB of stderr', async () => {
    const { ffmpeg } = await bins();
    // 'debug' logging of a short run writes far more than 8 KiB to stderr; an unknown output format then fails it.
    const err = (await runMedia(ffmpeg, ['-loglevel', 'debug', '-f', 'lavfi', '-i', 'testsrc2=duration=0.5', '-f', 'no-such-format', '-']).catch((e) => e)) as MediaProcessError;
    assert.ok(err instanceof MediaProcessError);
    assert.ok(err.stderrTail.length <= STDERR_TAIL_BYTES, `${err.stderrTail.length}`);
    assert.ok(err.stderrTail.length > 1000);
    assert.match(err.stderrTail, /no-such-format/);
  });

  it('an AbortSignal kills the process at once and rejects with MediaAbortedError naming the reason', async () => {
    const { ffmpeg } = await bins();
    const marker = `testsrc2=size=${200 + (process.pid % 500) * 2}x242:rate=25`;
    const controller = new AbortController();
    const running = runMedia(ffmpeg, ['-f', 'lavfi', '-i', marker, '-f', 'null', '-'], { signal: controller.signal });
    await waitFor('ffmpeg runs', () => processesWith(marker).length === 1);
    controller.abort(new Error('video deleted'));
    assert.deepEqual(kills.signals, ['SIGTERM'], 'SIGTERM is sent within abort()');
    const err = await running.then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    );
    assert.deepEqual(kills.signals, ['SIGTERM'], 'ffmpeg ended on SIGTERM, without the SIGKILL of the grace time');
    assert.ok(err instanceof MediaAbortedError);
    assert.match(err.message, /ffmpeg aborted: video deleted/);
    assert.deepEqual(processesWith(marker), [], 'the process is gone when the promise settles');
  });

  it('an already aborted signal does not start the process', async () => {
    const { ffmpeg } = await bins();
    const err = await runMedia(ffmpeg, ['-version'], { signal: AbortSignal.abort('stop') }).catch((e) => e);
    assert.ok(err instanceof MediaAbortedError);
    assert.match(err.message, /not started: aborted \(stop\)/);
  });

  it('the time limit kills the process and rejects with MediaTimeoutError', async () => {
    const { ffmpeg } = await bins();
    const marker = `testsrc2=size=${200 + (process.pid % 500) * 2}x244:rate=25`;
    mock.timers.enable({ apis: ['setTimeout'] });
    const settled = runMedia(ffmpeg, ['-f', 'lavfi', '-i', marker, '-f', 'null', '-'], { timeoutMs: 300 }).catch((e) => e);
    await untilRunning(marker);
    mock.timers.tick(299);
    assert.deepEqual(kills.signals, [], 'nothing is sent before the time limit');
    mock.timers.tick(1);
    assert.deepEqual(kills.signals, ['SIGTERM'], 'SIGTERM at the time limit');
    const err = await settled;
    assert.ok(err instanceof MediaTimeoutError);
    assert.equal(err.timeoutMs, 300);
    assert.match(err.message, /ffmpeg timed out after 300 ms/);
    assert.deepEqual(kills.signals, ['SIGTERM'], 'ffmpeg ended on SIGTERM, without the SIGKILL of the grace time');
    assert.deepEqual(processesWith(marker), []);
  });

  it('a process ignoring SIGTERM is killed with SIGKILL after the grace time', async () => {
    // `sleep` inherits the ignored SIGTERM; its command line (sleep NUL seconds) exists only once
    // the trap is set and the shell has exec'd it.
    const seconds = `30.${process.pid}`;
    mock.timers.enable({ apis: ['setTimeout'] });
    const settled = runMedia('/bin/sh', ['-c', `trap "" TERM; exec sleep ${seconds}`], { timeoutMs: 200, killGraceMs: 300, tool: 'ffprobe' }).catch((e) => e);
    await untilRunning(`sleep\0${seconds}`);
    mock.timers.tick(200);
    assert.deepEqual(kills.signals, ['SIGTERM'], 'SIGTERM at the time limit');
    mock.timers.tick(299);
    assert.deepEqual(kills.signals, ['SIGTERM'], 'no SIGKILL before the grace time');
    assert.equal(processesWith(`sleep\0${seconds}`).length, 1, 'SIGTERM was ignored');
    mock.timers.tick(1);
    assert.deepEqual(kills.signals, ['SIGTERM', 'SIGKILL'], 'SIGKILL after the grace time');
    const err = await settled;
    assert.ok(err instanceof MediaTimeoutError);
    assert.deepEqual(processesWith(`sleep\0${seconds}`), []);
  });

  it('stdout is collected and bounded', async () => {
    const { ffprobe } = await bins();
    const { stdout } = await runMedia(ffprobe, ['-version']);
    assert.match(stdout, /^ffprobe version/);
    const err = await runMedia(ffprobe, ['-version'], { maxStdoutBytes: 10 }).catch((e) => e);
    assert.match(String(err?.message), /more than 10 bytes to stdout/);
  });

  it('a binary that does not exist rejects with a clear message', async () => {
    const err = await runMedia('/nonexistent/ffmpeg', ['-version']).catch((e) => e);
    assert.match(err.message, /could not start ffmpeg \(\/nonexistent\/ffmpeg\): ENOENT/);
  });
});

/**
 * Waits (10 s at most) until exactly one process's command line contains `pattern`, polling with
 * setImmediate and Date, which the tests with mocked setTimeout leave real: waitFor sleeps with
 * setTimeout and would never wake there when its first look finds no process yet.
 */
async function untilRunning(pattern: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; processesWith(pattern).length !== 1;) {
    assert.ok(Date.now() < deadline, `timed out waiting for a process running ${JSON.stringify(pattern)}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}
