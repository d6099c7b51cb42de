#!/usr/bin/env node
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

if (require.main === module) {
  void main(process.argv).then((code) => {
    process.exitCode = code;
    // Pending work (a poll, a socket kept alive) must not hold the process once the command is over.
    setTimeout(() => process.exit(code), 100).unref();
  });
}
