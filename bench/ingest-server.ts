/**
 * Child process of the ingest benchmark: the test range server (HTTPS, self-signed) serving
 * files from disk with `fs.createReadStream` ranges, optionally throttled per connection.
 * Prints one JSON line `{ origin, ca }` when listening and runs until SIGTERM.
 *
 *   node --import tsx bench/ingest-server.ts '{"files":{"/a.bin":"/tmp/a.bin"},"bytesPerSecondPerConnection":4000000}'
 */
import { startRangeServer } from '../test/helpers/range-server';

interface Args {
  files: Record<string, string>;
  bytesPerSecondPerConnection?: number;
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as Args;
  const server = await startRangeServer();
  for (const [urlPath, filePath] of Object.entries(args.files)) server.serveFile(urlPath, filePath, { contentType: 'application/octet-stream' });
  server.modes.bytesPerSecondPerConnection = args.bytesPerSecondPerConnection;
  // The request log would grow for ever over a long run; the benchmark does not read it.
  setInterval(() => (server.requests.length = 0), 1000).unref();
  const stop = () => void server.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdout.write(JSON.stringify({ origin: server.origin, ca: server.ca }) + '\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
