/**
 * Child process of the video-out benchmark: the tests' local S3-compatible server (s3rver, on
 * disk, behind the SigV4-checking front that also answers ListParts / AbortMultipartUpload) with
 * the buckets named in the argument. Prints one JSON line `{ endpoint, region, credentials }`
 * when listening and runs until SIGTERM (its temp directory is removed then).
 *
 *   node --import tsx bench/s3-server.ts '{"buckets":["bench"]}'
 */
import { startLocalS3 } from '../test/helpers/s3-server';

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as { buckets?: string[] };
  const s3 = await startLocalS3({ buckets: args.buckets ?? [] });
  // The request log would grow for ever over a long run; the benchmark does not read it.
  setInterval(() => (s3.requests.length = 0), 1000).unref();
  const stop = () => void s3.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdout.write(JSON.stringify({ endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials }) + '\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
