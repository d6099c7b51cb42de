/**
 * `vidmill`: the command line of the Vidmill API (docs/cli.md). One module per command group;
 * this file declares the global options, runs the command and turns its outcome into an exit
 * code (0 ok, 1 API error, 2 usage, 3 network, 4 failed or not verified, 130 interrupted).
 */
import { Command, CommanderError } from 'commander';
import { EXIT, installInterruptHandler, positiveInt, reportError } from './context';
import { registerDownload } from './download';
import { registerKeys } from './keys';
import { registerProcess } from './process';
import { registerVideos } from './videos';
import { registerWebhooks } from './webhooks';

export function buildProgram(): Command {
  const program = new Command('vidmill')
    .description('Command line of the Vidmill video processing API')
    .version('2.0.0')
    .option('--url <url>', 'server address (default: VIDMILL_URL or the profile’s url)')
    .option('--api-key <key>', 'API key (default: VIDMILL_API_KEY or the profile’s apiKey)')
    .option('--profile <name>', 'profile of the configuration file ($VIDMILL_CONFIG or ~/.config/vidmill/config.json)')
    .option('--json', 'print the result as one JSON document on stdout (errors as JSON on stderr)')
    .option('--retries <n>', 'retries of a failed request: network errors, 429, 502, 503, 504 (default 3)', positiveInt('--retries'))
    .showHelpAfterError()
    .exitOverride();
  registerVideos(program);
  registerProcess(program);
  registerDownload(program);
  registerWebhooks(program);
  registerKeys(program);
  // Subcommands throw their usage errors too, instead of exiting on their own.
  const override = (cmd: Command) => {
    cmd.exitOverride();
    cmd.commands.forEach(override);
  };
  override(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  installInterruptHandler();
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return EXIT.OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version print and succeed; every other parse failure is a usage error.
      return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    return reportError(err, argv.includes('--json'));
  }
}

/**
 * The folder the user called from. `npm run vidmill` runs its script in the repository root and
 * names the caller's folder in INIT_CWD: the CLI goes back there, so relative paths (the file to
 * upload, `-o`, `--options`, `VIDMILL_CONFIG`) mean what they mean in the caller's shell. `npx
 * vidmill` and the bin itself keep the folder they were started in.
 */
export function callerFolder(env: NodeJS.ProcessEnv, cwd: string): string {
  return env.npm_lifecycle_event === 'vidmill' && env.npm_package_name === 'vidmill' && env.INIT_CWD ? env.INIT_CWD : cwd;
}

/**
 * Under `npx vidmill` (npm exec), npm ends on SIGTERM without passing it on, and the command would
 * run on as an orphan: there, the command ends as SIGTERM would end it (at once) when its parent
 * process goes. Elsewhere (a shell, `nohup`, `npm run`, which passes signals on) nothing changes.
 */
export function endWithNpmExec(env: NodeJS.ProcessEnv, intervalMs = 250): void {
  if (env.npm_command !== 'exec') return;
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.kill(process.pid, 'SIGTERM');
  }, intervalMs).unref();
}

/** Runs the command line and exits with its code: the `vidmill` bin (sdk/bin/vidmill.js) and `npm run vidmill`. */
export function run(argv: string[] = process.argv): void {
  const folder = callerFolder(process.env, process.cwd());
  if (folder !== process.cwd()) process.chdir(folder);
  endWithNpmExec(process.env);
  void main(argv).then((code) => {
    process.exitCode = code;
    // Pending work (a poll, a socket kept alive) must not hold the process once the command is over.
    setTimeout(() => process.exit(code), 100).unref();
  });
}

if (require.main === module) run();
