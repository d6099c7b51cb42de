import pino, { Logger } from 'pino';

/** How long a log line may wait in the buffer before it is written. */
export const LOG_FLUSH_INTERVAL_MS = 1000;

/**
 * Structured JSON logs on stdout; secrets are redacted wherever they could appear.
 *
 * Lines are written through a buffered, asynchronous destination (up to 4 KiB, flushed at least
 * every second) instead of one `write` per line: under load the access log then costs a fraction
 * of the CPU. Call `flushLogger()` before the process exits (main.ts does on shutdown and on a
 * fatal start-up error) so the last lines are not lost.
 */
export function createLogger(level: string, opts: { destination?: pino.DestinationStream; buffered?: boolean } = {}): Logger {
  const buffered = opts.buffered ?? true;
  const destination = opts.destination ?? pino.destination({ dest: 1, sync: !buffered, minLength: buffered ? 4096 : 0 });
  const logger = pino(
    {
      level,
      base: { service: 'vidmill' },
      redact: {
        paths: ['*.password', '*.secretAccessKey', '*.secretKey', '*.accessKey', '*.apiKey', 'req.headers["x-api-key"]', 'req.headers.authorization'],
        censor: '[redacted]',
      },
    },
    destination,
  );
  if (buffered && !opts.destination) {
    const timer = setInterval(() => logger.flush(), LOG_FLUSH_INTERVAL_MS);
    timer.unref();
  }
  return logger;
}

/** Writes whatever is buffered, synchronously. */
export function flushLogger(logger: Logger): void {
  // pino keeps its destination under a symbol that its types do not declare on Logger.
  const stream = (logger as unknown as Record<symbol, { flushSync?: () => void } | undefined>)[pino.symbols.streamSym];
  if (stream && typeof stream.flushSync === 'function') {
    try {
      stream.flushSync();
    } catch {
      // Nothing buffered, or the destination is not ready yet.
    }
  }
}
