/**
 * Progress on stderr: a cli-progress bar redrawn in place (percentage, amount, rate and ETA)
 * when stderr is a terminal; otherwise plain lines, one per 10 % or every 5 seconds, which read
 * well in logs and CI. stdout stays for the result (and `--json`).
 */
import { SingleBar } from 'cli-progress';
import { formatBytes, formatDuration } from './context';

export interface ProgressOptions {
  label: string;
  /** Total in bytes, or 100 for a percentage. */
  total: number;
  unit: 'bytes' | 'percent';
  /** Where it is drawn; default stderr. */
  stream?: NodeJS.WriteStream;
}

export interface Progress {
  /** The new value; `etaSeconds` replaces the local estimate (the server's, for a stage). */
  update(value: number, extra?: { etaSeconds?: number; status?: string }): void;
  /** Stops drawing (the bar stays on screen with its last value). */
  stop(): void;
}

/** Rate over the last few seconds of samples (bytes or points per second); since the start while that is too short to say. */
class RateMeter {
  private samples: Array<{ t: number; v: number }> = [];
  private readonly start = { t: Date.now(), v: 0 };
  add(v: number, t = Date.now()): void {
    this.samples.push({ t, v });
    while (this.samples.length > 2 && t - (this.samples[0]?.t ?? t) > 5_000) this.samples.shift();
  }
  perSecond(): number | undefined {
    const last = this.samples[this.samples.length - 1];
    if (!last) return undefined;
    const first = this.samples[0] && last.t - this.samples[0].t >= 200 ? this.samples[0] : this.start;
    if (last.t - first.t <= 0) return undefined;
    return ((last.v - first.v) * 1000) / (last.t - first.t);
  }
}

export function createProgress(opts: ProgressOptions): Progress {
  const stream = opts.stream ?? process.stderr;
  const meter = new RateMeter();
  const amount = (v: number) => (opts.unit === 'bytes' ? formatBytes(v) : `${Math.round(v)}%`);
  const rateText = (rate: number | undefined) => (rate === undefined ? '-' : opts.unit === 'bytes' ? `${formatBytes(rate)}/s` : `${rate.toFixed(1)}%/s`);
  const etaOf = (value: number, rate: number | undefined, etaSeconds?: number) =>
    etaSeconds !== undefined ? etaSeconds : rate && rate > 0 ? (opts.total - value) / rate : value >= opts.total ? 0 : undefined;

  if (stream.isTTY) {
    const bar = new SingleBar({
      stream,
      format: `${opts.label} [{bar}] {percentage}% | {done} of {all} | {rate} | ETA {etaText}{statusText}`,
      barCompleteChar: '#',
      barIncompleteChar: '-',
      barsize: 30,
      hideCursor: true,
      clearOnComplete: false,
      fps: 10,
    });
    bar.start(opts.total, 0, { done: amount(0), all: amount(opts.total), rate: '-', etaText: '?', statusText: '' });
    return {
      update(value, extra = {}) {
        meter.add(value);
        const rate = meter.perSecond();
        bar.update(value, {
          done: amount(value),
          all: amount(opts.total),
          rate: rateText(rate),
          etaText: formatDuration(etaOf(value, rate, extra.etaSeconds)),
          statusText: extra.status ? ` | ${extra.status}` : '',
        });
      },
      stop: () => bar.stop(),
    };
  }

  let lastLine = 0;
  let lastTenth = -1;
  const line = (value: number, extra: { etaSeconds?: number; status?: string } = {}) => {
    const rate = meter.perSecond();
    const pct = opts.total > 0 ? Math.floor((value * 100) / opts.total) : 100;
    stream.write(
      `${opts.label}: ${pct}% (${amount(value)} of ${amount(opts.total)}), ${rateText(rate)}, ETA ${formatDuration(etaOf(value, rate, extra.etaSeconds))}${extra.status ? `, ${extra.status}` : ''}\n`,
    );
    lastLine = Date.now();
  };
  let last: { value: number; extra?: { etaSeconds?: number; status?: string } } = { value: 0 };
  return {
    update(value, extra) {
      meter.add(value);
      last = { value, extra };
      const tenth = opts.total > 0 ? Math.floor((value * 10) / opts.total) : 10;
      if (tenth > lastTenth || Date.now() - lastLine >= 5_000) {
        lastTenth = tenth;
        line(value, extra);
      }
    },
    stop() {
      const tenth = opts.total > 0 ? Math.floor((last.value * 10) / opts.total) : 10;
      if (tenth !== lastTenth || lastLine === 0) line(last.value, last.extra);
    },
  };
}
