/**
 * Child process of the ingest benchmark: one copy with the copy engine (probe, createUpload,
 * copyRanges, complete) from an HTTPS range source into a LocalDiskStore, timed from the probe
 * to the completed object. Prints one JSON line with the time, the engine's CRC-32C and the
 * process's peak RSS (VmHWM), so the parent can check the copied file and the memory bound.
 *
 *   node --import tsx bench/ingest-copy.ts '{"url":"https://...","caFile":"ca.pem","root":"/tmp/x","key":"bench/copy","connections":10}'
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { HttpsRangeSource } from '../src/net/https-range-source';
import { LocalDiskStore } from '../src/storage/local-disk-store';
import { copyRanges } from '../src/storage/copy-engine';

interface Args {
  url: string;
  caFile: string;
  root: string;
  key: string;
  connections: number;
  partSize?: number;
}

export interface CopyRun {
  seconds: number;
  size: number;
  partSize: number;
  crc32c: number;
  retries: number;
  /** CPU time of this process (all threads) from the probe to the completed object, seconds. */
  cpuSeconds: number;
  /** Peak resident set size of this process (VmHWM), bytes. */
  peakRssBytes: number;
}

function vmHwmBytes(): number {
  const m = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : process.memoryUsage().rss;
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '') as Args;
  // As the video-in sources configure theirs (keep-alive, up to 64 sockets), trusting the test CA.
  const agent = new https.Agent({ ca: readFileSync(args.caFile, 'utf8'), keepAlive: true, maxSockets: 64 });
  const source = new HttpsRangeSource(args.url, { agent });
  const store = new LocalDiskStore(args.root);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const pinned = await source.probe();
  const upload = await store.createUpload(args.key, pinned.size, args.partSize ? { partSize: args.partSize } : {});
  const result = await copyRanges({ source, pinned, upload, concurrency: args.connections });
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  agent.destroy();
  const run: CopyRun = {
    seconds,
    size: result.size,
    partSize: upload.descriptor.partSize,
    crc32c: result.crc32c,
    retries: result.retries,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    peakRssBytes: vmHwmBytes(),
  };
  process.stdout.write(JSON.stringify(run) + '\n');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
