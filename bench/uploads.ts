/**
 * Direct upload benchmark (issue 15): a file of random bytes sent with tus-js-client (one PATCH)
 * to an upload session of Vidmill (compiled, run as `npm start` runs it: the node flags and
 * environment of package.json's start script, see productionStart in bench/lib.ts; embedded
 * default: SQLite, local-disk storage)
 * versus `curl -T` (a plain PUT) of the same file to a bare Node HTTP server that writes the
 * body to disk, interleaved in the same run; best of BENCH_UPLOADS_ROUNDS (2) each.
 * Targets: Vidmill's throughput >= 0.9x the bare server's; Vidmill's peak RSS (VmHWM, read at
 * the end, after the upload has also become the master video) < 200 MB.
 *
 * Throughput is in MB/s (10^6 bytes/s) over the file's bytes: for tus from the start of the
 * upload to its last PATCH answered 204 (every byte stored; moving it into platform storage and
 * the CRC-32C follow in the finishing job, timed separately and reported for information); for
 * curl its own time_total. Neither side fsyncs during the transfer. Each uploaded file is checked
 * (size, and for Vidmill the CRC-32C it records equals the source's).
 *
 *   npm run bench -- uploads
 *   BENCH_UPLOADS_MIB=128 npm run bench -- uploads     (quick, not the target's size)
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Upload } from 'tus-js-client';
import { buildDist, cleanEnv, freePort, installCleanupHandlers, makeRandomFile, onExit, printTable, productionStart, ROOT, sleep, spawnTracked, stopChild, waitForHttp } from './lib';

const MIB = 1024 * 1024;
const MB = 1e6;
const SIZE_MIB = process.env.BENCH_UPLOADS_MIB ? Number(process.env.BENCH_UPLOADS_MIB) : 1024;
const ROUNDS = Math.max(1, process.env.BENCH_UPLOADS_ROUNDS ? Number(process.env.BENCH_UPLOADS_ROUNDS) : 2);
const RATIO_TARGET = 0.9; // issue 28 (was 0.5)
const RSS_LIMIT = 200 * MB;
const EMAIL = 'bench@vidmill.local';
const PASSWORD = 'bench-password-1234';

/** The bare server: PUT bodies written to files in its directory. */
const BARE_SERVER = `
const http = require('node:http'); const fs = require('node:fs'); const path = require('node:path');
const { pipeline } = require('node:stream/promises');
const dir = process.argv[2];
http.createServer(async (req, res) => {
  if (req.method !== 'PUT') { res.statusCode = 405; return res.end(); }
  try { await pipeline(req, fs.createWriteStream(path.join(dir, path.basename(req.url)))); res.statusCode = 201; }
  catch { res.statusCode = 500; }
  res.end();
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

async function json(res: Response, what: string): Promise<any> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text}`);
  return JSON.parse(text);
}

function peakRss(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export async function uploadsBenchmark(): Promise<boolean> {
  installCleanupHandlers();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'vidmill-bench-uploads-'));
  const cancel = onExit(() => rmSync(tmp, { recursive: true, force: true }));
  const size = SIZE_MIB * MIB;
  const source = path.join(tmp, 'source.bin');
  console.log(`writing ${SIZE_MIB} MiB of random bytes ...`);
  const crc = makeRandomFile(source, size);
  const dataDir = path.join(tmp, 'data');
  const bareDir = path.join(tmp, 'bare');
  mkdirSync(dataDir);
  mkdirSync(bareDir);
  const barePath = path.join(tmp, 'bare-server.cjs');
  writeFileSync(barePath, BARE_SERVER);

  const vidmillPort = await freePort();
  const barePort = await freePort();
  const base = `http://127.0.0.1:${vidmillPort}`;
  const errFd = openSync(path.join(tmp, 'vidmill.stderr'), 'a');
  // The compiled server, as `npm start` runs it: its Node flags and environment from package.json
  // (tsx's compiler would add its own memory).
  console.log('npm run build ...');
  buildDist();
  const start = productionStart();
  console.log(
    `Vidmill as npm start runs it: ${Object.entries(start.env)
      .map(([k, v]) => `${k}=${v} `)
      .join('')}node ${start.args.join(' ')}`,
  );
  const vidmill = spawnTracked(process.execPath, start.args, {
    cwd: ROOT,
    stdio: ['ignore', errFd, errFd],
    env: {
      ...cleanEnv(),
      ...start.env,
      NODE_ENV: 'production',
      VIDMILL_DATA_DIR: dataDir,
      VIDMILL_HOST: '127.0.0.1',
      VIDMILL_PORT: String(vidmillPort),
      VIDMILL_BOOTSTRAP_EMAIL: EMAIL,
      VIDMILL_BOOTSTRAP_PASSWORD: PASSWORD,
      VIDMILL_LOG_LEVEL: 'warn',
    },
  });
  const bare = spawnTracked(process.execPath, [barePath, bareDir], { stdio: 'ignore', env: { ...process.env, PORT: String(barePort) } });
  try {
    await waitForHttp(`${base}/readyz`, vidmill, 'Vidmill', 60_000);
    await sleep(300);
    const basic = 'Basic ' + Buffer.from(`${EMAIL}:${PASSWORD}`).toString('base64');
    const key = await json(
      await fetch(`${base}/api/v1/api-keys`, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench', active: true }) }),
      'create API key',
    );
    const auth = { 'X-API-Key': key.apiKey as string, 'content-type': 'application/json' };
    // Before any upload: the process after start and its first API requests (contract validator built).
    const rssBefore = peakRss(vidmill.pid!);
    const bareBefore = peakRss(bare.pid!);
    const data = readFileSync(source);
    const tusRuns: number[] = [];
    const curlRuns: number[] = [];
    const finishRuns: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // -- Vidmill: a session, then tus-js-client with the URL.
      execFileSync('sync');
      const s = await json(await fetch(`${base}/api/v1/videos/in/uploads`, { method: 'POST', headers: auth, body: JSON.stringify({ name: `bench ${round}`, size }) }), 'create upload');
      const url = new URL(new URL(s.uploadUrl).pathname + new URL(s.uploadUrl).search, base).toString();
      const t0 = process.hrtime.bigint();
      await new Promise<void>((resolve, reject) => {
        new Upload(data, { uploadUrl: url, chunkSize: Infinity, retryDelays: [], storeFingerprintForResuming: false, onSuccess: () => resolve(), onError: reject }).start();
      });
      const uploaded = Number(process.hrtime.bigint() - t0) / 1e9;
      tusRuns.push(uploaded);
      for (;;) {
        const st = await json(await fetch(`${base}/api/v1/videos/${s.videoId}/in/status`, { headers: auth }), 'status');
        const state = st.upload?.uploadState;
        if (state?.uploadStatus === 'DONE') break;
        if (state?.uploadStatus === 'FAILED') throw new Error(`upload failed: ${JSON.stringify(state.error)}`);
        await sleep(50);
      }
      finishRuns.push(Number(process.hrtime.bigint() - t0) / 1e9 - uploaded);
      const video = await json(await fetch(`${base}/api/v1/videos/${s.videoId}`, { headers: auth }), 'video');
      const stored = statSync(path.join(dataDir, 'blobs', 'videos', s.videoId, 'file')).size;
      if (stored !== size) throw new Error(`Vidmill stored ${stored} bytes, not ${size}`);
      if (video.crc32c !== undefined && Number(video.crc32c) !== crc) throw new Error('Vidmill recorded another CRC-32C');
      // -- The bare PUT.
      execFileSync('sync');
      const out = execFileSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code} %{time_total}', '-T', source, `http://127.0.0.1:${barePort}/upload-${round}.bin`], { encoding: 'utf8' });
      const [code, seconds] = out.trim().split(' ');
      if (code !== '201') throw new Error(`bare server answered ${code}`);
      if (statSync(path.join(bareDir, `upload-${round}.bin`)).size !== size) throw new Error('bare server stored a different size');
      curlRuns.push(Number(seconds));
      rmSync(path.join(bareDir, `upload-${round}.bin`));
      console.log(`round ${round}: tus ${(size / uploaded / MB).toFixed(0)} MB/s, curl PUT ${(size / Number(seconds) / MB).toFixed(0)} MB/s`);
    }
    const rss = peakRss(vidmill.pid!);
    const best = (xs: number[]) => Math.min(...xs);
    const tusMbps = size / best(tusRuns) / MB;
    const curlMbps = size / best(curlRuns) / MB;
    printTable([
      { run: 'Vidmill tus (tus-js-client, one PATCH)', 'MB/s': tusMbps.toFixed(0), seconds: best(tusRuns).toFixed(2) },
      { run: 'bare Node server, curl -T PUT', 'MB/s': curlMbps.toFixed(0), seconds: best(curlRuns).toFixed(2) },
      { run: 'Vidmill finishing job after the last byte (info)', 'MB/s': '', seconds: best(finishRuns).toFixed(2) },
    ]);
    const ratio = tusMbps / curlMbps;
    const ratioOk = ratio >= RATIO_TARGET;
    const rssOk = rss !== undefined && rss < RSS_LIMIT;
    console.log(`throughput ratio tus / bare PUT: ${ratio.toFixed(2)}x (target >= ${RATIO_TARGET}x) ${ratioOk ? 'PASS' : 'FAIL'}`);
    console.log(`Vidmill peak RSS: ${rss === undefined ? 'unknown' : `${(rss / MB).toFixed(0)} MB`} (target < ${RSS_LIMIT / MB} MB) ${rssOk ? 'PASS' : 'FAIL'}`);
    const bareAfter = peakRss(bare.pid!);
    const mb = (x: number | undefined) => (x === undefined ? 'unknown' : `${(x / MB).toFixed(0)} MB`);
    console.log(`(Vidmill peak RSS before the first upload: ${mb(rssBefore)}, so the uploads added ${mb(rss! - rssBefore!)};`);
    console.log(` the bare server's peak RSS: ${mb(bareBefore)} before, ${mb(bareAfter)} after, added ${mb(bareAfter! - bareBefore!)})`);
    if (SIZE_MIB !== 1024) console.log(`note: ${SIZE_MIB} MiB, not the target's 1 GiB (BENCH_UPLOADS_MIB)`);
    return ratioOk && rssOk;
  } catch (err) {
    const stderr = readFileSync(path.join(tmp, 'vidmill.stderr'), 'utf8');
    if (stderr.trim()) console.error(`Vidmill's stderr (last lines):\n${stderr.split('\n').slice(-30).join('\n')}`);
    throw err;
  } finally {
    await stopChild(bare);
    await stopChild(vidmill);
    closeSync(errFd);
    rmSync(tmp, { recursive: true, force: true });
    cancel();
  }
}
