/**
 * Small media files made with ffmpeg's test sources, one copy per test process in one temporary
 * directory (removed when the process exits) shared by the media tests, encoded once across
 * processes (test/helpers/media-cache.ts).
 */
import { ChildProcess, execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { resolveMediaBinaries, type MediaBinaries } from '../../src/media';
import { encodeCached } from '../helpers/media-cache';

const run = promisify(execFile);

export const fixtureDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-media-'));
process.on('exit', () => rmSync(fixtureDir, { recursive: true, force: true }));

let binsPromise: Promise<MediaBinaries> | undefined;
export function bins(): Promise<MediaBinaries> {
  binsPromise ??= resolveMediaBinaries({});
  return binsPromise;
}

/**
 * Records the signals sent to child processes (`ChildProcess#kill`) until `restore()`: how a run
 * was stopped (SIGTERM alone, or SIGTERM then SIGKILL after the grace time), without timing it.
 */
export function recordKills(): { signals: string[]; restore(): void } {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called only through .call(this), then restored
  const kill = ChildProcess.prototype.kill;
  const signals: string[] = [];
  ChildProcess.prototype.kill = function (this: ChildProcess, signal?: NodeJS.Signals | number) {
    signals.push(String(signal ?? 'SIGTERM'));
    return kill.call(this, signal);
  };
  return { signals, restore: () => void (ChildProcess.prototype.kill = kill) };
}

const L = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'];

/** Each fixture: its file name and the ffmpeg arguments that make it (before the output path). */
const recipes = {
  /** H.264 + AAC in MP4, 320x240, 30000/1001 fps, 12.012 s, a keyframe every 30 frames. */
  h264Mp4: [
    'h264.mp4',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=320x240:rate=30000/1001:duration=12.012',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=48000:duration=12.012',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-g',
      '30',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      '-b:a',
      '64k',
      '-shortest',
    ],
  ],
  /** HEVC Main 10 in Matroska, 25 fps, 3 s, PQ / BT.2020 with HDR10 mastering metadata, no audio. */
  hevcMkv: [
    'hevc.mkv',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=320x240:rate=25:duration=3',
      '-c:v',
      'libx265',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p10le',
      '-color_primaries',
      'bt2020',
      '-color_trc',
      'smpte2084',
      '-colorspace',
      'bt2020nc',
      '-x265-params',
      'log-level=error:keyint=25:hdr10=1:master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):max-cll=1000,400',
    ],
  ],
  /** ProRes 422 (10-bit 4:2:2) in QuickTime, 24000/1001 fps, 3 s. */
  proresMov: ['prores.mov', ['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=24000/1001:duration=3.003', '-c:v', 'prores_ks', '-profile:v', '2', '-pix_fmt', 'yuv422p10le']],
  /** Interlaced ProRes 422 in QuickTime, top field first (ffmpeg tags the stream `tb`), 352x288, 25 frames/s, 1 s. */
  proresInterlacedTff: [
    'prores-tff.mov',
    ['-f', 'lavfi', '-i', 'testsrc2=size=352x288:rate=50:duration=1', '-vf', 'interlace=scan=tff,setfield=tff', '-c:v', 'prores_ks', '-profile:v', '2', '-flags', '+ildct', '-pix_fmt', 'yuv422p10le'],
  ],
  /** The same, bottom field first (tagged `bt`). */
  proresInterlacedBff: [
    'prores-bff.mov',
    ['-f', 'lavfi', '-i', 'testsrc2=size=352x288:rate=50:duration=1', '-vf', 'interlace=scan=bff,setfield=bff', '-c:v', 'prores_ks', '-profile:v', '2', '-flags', '+ildct', '-pix_fmt', 'yuv422p10le'],
  ],
  /** Interlaced MPEG-2 (top field first) + MP2 in MPEG-TS, 352x288, 25 frames/s, 3 s. */
  interlacedTs: [
    'interlaced.ts',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=352x288:rate=50:duration=3',
      '-f',
      'lavfi',
      '-i',
      'sine=duration=3',
      '-vf',
      'interlace=scan=tff,setfield=tff',
      '-c:v',
      'mpeg2video',
      '-flags',
      '+ilme+ildct',
      '-top',
      '1',
      '-b:v',
      '2M',
      '-g',
      '12',
      '-c:a',
      'mp2',
    ],
  ],
  /** Anamorphic HD (1440x1080 stored, sample aspect 4:3, displayed 1920x1080), 1 s, no audio. */
  anamorphicMp4: ['anamorphic.mp4', ['-f', 'lavfi', '-i', 'testsrc2=size=1440x1080:rate=25:duration=1', '-vf', 'setsar=4/3', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p']],
  /** The H.264 test picture blurred (Gaussian, sigma 4), 3 s: the quality assessment must see the blur. */
  blurredMp4: [
    'blurred.mp4',
    ['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25:duration=3', '-vf', 'gblur=sigma=4', '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '10', '-pix_fmt', 'yuv420p'],
  ],
  /** The same picture sharp, same settings, for comparison. */
  sharpMp4: ['sharp.mp4', ['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25:duration=3', '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '10', '-pix_fmt', 'yuv420p']],
  /**
   * Long-GOP masters for the free clip, 160x90, 14 s at 10 frames/s (cheap to make and cut).
   * H.264 with x264's B-frames and one keyframe every 10 s (0 and 10 s), AAC, in MP4.
   */
  h264LongGopMp4: [
    'h264-long-gop.mp4',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=160x90:rate=10:duration=14',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=48000:duration=14',
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-g',
      '100',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      '-b:a',
      '32k',
      '-shortest',
    ],
  ],
  /** The same H.264 + AAC in MPEG-TS (no index: seeking lands on decode times, not keyframes). */
  h264LongGopTs: [
    'h264-long-gop.ts',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=160x90:rate=10:duration=14',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=48000:duration=14',
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-g',
      '100',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      '-b:a',
      '32k',
      '-shortest',
    ],
  ],
  /** HEVC (closed GOPs, B-frames, a keyframe every 10 s), no audio, in Matroska. */
  hevcLongGopMkv: [
    'hevc-long-gop.mkv',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=160x90:rate=10:duration=14',
      '-c:v',
      'libx265',
      '-preset',
      'ultrafast',
      '-x265-params',
      'log-level=error:keyint=100:min-keyint=100:open-gop=0',
      '-pix_fmt',
      'yuv420p',
    ],
  ],
  /** ProRes 422 Proxy (intra only) + PCM in QuickTime. */
  proresLongMov: [
    'prores-long.mov',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=160x90:rate=10:duration=14',
      '-f',
      'lavfi',
      '-i',
      'sine=duration=14',
      '-c:v',
      'prores_ks',
      '-profile:v',
      '0',
      '-pix_fmt',
      'yuv422p10le',
      '-c:a',
      'pcm_s16le',
      '-shortest',
    ],
  ],
  /**
   * Interlaced MPEG-2 (top field first, 25 frames/s, open GOPs with 2 B-frames, a keyframe every
   * 10 s) + MP2 in MPEG-TS, 160x96 (MPEG-2 has no 10 frames/s).
   */
  mpeg2InterlacedLongGopTs: [
    'mpeg2-long-gop.ts',
    [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=160x96:rate=50:duration=14',
      '-f',
      'lavfi',
      '-i',
      'sine=duration=14',
      '-vf',
      'interlace=scan=tff,setfield=tff',
      '-c:v',
      'mpeg2video',
      '-flags',
      '+ilme+ildct',
      '-top',
      '1',
      '-b:v',
      '400k',
      '-g',
      '250',
      '-bf',
      '2',
      '-c:a',
      'mp2',
      '-shortest',
    ],
  ],
  /** Audio only (AAC in M4A). */
  audioM4a: ['audio.m4a', ['-f', 'lavfi', '-i', 'sine=duration=2', '-c:a', 'aac']],
  /** One JPEG picture. */
  stillJpg: ['still.jpg', ['-f', 'lavfi', '-i', 'testsrc2=size=320x240', '-frames:v', '1']],
} as const;

export type FixtureName = keyof typeof recipes | 'randomBytes' | 'html';

const made = new Map<FixtureName, Promise<string>>();

export function fixture(name: FixtureName): Promise<string> {
  let p = made.get(name);
  if (!p) {
    p = make(name);
    made.set(name, p);
  }
  return p;
}

async function make(name: FixtureName): Promise<string> {
  if (name === 'randomBytes') {
    const file = path.join(fixtureDir, 'random.mp4');
    // Pseudo-random but the same every run (a SHA-256 chain), so no run meets bytes that happen to probe as something.
    const blocks: Buffer[] = [];
    let block = Buffer.from('vidmill media fixture');
    for (let i = 0; i < 2048; i++) blocks.push((block = createHash('sha256').update(block).digest()));
    writeFileSync(file, Buffer.concat(blocks));
    return file;
  }
  if (name === 'html') {
    const file = path.join(fixtureDir, 'page.html');
    writeFileSync(file, '<!doctype html><html><head><title>Not a video</title></head><body><video src="x.mp4"></video></body></html>\n'.repeat(50));
    return file;
  }
  const [file, args] = recipes[name];
  const out = path.join(fixtureDir, file);
  const { ffmpeg } = await bins();
  await encodeCached(ffmpeg, [...L, ...args], out);
  return out;
}

/** ffprobe's view of a file's streams (for checking outputs independently of probeMedia). */
export async function ffprobeStreams(file: string): Promise<{ streams: Record<string, any>[]; format: Record<string, any> }> {
  const { ffprobe } = await bins();
  const { stdout } = await run(ffprobe, ['-v', 'error', '-print_format', 'json', '-show_streams', '-show_format', file]);
  return JSON.parse(stdout);
}

/** Top-level MP4 box types in file order. */
export function mp4TopLevelBoxes(file: string): string[] {
  const buf = readFileSync(file);
  const types: string[] = [];
  let i = 0;
  while (i + 8 <= buf.length) {
    let size = buf.readUInt32BE(i);
    const type = buf.toString('latin1', i + 4, i + 8);
    if (size === 1) size = Number(buf.readBigUInt64BE(i + 8));
    else if (size === 0) size = buf.length - i;
    types.push(type);
    if (size < 8) break;
    i += size;
  }
  return types;
}

/** The first video stream's frames as decoded (`-count_frames`) and its frame rate. */
export async function decodedVideoFrames(file: string): Promise<{ frames: number; fps: number; fieldOrder?: string }> {
  const { ffprobe } = await bins();
  const { stdout } = await run(ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-count_frames', '-show_entries', 'stream=nb_read_frames,r_frame_rate,field_order', '-of', 'json', file]);
  const s = JSON.parse(stdout).streams[0];
  const [num, den] = String(s.r_frame_rate).split('/').map(Number);
  return { frames: Number(s.nb_read_frames), fps: num! / (den || 1), fieldOrder: s.field_order };
}

/** What ffmpeg complains about while decoding the whole file (empty when it decodes cleanly). */
export async function decodeErrors(file: string): Promise<string> {
  const { ffmpeg } = await bins();
  const { stderr } = await run(ffmpeg, ['-hide_banner', '-nostdin', '-v', 'error', '-i', file, '-f', 'null', '-']);
  return stderr.trim();
}

/**
 * PSNR (dB, 99 for identical) of each frame of `clip` against the frame of `master` at the same
 * place, the master decoded from its frame `fromFrame` on (both re-timed from zero).
 */
export async function framePsnr(clip: string, master: string, fromFrame: number): Promise<number[]> {
  const { ffmpeg } = await bins();
  const { stdout } = await run(ffmpeg, [
    '-hide_banner',
    '-nostdin',
    '-v',
    'error',
    '-i',
    clip,
    '-i',
    master,
    '-lavfi',
    `[0:v]setpts=PTS-STARTPTS[a];[1:v]trim=start_frame=${fromFrame},setpts=PTS-STARTPTS[b];[a][b]psnr=shortest=1:stats_file=-`,
    '-f',
    'null',
    '-',
  ]);
  return [...stdout.matchAll(/psnr_avg:(\S+)/g)].map((m) => (m[1] === 'inf' ? 99 : Number(m[1])));
}

/** Seconds from the first audio packet's start to the last one's end (stream durations of MPEG-TS are estimates). */
export async function audioSpan(file: string): Promise<number | undefined> {
  const { ffprobe } = await bins();
  const { stdout } = await run(ffprobe, ['-v', 'error', '-select_streams', 'a:0', '-show_entries', 'packet=pts_time,duration_time', '-of', 'json', file]);
  const packets = (JSON.parse(stdout).packets ?? []) as { pts_time: string; duration_time: string }[];
  if (!packets.length) return undefined;
  const last = packets[packets.length - 1];
  return Number(last!.pts_time) + Number(last!.duration_time) - Number(packets[0]!.pts_time);
}
