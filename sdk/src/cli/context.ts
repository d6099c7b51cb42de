/**
 * What every command of the CLI shares: the configuration (flags, environment, profile file),
 * the client, output (human tables or one JSON document), prompts, Ctrl-C, and the errors with
 * their exit codes (docs/cli.md#exit-codes).
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { InvalidArgumentError, type Command } from 'commander';
import { createVidmillClient, type VidmillClient, type VidmillClientOptions } from '../client';
import { VidmillApiError, VidmillNetworkError } from '../errors';
import { VidmillStageFailedError } from '../wait-for';

/** Exit codes of the `vidmill` command (docs/cli.md#exit-codes). */
export const EXIT = {
  OK: 0,
  /** The API answered an error (`errorCode`, message and `requestId` printed on stderr). */
  API_ERROR: 1,
  /** Wrong usage: unknown command or option, missing argument or configuration, confirmation refused. */
  USAGE: 2,
  /** The server could not be reached (connection refused, DNS, TLS, reset). */
  NETWORK: 3,
  /** What was waited for failed or did not verify: a stage FAILED, a download's checksum differs. */
  FAILED: 4,
  /** Interrupted with Ctrl-C (SIGINT). */
  INTERRUPTED: 130,
} as const;

/** A failure the CLI reports with its own exit code. */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
    readonly errorCode?: string,
  ) {
    super(message);
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super(EXIT.USAGE, message, 'USAGE');
  }
}

export class Interrupted extends CliError {
  constructor(message = 'Interrupted') {
    super(EXIT.INTERRUPTED, message, 'INTERRUPTED');
  }
}

/** Options every command accepts (declared on the program in main.ts). */
export interface GlobalOptions {
  url?: string;
  apiKey?: string;
  profile?: string;
  json?: boolean;
  /** Retries of a failed request (network errors, 429, 502, 503, 504); default the SDK's 3. */
  retries?: number;
}

/** One profile of the configuration file. */
export interface Profile {
  url?: string;
  apiKey?: string;
  /** E-mail for the `keys` commands (HTTP Basic). */
  email?: string;
}

/** The configuration file: `{ "defaultProfile": "default", "profiles": { "default": { "url", "apiKey" } } }`. */
export interface ConfigFile {
  defaultProfile?: string;
  profiles?: Record<string, Profile>;
}

/** Path of the configuration file: `$VIDMILL_CONFIG`, else `~/.config/vidmill/config.json` (or under `$XDG_CONFIG_HOME`). */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.VIDMILL_CONFIG) return path.resolve(env.VIDMILL_CONFIG);
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(base, 'vidmill', 'config.json');
}

async function readConfigFile(file: string): Promise<ConfigFile | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UsageError(`Cannot read the configuration file ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as ConfigFile;
  } catch (err) {
    throw new UsageError(`The configuration file ${file} is not valid JSON: ${(err as Error).message}`);
  }
}

export interface ResolvedConfig {
  url: string;
  apiKey?: string;
  email?: string;
  /** Where the CLI keeps its state (the upload sessions to resume): the configuration file's folder. */
  stateDir: string;
}

/**
 * Flags win; then, with `--profile`, that profile; else the environment (`VIDMILL_URL`,
 * `VIDMILL_API_KEY`, `VIDMILL_EMAIL`), then the file's default profile (`defaultProfile`, else
 * the one named `default`).
 */
export async function resolveConfig(opts: GlobalOptions, env: NodeJS.ProcessEnv = process.env): Promise<ResolvedConfig> {
  const file = configPath(env);
  const config = await readConfigFile(file);
  let profile: Profile = {};
  if (opts.profile) {
    const named = config?.profiles?.[opts.profile];
    if (!named) throw new UsageError(`No profile "${opts.profile}" in ${file}`);
    profile = named;
  }
  const fallback = config?.profiles?.[config.defaultProfile ?? 'default'] ?? {};
  const pick = (flag: string | undefined, fromProfile: string | undefined, fromEnv: string | undefined, fromDefault: string | undefined) =>
    flag || (opts.profile ? fromProfile : undefined) || fromEnv || fromDefault || undefined;
  const url = pick(opts.url, profile.url, env.VIDMILL_URL, fallback.url);
  if (!url) throw new UsageError(`No server address: set VIDMILL_URL, pass --url, or add a profile to ${file}`);
  return {
    url,
    apiKey: pick(opts.apiKey, profile.apiKey, env.VIDMILL_API_KEY, fallback.apiKey),
    email: pick(undefined, profile.email, env.VIDMILL_EMAIL, fallback.email),
    stateDir: path.dirname(file),
  };
}

/** What a command runs with. */
export interface Context {
  readonly opts: GlobalOptions;
  readonly config: ResolvedConfig;
  /** The client with the API key (fails with a usage error at first use when no key is configured). */
  readonly client: VidmillClient;
  /** Aborted on Ctrl-C. */
  readonly signal: AbortSignal;
  readonly json: boolean;
  /** Prints the command's result: `value` as one JSON document with `--json`, else `human()`. */
  result(value: unknown, human: () => string): void;
  /** A line of progress or information for people, on stderr (never with `--json`... except errors). */
  info(line: string): void;
  /** Asks a yes/no question on the terminal; false without a terminal. */
  confirm(question: string): Promise<boolean>;
}

const interrupt = new AbortController();
let interrupts = 0;
/** Ctrl-C aborts the running command (it cleans up and exits 130); a second Ctrl-C exits at once. */
export function installInterruptHandler(): void {
  process.on('SIGINT', () => {
    interrupts += 1;
    if (interrupts > 1) process.exit(EXIT.INTERRUPTED);
    interrupt.abort(new Interrupted());
  });
}

/** Throws `Interrupted` when Ctrl-C was pressed. */
export function checkInterrupted(signal: AbortSignal): void {
  if (signal.aborted) throw signal.reason instanceof Interrupted ? signal.reason : new Interrupted();
}

export async function createContext(opts: GlobalOptions): Promise<Context> {
  const config = await resolveConfig(opts);
  const json = Boolean(opts.json);
  let client: VidmillClient | undefined;
  return {
    opts,
    config,
    json,
    signal: interrupt.signal,
    get client() {
      if (!config.apiKey) throw new UsageError('No API key: set VIDMILL_API_KEY, pass --api-key, or add one to a profile');
      client ??= createVidmillClient({ baseUrl: config.url, apiKey: config.apiKey, ...clientRetries(opts) });
      return client;
    },
    result(value, human) {
      if (json) process.stdout.write(JSON.stringify(value, null, 2) + '\n');
      else {
        const text = human();
        if (text) process.stdout.write(text.endsWith('\n') ? text : text + '\n');
      }
    },
    info(line) {
      process.stderr.write(line + '\n');
    },
    confirm: (question) => confirm(question),
  };
}

/** The retry policy of the CLI's clients: `--retries`, and a note on stderr before each retry. */
export function clientRetries(opts: GlobalOptions): Pick<VidmillClientOptions, 'retries' | 'retry'> {
  return {
    retries: opts.retries,
    retry: {
      onRetry: (e) => process.stderr.write(`${e.method} ${new URL(e.url).pathname} ${e.status ? `answered ${e.status}` : 'failed'}; retrying in ${(e.delayMs / 1000).toFixed(1)}s\n`),
    },
  };
}

/** Reads a line from the terminal; `hidden` does not echo it (passwords). Undefined without a terminal. */
export async function prompt(question: string, hidden = false): Promise<string | undefined> {
  if (!process.stdin.isTTY) return undefined;
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  if (hidden) {
    // Echo nothing of what is typed after the question.
    const out = rl as unknown as { _writeToOutput: (s: string) => void };
    let asked = false;
    out._writeToOutput = (s: string) => {
      if (!asked) {
        asked = true;
        process.stderr.write(s);
      }
    };
  }
  try {
    return await new Promise<string>((resolve) => rl.question(question, resolve));
  } finally {
    if (hidden) process.stderr.write('\n');
    rl.close();
  }
}

async function confirm(question: string): Promise<boolean> {
  const answer = await prompt(`${question} [y/N] `);
  return answer !== undefined && /^y(es)?$/i.test(answer.trim());
}

/** Whether `err` is a failure to reach the server (not an answer). */
export function isNetworkError(err: unknown): boolean {
  if (err instanceof VidmillNetworkError) return true;
  if (!(err instanceof Error)) return false;
  const codes = ['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT'];
  const cause = (err as { cause?: unknown }).cause;
  const code = (err as NodeJS.ErrnoException).code ?? (cause as NodeJS.ErrnoException | undefined)?.code;
  if (code && codes.includes(code)) return true;
  return err instanceof TypeError && err.message === 'fetch failed';
}

/** The `validationErrors` of an `Error` body (field, message and the rejected value), as the API sent them. */
export function validationErrorsOf(body: unknown): Array<{ field: string; message: string; value?: unknown }> {
  const list = (body as { validationErrors?: unknown } | undefined)?.validationErrors;
  if (!Array.isArray(list)) return [];
  return list
    .filter((e): e is { field: unknown; message: unknown; value?: unknown } => typeof e === 'object' && e !== null)
    .map((e) => ({ field: String(e.field), message: String(e.message), ...(e.value !== undefined ? { value: e.value } : {}) }));
}

/** Prints `err` on stderr as the docs say and answers the exit code. */
export function reportError(err: unknown, json: boolean): number {
  const write = (human: string, doc: Record<string, unknown>) => process.stderr.write((json ? JSON.stringify({ error: doc }) : human) + '\n');
  if (err instanceof VidmillApiError) {
    const details = validationErrorsOf(err.body);
    const lines = details.map((d) => `\n  ${d.field}: ${d.message}${d.value !== undefined ? ` (got ${typeof d.value === 'string' ? d.value : JSON.stringify(d.value)})` : ''}`).join('');
    write(`Error: ${err.errorCode}: ${err.message} (HTTP ${err.status}, requestId ${err.requestId ?? 'none'})${lines}`, {
      errorCode: err.errorCode,
      message: err.message,
      status: err.status,
      requestId: err.requestId,
      ...(details.length ? { validationErrors: details } : {}),
    });
    return EXIT.API_ERROR;
  }
  if (err instanceof VidmillStageFailedError) {
    write(`Error: ${err.message}`, { errorCode: err.errorCode, message: err.message, videoId: err.videoId, stage: err.stage });
    return EXIT.FAILED;
  }
  if (err instanceof VidmillNetworkError) {
    const message = `Cannot reach the server: ${err.message}`;
    write(`Error: ${message}`, { errorCode: 'NETWORK_ERROR', message });
    return EXIT.NETWORK;
  }
  if (err instanceof CliError) {
    write(`${err.exitCode === EXIT.INTERRUPTED ? '' : 'Error: '}${err.message}`, { errorCode: err.errorCode, message: err.message });
    return err.exitCode;
  }
  if (isNetworkError(err)) {
    const cause = (err as { cause?: { message?: string } }).cause;
    const message = `Cannot reach the server: ${cause?.message ?? (err as Error).message}`;
    write(`Error: ${message}`, { errorCode: 'NETWORK_ERROR', message });
    return EXIT.NETWORK;
  }
  const message = err instanceof Error ? err.message : String(err);
  write(`Error: ${message}`, { errorCode: 'CLI_ERROR', message });
  return EXIT.API_ERROR;
}

/** A plain-text table: a header row and left-aligned columns. */
export function table(headers: string[], rows: Array<Array<string | number | undefined>>): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === undefined ? '' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n');
}

/** `key: value` lines with the keys aligned; undefined values are left out. */
export function fields(entries: Array<[string, unknown]>): string {
  const shown = entries.filter(([, v]) => v !== undefined && v !== null && v !== '');
  const width = Math.max(0, ...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${(k + ':').padEnd(width + 1)} ${typeof v === 'object' ? JSON.stringify(v) : String(v as string | number)}`).join('\n');
}

/** Bytes for people: 1.5 MB, 312 kB (powers of 1000, as the API's sizes). */
export function formatBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i += 1;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

/** Seconds for people: 45s, 3m07s, 1h02m. */
export function formatDuration(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** A positive integer option, or a usage error naming it. */
export function positiveInt(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a whole number, got "${value}"`);
    return n;
  };
}

/** Wraps a command's function as a commander action: the context from the global options, then its arguments and options. */
export type Action = typeof action;

export function action<A extends unknown[]>(fn: (ctx: Context, ...args: A) => Promise<void>): (...args: unknown[]) => Promise<void> {
  return async (...args) => {
    const command = args[args.length - 1] as Command;
    const ctx = await createContext(command.optsWithGlobals<GlobalOptions>());
    // commander passes the declared arguments, then the options, then the command.
    await fn(ctx, ...(args.slice(0, -1) as A));
  };
}
