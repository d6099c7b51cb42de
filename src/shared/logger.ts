import pino, { Logger } from 'pino';

/** Structured JSON logs; secrets are redacted wherever they could appear. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'vidmill' },
    redact: {
      paths: ['*.password', '*.secretAccessKey', '*.secretKey', '*.accessKey', '*.apiKey', 'req.headers["x-api-key"]', 'req.headers.authorization'],
      censor: '[redacted]',
    },
  });
}
