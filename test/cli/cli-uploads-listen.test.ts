// test-databases: one
// (SQLite only: its subject is the CLI's uploads and listener commands; the API's SQL is tested on PostgreSQL by the scenario files.)
/**
 * The CLI and the SDK against the server's direct resumable uploads (tus) and webhook listeners.
 *
 * - `videos upload`: progress lines, Ctrl-C (exit 130) in the middle keeps the session in the
 *   state folder, the same command resumes it from the server's offset into the same video
 *   (`--wait` follows ingestion to the end), and the session is forgotten afterwards.
 * - `videos upload` on a terminal: the bar with rate and ETA, redrawn in place.
 * - `uploadFile` (SDK): aborted through its signal from one client instance, resumed by another
 *   client instance sharing the file resume store, from the offset the server holds.
 * - `webhooks listen`: events of the team are forwarded to a local receiver with headers and body
 *   verbatim, and the receiver verifies the signature with the published public keys; a line per
 *   delivery; Ctrl-C deletes the listener.
 */
import { strict as assert } from 'node:assert';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createVidmillClient } from '../../sdk/src/client';
import { fileResumeStore, uploadFile } from '../../sdk/src/upload-file';
import { setFreeClipEnabled } from '../../src/features/ingestion/testing';
import { cliCommandLine, runCli, runInTerminal, startCliServer, type CliServer } from '../helpers/cli';
import { TEST_DIALECT } from '../helpers/database';
import type { TestUser } from '../helpers/harness';
import { fixtureBytes } from '../helpers/media-fixtures';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { waitFor } from '../helpers/scenario';
import { startReceiver } from '../helpers/webhook-receiver';
import { scaled } from '../helpers/timeouts';

describe(`vidmill CLI: uploads and webhooks listen (${TEST_DIALECT})`, function () {
  this.timeout(scaled(120_000));
  let media: RangeServer;
  let s: CliServer;
  let u: TestUser;
  const env = (extra: Record<string, string | undefined> = {}) => ({ VIDMILL_URL: s.url, VIDMILL_API_KEY: u.apiKey, VIDMILL_CONFIG: path.join(s.home, 'config.json'), ...extra });
  const get = (p: string) => s.h.request.get(`/api${p}`).set('X-API-Key', u.apiKey);
  const post = (p: string, body: object) => s.h.request.post(`/api${p}`).set('X-API-Key', u.apiKey).send(body);
  /** A real video of several MB (lossless H.264), so an upload in small chunks takes many requests. */
  const bigVideo = () => fixtureBytes({ seconds: 4, width: 640, height: 480, video: ['-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', '-pix_fmt', 'yuv420p'] });

  before(async () => {
    media = await startRangeServer();
  });
  after(() => media.close());
  beforeEach(async () => {
    s = await startCliServer({ allowPrivateUrls: true, extraCa: [media.ca] });
    u = await s.h.user();
    await setFreeClipEnabled(s.h.database.db, u.teamId, false);
    s.h.startWorker({ concurrency: 2 });
  });
  afterEach(() => s.close());

  it('videos upload: Ctrl-C in the middle exits 130 and keeps the session; the same command resumes it from the offset into the same video, --wait follows ingestion', async () => {
    const data = bigVideo();
    assert.ok(data.length > 2_000_000, `a big enough file (${data.length} bytes)`);
    const file = path.join(s.home, 'holiday.mp4');
    writeFileSync(file, data);
    const args = ['videos', 'upload', file, '--name', 'Holiday', '--chunk-size', '65536'];

    const first = runCli(args, env(), { cwd: s.home });
    await waitFor('10 % uploaded', () => /^upload: [1-9]\d%/m.test(first.stderr()), { timeoutMs: 60_000, intervalMs: 5 });
    first.child.kill('SIGINT');
    const interrupted = await first;
    assert.equal(interrupted.code, 130, interrupted.stderr);
    const videoId = /Uploading to video (\S+)/.exec(interrupted.stderr)?.[1];
    assert.ok(videoId, interrupted.stderr);
    assert.match(interrupted.stderr, /interrupted; run the same command again to resume it/);
    const sessions = JSON.parse(readFileSync(path.join(s.home, 'uploads.json'), 'utf8'));
    assert.deepEqual(
      Object.values(sessions).map((v: any) => v.videoId),
      [videoId],
    );
    const partly = (await get(`/v1/videos/${videoId}/in/status`)).body.upload.uploadState;
    assert.ok(partly.bytesTransferred > 0 && partly.bytesTransferred < data.length, `part of the file on the server: ${JSON.stringify(partly)}`);

    const second = await runCli([...args, '--wait', '--json'], env(), { cwd: s.home });
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr, new RegExp(`Resuming the upload of video ${videoId}`));
    const firstLine = /^upload: (\d+)%/m.exec(second.stderr);
    assert.ok(firstLine && Number(firstLine[1]) >= Math.floor((partly.bytesTransferred * 100) / data.length), `continued from the offset: ${second.stderr}`);
    const video = JSON.parse(second.stdout);
    assert.equal(video.id, videoId, 'the same video');
    assert.equal(video.name, 'Holiday');
    assert.equal(video.upload.file.size, data.length);
    assert.equal(video.upload.uploadState.uploadStatus, 'DONE');
    assert.equal(video.upload.uploadState.bytesTransferred, data.length);
    assert.equal(video.ingestion.ingestionState.ingestionStatus, 'DONE');
    assert.deepEqual(JSON.parse(readFileSync(path.join(s.home, 'uploads.json'), 'utf8')), {}, 'the finished session is forgotten');
    const listed = JSON.parse((await runCli(['videos', 'list', '--json'], env())).stdout);
    assert.ok(listed.items.filter((v: any) => v.name === 'Holiday').length === 1, 'one video, not two');
  });

  it('videos upload draws a progress bar with rate and ETA in a pseudo-terminal', async () => {
    const file = path.join(s.home, 'bar.mp4');
    writeFileSync(file, bigVideo());
    const res = await runInTerminal(cliCommandLine(['videos', 'upload', file, '--chunk-size', '65536']), env(), s.home);
    assert.equal(res.code, 0, res.output);
    const ESC = String.fromCharCode(27);
    const draws = res.output.split(new RegExp(`${ESC}\\[1G|\\r(?!\\n)`)).filter((d) => /upload \[[#-]{30}\]/.test(d));
    assert.ok(draws.length >= 2, `redrawn in place: ${JSON.stringify(res.output)}`);
    assert.match(draws[draws.length - 1]!, /upload \[#{30}\] 100% \| [\d.]+ MB of [\d.]+ MB \| [\d.]+ [kMG]?B\/s \| ETA \d+s/);
  });

  it('uploadFile: aborted in one client instance, resumed by another from the offset the server holds', async () => {
    const data = bigVideo();
    const file = path.join(s.home, 'sdk.mp4');
    writeFileSync(file, data);
    const storeFile = path.join(s.home, 'sdk-uploads.json');
    const abort = new AbortController();
    const a = createVidmillClient({ baseUrl: s.url, apiKey: u.apiKey });
    let sessionVideo: string | undefined;
    await assert.rejects(
      uploadFile(a, file, {
        chunkSize: 128 * 1024,
        resumeStore: fileResumeStore(storeFile),
        signal: abort.signal,
        onSession: (session) => (sessionVideo = session.videoId),
        onProgress: (sent, total) => {
          if (sent > total / 3) abort.abort();
        },
      }),
    );
    assert.ok(sessionVideo);
    assert.ok(existsSync(storeFile));
    const held = (await get(`/v1/videos/${sessionVideo}/in/status`)).body.upload.uploadState.bytesTransferred;
    assert.ok(held > 0 && held < data.length, `bytes held: ${held}`);

    const b = createVidmillClient({ baseUrl: s.url, apiKey: u.apiKey });
    const progress: number[] = [];
    const done = await uploadFile(b, file, { chunkSize: 128 * 1024, resumeStore: fileResumeStore(storeFile), onProgress: (sent) => progress.push(sent) });
    assert.deepEqual(done, { videoId: sessionVideo, resumed: true });
    assert.ok(progress[0]! >= held, `resumed from ${held}, first progress ${progress[0]}`);
    assert.equal(progress[progress.length - 1], data.length);
    assert.equal(await fileResumeStore(storeFile).get(Object.keys(JSON.parse(readFileSync(storeFile, 'utf8')))[0] ?? 'none'), undefined);
    await waitFor('the upload stored', async () => (await get(`/v1/videos/${sessionVideo}/in/status`)).body.upload.uploadState.uploadStatus === 'DONE', { timeoutMs: 30_000 });
  });

  it('webhooks listen forwards the team’s events to a local URL with a signature that verifies, prints a line per delivery, and deletes the listener on Ctrl-C', async () => {
    const keyFromApi = async (id: string) => {
      const res = await get(`/v1/webhooks/public-keys/${id}`);
      return res.status === 200 ? (res.body.publicKey as string) : undefined;
    };
    const receiver = await startReceiver({ now: () => s.h.clock.now(), fetchKey: keyFromApi });
    try {
      const listen = runCli(['webhooks', 'listen', '--events', 'video_in', '--forward-to', receiver.url, '--wait-seconds', '1'], env(), { cwd: s.home });
      await waitFor('the listener', () => /Listening for video_in\.started, video_in\.done, video_in\.failed \(listener (\S+)\)/.test(listen.stderr()), { timeoutMs: 20_000 });
      const listenerId = /\(listener (\S+)\)/.exec(listen.stderr())![1]!;

      media.serve('/media/listen.mp4', fixtureBytes({ seconds: 1 }));
      const imported = await post('/v1/videos/in/https', { name: 'Listened', url: `${media.origin}/media/listen.mp4` });
      assert.equal(imported.status, 202, JSON.stringify(imported.body));
      const received = await receiver.waitFor(2, 30_000);
      for (const r of received) {
        assert.ok(r.verified, `signature verifies: ${r.verifyError}`);
        assert.equal(r.json.data.videoId, imported.body.videoId);
      }
      assert.deepEqual(received.map((r) => r.json.eventType).sort(), ['video_in.done', 'video_in.started']);
      await waitFor('two lines', () => (listen.stdout().match(/-> 200$/gm) ?? []).length >= 2, { timeoutMs: 10_000 });
      assert.match(listen.stdout(), /^\S+Z {2}video_in\.started +\S+ {2}-> 200$/m);

      listen.child.kill('SIGINT');
      const ended = await listen;
      assert.equal(ended.code, 130, ended.stderr);
      assert.match(ended.stderr, new RegExp(`Listener ${listenerId} deleted`));
      assert.equal((await get(`/v1/webhooks/listeners/${listenerId}/deliveries`)).status, 404, 'the listener is gone');
    } finally {
      await receiver.close();
    }
  });
});
