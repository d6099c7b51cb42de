/**
 * Runs ffmpeg or ffprobe as a child process: no shell, arguments as an array, stdin closed.
 *
 * - ffmpeg gets `-hide_banner -nostdin` (and `-loglevel error` unless the arguments set a level);
 *   with `onProgress` it also gets `-progress pipe:1 -nostats`, and its stdout is read as
 *   `key=value` progress blocks (out_time_us, or out_time_ms on old builds, which despite its
 *   name also counts microseconds; speed; progress=continue|end), not returned.
 * - Otherwise stdout is collected and returned (ffprobe's JSON, ffmpeg's `metadata` filter
 *   output on `pipe:1`), bounded by `maxStdoutBytes`: a process writing more is killed.
 * - stderr keeps only its last ~8 KiB, for error messages.
 * - A time limit or the caller's AbortSignal kills the child: SIGTERM (ffmpeg then closes its
 *   output cleanly), SIGKILL after `killGraceMs`. The promise settles only once the process is
 *   gone, so a caller that sees the rejection can delete the partial output at once.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { StringDecoder } from 'node:string_decoder';
import { MediaAbortedError, MediaError, MediaProcessError, MediaTimeoutError } from './errors';
import { recordMediaSeconds } from '../shared/metrics';

export interface MediaProgress {
  /** 0..100, never decreasing; 100 when ffmpeg reports `progress=end`. 0 while the duration is unknown. */
  percentage: number;
  /** Position reached in the output, in milliseconds. */
  outTimeMs: number;
  /** Encoding speed as a multiple of real time (ffmpeg's `speed=1.5x`), when known. */
  speed?: number;
}

export interface RunMediaOptions {
  signal?: AbortSignal;
  /** Kill the process after this many milliseconds (no limit when absent). */
  timeoutMs?: number;
  /** Duration of what ffmpeg produces, so progress can be a percentage. */
  durationMs?: number;
  onProgress?: (progress: MediaProgress) => void;
  cwd?: string;
  /** Time between SIGTERM and SIGKILL on timeout or abort (default 2000 ms). */
  killGraceMs?: number;
  /** Largest stdout collected (default 16 MiB); more kills the process. */
  maxStdoutBytes?: number;
  /** Treat the binary as ffmpeg or ffprobe; guessed from its file name when absent. */
  tool?: 'ffmpeg' | 'ffprobe';
  /** Pass the arguments exactly as given (no `-hide_banner -nostdin ...`), e.g. for `-version`. */
  rawArgs?: boolean;
}

export interface RunMediaResult {
  /** The process's stdout (empty when `onProgress` was given: stdout then carries progress). */
  stdout: string;
  /** The last ~8 KiB of stderr. */
  stderrTail: string;
}

export const STDERR_TAIL_BYTES = 8 * 1024;
const DEFAULT_MAX_STDOUT = 16 * 1024 * 1024;
const DEFAULT_KILL_GRACE_MS = 2000;

export function isFfmpegBinary(bin: string): boolean {
  const name = path.basename(bin).toLowerCase();
  return name.includes('ffmpeg') && !name.includes('ffprobe');
}

/** The arguments actually passed to the binary (exported for tests and for logging). */
export function mediaArgs(bin: string, args: readonly string[], opts: Pick<RunMediaOptions, 'onProgress' | 'tool' | 'rawArgs'> = {}): string[] {
  const ffmpeg = opts.tool ? opts.tool === 'ffmpeg' : isFfmpegBinary(bin);
  if (!ffmpeg || opts.rawArgs) return [...args];
  const head = ['-hide_banner', '-nostdin'];
  if (!args.includes('-loglevel') && !args.includes('-v')) head.push('-loglevel', 'error');
  if (opts.onProgress) head.push('-progress', 'pipe:1', '-nostats');
  return [...head, ...args];
}

/** The last few meaningful stderr lines, for an error message. */
export function stderrSummary(stderrTail: string, lines = 3): string {
  const meaningful = stderrTail
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('frame=') && !l.startsWith('size='));
  return meaningful.slice(-lines).join(' | ');
}

/** Parses ffmpeg's `-progress` output incrementally and reports each completed block. */
export class ProgressParser {
  private pending = '';
  private block: Record<string, string> = {};
  private best = 0;

  constructor(
    private readonly durationMs: number | undefined,
    private readonly onProgress: (p: MediaProgress) => void,
  ) {}

  push(text: string): void {
    this.pending += text;
    let nl: number;
    while ((nl = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, nl).trim();
      this.pending = this.pending.slice(nl + 1);
      const eq = line.indexOf('=');
      if (eq <= 0) continue;
      const key = line.slice(0, eq);
      const value = line.slice(eq + 1).trim();
      if (key === 'progress') {
        this.emit(value === 'end');
        this.block = {};
      } else {
        this.block[key] = value;
      }
    }
    // A line without newline longer than this is not progress output; do not grow forever.
    if (this.pending.length > 4096) this.pending = '';
  }

  private emit(end: boolean): void {
    const us = Number(this.block.out_time_us ?? this.block.out_time_ms);
    let outTimeMs = Number.isFinite(us) && us >= 0 ? Math.round(us / 1000) : undefined;
    if (outTimeMs === undefined && this.block.out_time) outTimeMs = parseClock(this.block.out_time);
    outTimeMs ??= 0;
    const speedMatch = /^([\d.]+)x$/.exec(this.block.speed ?? '');
    const speed = speedMatch ? Number(speedMatch[1]) : undefined;
    const d = this.durationMs;
    let percentage = d && d > 0 ? Math.min(100, (outTimeMs / d) * 100) : 0;
    if (end) percentage = 100;
    percentage = Math.max(this.best, Math.round(percentage * 100) / 100);
    this.best = percentage;
    const progress: MediaProgress = { percentage, outTimeMs };
    if (speed !== undefined && Number.isFinite(speed)) progress.speed = speed;
    try {
      this.onProgress(progress);
    } catch {
      // A failing progress callback must not break the process handling.
    }
  }
}

function parseClock(v: string): number | undefined {
  const m = /^(-?)(\d+):(\d\d):(\d\d(?:\.\d+)?)$/.exec(v);
  if (!m || m[1]) return undefined;
  return Math.round((Number(m[2]) * 3600 + Number(m[3]) * 60 + Number(m[4])) * 1000);
}

export function runMedia(bin: string, args: readonly string[], opts: RunMediaOptions = {}): Promise<RunMediaResult> {
  const name = path.basename(bin);
  const fullArgs = mediaArgs(bin, args, opts);
  const maxStdout = opts.maxStdoutBytes ?? DEFAULT_MAX_STDOUT;
  const grace = opts.killGraceMs ?? DEFAULT_KILL_GRACE_MS;

  return new Promise<RunMediaResult>((resolve, reject) => {
    if (opts.signal?.aborted) {
      reject(new MediaAbortedError(`${name} not started: aborted (${reasonText(opts.signal.reason)})`, { cause: opts.signal.reason }));
      return;
    }
    const child = spawn(bin, fullArgs, { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'], shell: false, windowsHide: true });
    const startedAt = performance.now();

    let settled = false;
    let killReason: MediaError | undefined;
    let overflow: MediaError | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let timeoutTimer: NodeJS.Timeout | undefined;

    const stdoutDecoder = new StringDecoder('utf8');
    const stderrDecoder = new StringDecoder('utf8');
    const stdoutChunks: string[] = [];
    let stdoutBytes = 0;
    let stderrTail = '';
    const progress = opts.onProgress ? new ProgressParser(opts.durationMs, opts.onProgress) : undefined;

    const kill = (reason: MediaError) => {
      if (killReason || child.exitCode !== null || child.signalCode !== null) return;
      killReason = reason;
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), grace);
    };
    const onAbort = () => kill(new MediaAbortedError(`${name} aborted: ${reasonText(opts.signal?.reason)}`, { cause: opts.signal?.reason }));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.timeoutMs !== undefined && opts.timeoutMs > 0) {
      timeoutTimer = setTimeout(() => kill(new MediaTimeoutError(`${name} timed out after ${opts.timeoutMs} ms and was killed`, opts.timeoutMs!)), opts.timeoutMs);
    }
    const cleanup = () => {
      recordMediaSeconds((performance.now() - startedAt) / 1000);
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      opts.signal?.removeEventListener('abort', onAbort);
    };

    child.stdout.on('data', (chunk: Buffer) => {
      if (progress) {
        progress.push(stdoutDecoder.write(chunk));
        return;
      }
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxStdout) {
        overflow ??= new MediaError(`${name} wrote more than ${maxStdout} bytes to stdout and was killed`);
        kill(overflow);
        return;
      }
      stdoutChunks.push(stdoutDecoder.write(chunk));
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderrTail += stderrDecoder.write(chunk);
      if (stderrTail.length > 2 * STDERR_TAIL_BYTES) stderrTail = stderrTail.slice(-STDERR_TAIL_BYTES);
    });

    child.on('error', (err: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(new MediaError(`could not start ${name} (${bin}): ${err.code ?? err.message}`, { cause: err }));
    });
    child.on('close', (code, signal) => {
      if (settled) return;
      settled = true;
      cleanup();
      stderrTail = (stderrTail + stderrDecoder.end()).slice(-STDERR_TAIL_BYTES);
      if (killReason || overflow) {
        reject(killReason ?? overflow!);
        return;
      }
      if (code === 0) {
        resolve({ stdout: progress ? '' : stdoutChunks.join('') + stdoutDecoder.end(), stderrTail });
        return;
      }
      const how = code !== null ? `exited with code ${code}` : `was killed by ${signal}`;
      const summary = stderrSummary(stderrTail);
      reject(new MediaProcessError(`${name} ${how}${summary ? `: ${summary}` : ''}`, code, signal, stderrTail));
    });
  });
}

function reasonText(reason: unknown): string {
  if (reason instanceof Error) return reason.message;
  if (reason === undefined) return 'no reason given';
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- any other reason as String() shows it
  return String(reason);
}
