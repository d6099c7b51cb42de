/**
 * Compare with (`getVideoComparisonLink`) and the comparison page: every 404/409 rule, the
 * signed page link, and the page itself in the system's chromium (two real web videos made with
 * ffmpeg, played in sync under a wipe slider, seeked, frame-stepped, wiped, screenshotted).
 * Videos are written through the stores as video in and ingestion do; their WEB_VIDEO assets
 * are real MP4 files in platform storage.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Express } from 'express';
import type { Browser, Page } from 'playwright-core';
import { assertChromiumInstalled, launchChromium } from '../helpers/chromium';
import { recordVideoAsset } from '../../src/features/videos';
import { IngestionUpdate, insertVideo, NewVideo, videoStageWrites } from '../../src/features/videos/testing';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, expectError, Harness, TestUser } from '../helpers/harness';
import { waitFor } from '../helpers/scenario';
import { fixtureVideo } from '../helpers/media-fixtures';
import { scaled } from '../helpers/timeouts';

const SECONDS = 5;
const FPS = 25;
/** testsrc2, and the same picture negated: the right video is visibly different. */
const PLAIN = { seconds: SECONDS, width: 320, height: 240, fps: FPS };
const NEGATED = { ...PLAIN, extra: ['-vf', 'negate'] };

interface VideoOpts extends Partial<NewVideo> {
  user?: TestUser;
  ingestion?: IngestionUpdate | null;
  durationMs?: number;
  /** Store a real WEB_VIDEO asset (default true when the web video is available). */
  webVideo?: 'plain' | 'negated' | false;
}

/** Inserts videos as video in and ingestion leave them; fully ingested unless told otherwise. */
function videoMaker(h: () => Harness, owner: () => TestUser) {
  const projects = new Map<string, string>();
  return async function video(opts: VideoOpts = {}): Promise<string> {
    const user = opts.user ?? owner();
    const id = randomUUID();
    const kind = opts.kind ?? 'MASTER';
    const db = h().database.db;
    h().clock.advance(1000);
    let projectId = projects.get(user.teamId);
    if (!projectId) {
      projectId = (await h().request.get('/api/v1/projects/default').set('X-API-Key', user.apiKey)).body.id as string;
      projects.set(user.teamId, projectId);
    }
    await insertVideo(db, {
      id,
      kind,
      teamId: user.teamId,
      projectId,
      userId: user.userId,
      name: opts.name ?? `${kind.toLowerCase()} ${id.slice(0, 8)}`,
      masterVideoId: opts.masterVideoId,
      sourceVideoId: opts.sourceVideoId ?? opts.masterVideoId,
      clipId: kind === 'CLIP' ? id : opts.clipId,
      fullIngestion: opts.fullIngestion ?? true,
      uploadStatus: kind === 'MASTER' ? 'DONE' : undefined,
      createdAt: h().clock.now(),
    });
    const ingestion: IngestionUpdate | null =
      opts.ingestion === undefined
        ? {
            status: 'DONE',
            progress: 100,
            metadataAvailable: true,
            thumbnailsAvailable: true,
            fullFramesAvailable: true,
            webVideoAvailable: true,
            metadata: { durationInMillis: opts.durationMs ?? SECONDS * 1000, averageFrameRate: { frameRate: FPS, rational: `${FPS}:1` }, frameWidth: 320, frameHeight: 240 },
          }
        : opts.ingestion;
    if (ingestion) await videoStageWrites.updateIngestion(db, id, ingestion, h().clock.now());
    const web = opts.webVideo ?? (ingestion?.webVideoAvailable ? 'plain' : false);
    if (web) {
      const data = readFileSync(fixtureVideo(web === 'plain' ? PLAIN : NEGATED));
      const blobKey = `videos/${id}/assets/web_video-1.mp4`;
      await h().services.blobs.put(blobKey, data, { contentType: 'video/mp4' });
      await recordVideoAsset(db, {
        id: randomUUID(),
        videoId: id,
        kind: 'WEB_VIDEO',
        ordinal: 1,
        blobKey,
        contentType: 'video/mp4',
        size: data.length,
        width: 320,
        height: 240,
        createdAt: h().clock.now(),
      });
    }
    return id;
  };
}

describe(`Compare with (${TEST_DIALECT})`, function () {
  this.timeout(scaled(60_000));
  let h: Harness;
  let u: TestUser;
  const video = videoMaker(
    () => h,
    () => u,
  );
  const compare = (left: string, right: string, user: TestUser = u) => h.request.get(`/api/v1/videos/${left}/compare-with/${right}`).set('X-API-Key', user.apiKey);
  /** A master and a processed video of it, both fully ingested with real web videos. */
  const pair = async (processed: Partial<VideoOpts> = {}) => {
    const master = await video({ name: 'Master' });
    const derived = await video({ kind: 'PROCESSED', masterVideoId: master, name: 'Processed', webVideo: 'negated', ...processed });
    return { master, derived };
  };
  /** The path and query of an absolute link (supertest talks to the app, not to publicUrl). */
  const local = (link: string) => {
    const url = new URL(link);
    return url.pathname + url.search;
  };

  beforeEach(async () => {
    h = await createHarness({ publicUrl: 'https://vidmill.example.com/base' });
    u = await h.user();
  });
  afterEach(() => h.close());

  describe('getVideoComparisonLink', () => {
    it('answers { link, leftVideoId, rightVideoId }: an absolute signed link under publicUrl, valid 24 h', async () => {
      const { master, derived } = await pair();
      const res = await compare(master, derived);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(Object.keys(res.body).sort(), ['leftVideoId', 'link', 'rightVideoId']);
      assert.equal(res.body.leftVideoId, master);
      assert.equal(res.body.rightVideoId, derived);
      const link = new URL(res.body.link);
      assert.equal(link.origin, 'https://vidmill.example.com');
      assert.equal(link.pathname, `/base/media/v1/compare/${master}/${derived}`);
      assert.deepEqual([...link.searchParams.keys()].sort(), ['expires', 'signature']);
      assert.equal(Number(link.searchParams.get('expires')), Math.floor(h.clock.now().getTime() / 1000) + 24 * 3600);
      // The other way round is allowed too: the derived video on the left.
      const back = await compare(derived, master);
      assert.equal(back.status, 200);
      assert.deepEqual([back.body.leftVideoId, back.body.rightVideoId], [derived, master]);
    });

    it('two derived videos of the same master (the free clip and a processed clip) can be compared', async () => {
      const master = await video({ durationMs: 60_000 });
      const clip = await video({ kind: 'CLIP', masterVideoId: master, durationMs: 10_000 });
      const processedClip = await video({ kind: 'PROCESSED', masterVideoId: master, sourceVideoId: clip, clipId: clip, durationMs: 10_040, webVideo: 'negated' });
      const res = await compare(clip, processedClip);
      assert.equal(res.status, 200, JSON.stringify(res.body));
    });

    it('404 when the video is not visible to the caller', async () => {
      const other = await h.user();
      const { master, derived } = await pair();
      const foreign = await video({ user: other });
      expectError(await compare(foreign, derived), 404, 'RESOURCE_NOT_FOUND');
      expectError(await compare(master, derived, other), 404, 'RESOURCE_NOT_FOUND');
      expectError(await compare(randomUUID(), derived), 404, 'RESOURCE_NOT_FOUND');
    });

    it('404 when the target video is not visible to the caller', async () => {
      const other = await h.user();
      const { master } = await pair();
      const foreignDerived = await video({ user: other, kind: 'PROCESSED', masterVideoId: master });
      const res = await compare(master, foreignDerived);
      expectError(res, 404, 'RESOURCE_NOT_FOUND');
      assert.match(res.body.message, new RegExp(foreignDerived));
      expectError(await compare(master, randomUUID()), 404, 'RESOURCE_NOT_FOUND');
    });

    it('409 VIDEO_COMPARISON_CONFLICT when a video is compared with itself', async () => {
      const { master } = await pair();
      const res = await compare(master, master);
      expectError(res, 409, 'VIDEO_COMPARISON_CONFLICT');
      assert.match(res.body.message, /itself/);
    });

    it('409 VIDEO_NOT_FULLY_INGESTED when the ingestion is not DONE (naming the video)', async () => {
      const master = await video();
      const derived = await video({
        kind: 'PROCESSED',
        masterVideoId: master,
        ingestion: { status: 'IN_PROGRESS', progress: 40, metadataAvailable: true, fullFramesAvailable: true, metadata: { durationInMillis: 5000 } },
      });
      const res = await compare(derived, master);
      expectError(res, 409, 'VIDEO_NOT_FULLY_INGESTED');
      assert.match(res.body.message, new RegExp(`video ${derived} is not fully ingested: ingestion is IN_PROGRESS; the web video is not available`));
      const never = await video({ kind: 'PROCESSED', masterVideoId: master, ingestion: null });
      const res2 = await compare(never, master);
      expectError(res2, 409, 'VIDEO_NOT_FULLY_INGESTED');
      assert.match(res2.body.message, /ingestion has not started/);
    });

    it('409 VIDEO_NOT_FULLY_INGESTED when the web video is not available', async () => {
      const master = await video({ fullIngestion: false, ingestion: { status: 'DONE', progress: 100, metadataAvailable: true, metadata: { durationInMillis: 5000 } } });
      const derived = await video({ kind: 'PROCESSED', masterVideoId: master });
      const res = await compare(master, derived);
      expectError(res, 409, 'VIDEO_NOT_FULLY_INGESTED');
      assert.match(res.body.message, new RegExp(`${master} is not fully ingested: the full frames are not available; the web video is not available`));
      assert.match(res.body.message, /without fullIngestion/);
      // The flag says available but no WEB_VIDEO asset is stored.
      const unstored = await video({ kind: 'PROCESSED', masterVideoId: master, webVideo: false });
      expectError(await compare(unstored, derived), 409, 'VIDEO_NOT_FULLY_INGESTED');
    });

    it('409 VIDEO_NOT_FULLY_INGESTED when the full frames are not available', async () => {
      const master = await video();
      const derived = await video({
        kind: 'PROCESSED',
        masterVideoId: master,
        ingestion: { status: 'DONE', progress: 100, metadataAvailable: true, webVideoAvailable: true, fullFramesAvailable: false, metadata: { durationInMillis: 5000 } },
      });
      const res = await compare(master, derived);
      expectError(res, 409, 'VIDEO_NOT_FULLY_INGESTED');
      assert.equal(res.body.message, `The target video ${derived} is not fully ingested: the full frames are not available`);
    });

    it('409 VIDEO_NOT_FULLY_INGESTED when the duration is unknown', async () => {
      const master = await video();
      const derived = await video({
        kind: 'PROCESSED',
        masterVideoId: master,
        ingestion: { status: 'DONE', progress: 100, metadataAvailable: false, webVideoAvailable: true, fullFramesAvailable: true },
      });
      const res = await compare(master, derived);
      expectError(res, 409, 'VIDEO_NOT_FULLY_INGESTED');
      assert.match(res.body.message, /duration is unknown/);
    });

    it('409 VIDEO_COMPARISON_CONFLICT when the videos do not share a master', async () => {
      const a = await video();
      const b = await video();
      const derivedOfB = await video({ kind: 'PROCESSED', masterVideoId: b });
      const res = await compare(a, b);
      expectError(res, 409, 'VIDEO_COMPARISON_CONFLICT');
      assert.match(res.body.message, new RegExp(`${a} belongs to master ${a}, ${b} to master ${b}`));
      expectError(await compare(a, derivedOfB), 409, 'VIDEO_COMPARISON_CONFLICT');
      const clipOfA = await video({ kind: 'CLIP', masterVideoId: a });
      expectError(await compare(clipOfA, derivedOfB), 409, 'VIDEO_COMPARISON_CONFLICT');
    });

    it('409 VIDEO_COMPARISON_CONFLICT when the durations differ by more than max(1 s, 5 %)', async () => {
      const cases: Array<[number, number, boolean]> = [
        [5_000, 6_000, true], // 1 s apart: the 1 s floor
        [5_000, 6_001, false],
        [60_000, 63_000, true], // 5 % of 63 s = 3.15 s
        [60_000, 63_500, false], // 5 % of 63.5 s = 3.175 s
        [60_000, 10_000, false], // a master and its free clip
      ];
      for (const [l, r, ok] of cases) {
        const master = await video({ durationMs: l });
        const derived = await video({ kind: 'PROCESSED', masterVideoId: master, durationMs: r });
        const res = await compare(master, derived);
        if (ok) assert.equal(res.status, 200, `${l} vs ${r}: ${JSON.stringify(res.body)}`);
        else {
          expectError(res, 409, 'VIDEO_COMPARISON_CONFLICT');
          assert.match(res.body.message, /durations are not similar/);
        }
      }
    });
  });

  describe('the comparison page', () => {
    it('serves a self-contained page with a strict CSP, escaped names and fresh signed links to both web videos', async () => {
      const { master, derived } = await pair({ name: `<script>alert("x")</script> & 'quoted'` });
      const link = (await compare(master, derived)).body.link as string;
      const res = await h.request.get(local(link).replace(/^\/base/, ''));
      assert.equal(res.status, 200, res.text);
      assert.match(String(res.headers['content-type']), /^text\/html; charset=utf-8/);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.headers['referrer-policy'], 'no-referrer');
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
      assert.match(csp, /style-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
      assert.match(csp, /media-src https:\/\/vidmill\.example\.com(;|$)/);
      assert.doesNotMatch(csp, /unsafe/);
      const html = res.text;
      assert.ok(!html.includes('<script>alert'), 'the name is escaped');
      assert.ok(html.includes('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#39;quoted&#39;'), 'escaped name in the page');
      assert.ok(html.includes('>Master<'), 'the left label');
      // No external resource: the only URLs are the two signed web-video links.
      const urls = [...html.matchAll(/(?:src|href)="([^"]*)"/g)].map((m) => m[1]!.replace(/&#38;/g, '&'));
      assert.deepEqual(urls.filter((x) => x !== 'data:,').length, 2, urls.join('\n'));
      const [leftVideo, rightVideo] = urls.filter((x) => x !== 'data:,');
      for (const [url, id] of [
        [leftVideo!, master],
        [rightVideo!, derived],
      ] as const) {
        const u2 = new URL(url);
        assert.equal(u2.origin, 'https://vidmill.example.com');
        assert.match(u2.pathname, new RegExp(`^/base/media/v1/videos/${id}/assets/`));
        assert.equal(u2.searchParams.get('expires'), new URL(link).searchParams.get('expires'), 'the video links expire with the page link');
        const media = await h.request.get(local(url).replace(/^\/base/, '')).set('Range', 'bytes=0-99');
        assert.equal(media.status, 206);
        assert.equal(media.headers['content-type'], 'video/mp4');
      }
    });

    it('an expired or tampered page link answers 403 ACCESS_DENIED with the Error body', async () => {
      const { master, derived } = await pair();
      const link = local((await compare(master, derived)).body.link).replace(/^\/base/, '');
      const tampered = link.replace(/signature=(.)/, (_m, c: string) => `signature=${c === 'A' ? 'B' : 'A'}`);
      expectError(await h.request.get(tampered), 403, 'ACCESS_DENIED');
      const swapped = `/media/v1/compare/${derived}/${master}?${link.split('?')[1]}`;
      expectError(await h.request.get(swapped), 403, 'ACCESS_DENIED');
      const later = link.replace(/expires=(\d+)/, (_m, e: string) => `expires=${Number(e) + 3600}`);
      expectError(await h.request.get(later), 403, 'ACCESS_DENIED');
      expectError(await h.request.get(link.split('?')[0]!), 403, 'ACCESS_DENIED');
      h.clock.advance(24 * 3600 * 1000 + 1000);
      const expired = await h.request.get(link);
      expectError(expired, 403, 'ACCESS_DENIED');
      assert.match(expired.body.message, /expired/);
    });

    it('404 NOT_FOUND when a compared video was deleted after the link was made', async () => {
      const { master, derived } = await pair();
      const link = local((await compare(master, derived)).body.link).replace(/^\/base/, '');
      const del = await h.request.delete(`/api/v1/videos/${derived}`).set('X-API-Key', u.apiKey);
      assert.equal(del.status, 200, JSON.stringify(del.body));
      expectError(await h.request.get(link), 404, 'NOT_FOUND');
      expectError(await h.request.get(`/media/v1/compare/not-a-uuid/${master}`), 404, 'NOT_FOUND');
    });
  });
});

describe(`Compare with: the page in chromium (${TEST_DIALECT})`, function () {
  this.timeout(scaled(60_000));
  let h: Harness;
  let u: TestUser;
  let app: Express | undefined;
  let server: http.Server | undefined;
  let base: string;
  let browser: Browser | undefined;
  let page: Page;
  const problems: string[] = [];
  const requested: string[] = [];
  const video = videoMaker(
    () => h,
    () => u,
  );

  before(async () => {
    assertChromiumInstalled();
    // Listen first, so publicUrl can name the ephemeral port the links must point at.
    const listening = http.createServer((req, res) => (app ? app(req, res) : res.writeHead(503).end()));
    server = listening;
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(0, '127.0.0.1', () => resolve());
    });
    base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    h = await createHarness({ publicUrl: base });
    app = h.app;
    u = await h.user();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 960, height: 640 } });
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
    });
    page.on('request', (req) => requested.push(req.url()));
  });

  after(async () => {
    await browser?.close();
    if (server) {
      const s = server;
      await new Promise<void>((resolve) => {
        s.close(() => resolve());
        s.closeAllConnections();
      });
    }
    await h?.close();
  });

  // Browser-side code is passed as source text: this project compiles without the DOM library,
  // and tsx's name helpers (`__name`) do not exist in the page.
  const inPage = <T>(expression: string) => page.evaluate<T>(expression);
  // Polled from here: waitForFunction would eval the text inside the page, which its CSP forbids.
  const until = (expression: string, timeoutMs = 10_000) =>
    waitFor(expression, () => inPage<boolean>(expression), { timeoutMs }).catch(async (e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(await times())}`);
    });
  const L = `document.getElementById('left')`;
  const R = `document.getElementById('right')`;
  const times = () => inPage<{ l: number; r: number; lPaused: boolean; rPaused: boolean }>(`({ l: ${L}.currentTime, r: ${R}.currentTime, lPaused: ${L}.paused, rPaused: ${R}.paused })`);
  const clipOfRight = () => inPage<string>(`getComputedStyle(${R}).clipPath`);

  it('plays both web videos in sync, seeks, steps frames, moves the wipe and saves a screenshot', async () => {
    const master = await video({ name: 'Master <original>' });
    const processed = await video({ kind: 'PROCESSED', masterVideoId: master, name: 'Processed "negated"', webVideo: 'negated' });
    const res = await h.request.get(`/api/v1/videos/${master}/compare-with/${processed}`).set('X-API-Key', u.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const link: string = res.body.link;
    assert.ok(link.startsWith(`${base}/media/v1/compare/`), link);

    await page.goto(link);
    assert.equal(await page.locator('#left-label').innerText(), 'Master <original>');
    assert.equal(await page.locator('#right-label').innerText(), 'Processed "negated"');
    await until(`${L}.readyState >= 3 && ${R}.readyState >= 3`);

    // The two videos really are different pictures (the right one is negated).
    const difference = await inPage<number>(`(() => {
      const pixels = (v) => {
        const c = document.createElement('canvas');
        c.width = 32;
        c.height = 24;
        const g = c.getContext('2d');
        g.drawImage(v, 0, 0, 32, 24);
        return g.getImageData(0, 0, 32, 24).data;
      };
      const a = pixels(${L}), b = pixels(${R});
      let sum = 0;
      for (let i = 0; i < a.length; i += 4) sum += Math.abs(a[i] - b[i]) + Math.abs(a[i + 1] - b[i + 1]) + Math.abs(a[i + 2] - b[i + 2]);
      return sum / (a.length / 4) / 3;
    })()`);
    assert.ok(difference > 40, `mean per-pixel difference of the two pictures: ${difference}`);

    // Play: both advance and stay within 0.1 s of each other for about 2 s.
    await page.locator('#play').click();
    await until(`${L}.currentTime > 0.05`);
    const samples: Array<{ l: number; r: number }> = [];
    const start = Date.now();
    while (Date.now() - start < 2_000) {
      samples.push(await times());
      await new Promise((r) => setTimeout(r, 100));
    }
    const first = samples[0];
    const last = samples[samples.length - 1];
    const worst = Math.max(...samples.map((s) => Math.abs(s.l - s.r)));
    console.log(
      `      ${samples.length} samples over 2 s: left ${first!.l.toFixed(3)} -> ${last!.l.toFixed(3)} s, right ${first!.r.toFixed(3)} -> ${last!.r.toFixed(3)} s, worst drift ${(worst * 1000).toFixed(1)} ms`,
    );
    assert.ok(last!.l - first!.l > 1.2, `the left video advanced ${last!.l - first!.l} s`);
    assert.ok(last!.r - first!.r > 1.2, `the right video advanced ${last!.r - first!.r} s`);
    assert.ok(worst < 0.1, `drift up to ${worst} s`);

    // The right video follows. Pushed 0.12 s ahead while playing, it is slowed down (playbackRate
    // nudge, no seek) until within one frame; pushed 0.6 s ahead, it seeks back.
    for (const [push, how] of [
      [0.12, 'slowed down'],
      [0.6, 'sought back'],
    ] as const) {
      await inPage(`${R}.currentTime = ${L}.currentTime + ${push}`);
      const pushed = Date.now();
      if (push < 0.3) await until(`${R}.playbackRate < ${L}.playbackRate`, 2_000);
      await until(`!${R}.seeking && Math.abs(${R}.currentTime - ${L}.currentTime) < ${1 / FPS}`, 2_500);
      const caughtUp = await times();
      console.log(`      the right video, pushed ${push} s ahead, was ${how} to within one frame in ${Date.now() - pushed} ms`);
      assert.ok(!caughtUp.lPaused && !caughtUp.rPaused, `both still playing: ${JSON.stringify(caughtUp)}`);
    }

    // Pause, then seek by clicking the seek bar at 20 %: both videos move there.
    await page.locator('#play').click();
    const paused = await times();
    assert.ok(paused.lPaused && paused.rPaused, 'both paused');
    const bar = (await page.locator('#seek').boundingBox())!;
    await page.mouse.click(bar.x + bar.width * 0.2, bar.y + bar.height / 2);
    await until(`!${L}.seeking && !${R}.seeking && ${L}.currentTime < 1.5 && Math.abs(${L}.currentTime - ${R}.currentTime) < 0.05`);
    const sought = await times();
    assert.ok(Math.abs(sought.l - 0.2 * SECONDS) < 0.4 && Math.abs(sought.r - sought.l) < 0.05, `after the seek: ${JSON.stringify(sought)}`);
    assert.ok(paused.l - sought.l > 1 && paused.r - sought.r > 1, `both moved back: ${JSON.stringify({ paused, sought })}`);

    // Frame steps: one frame forward, two back; both follow.
    const frame = 1 / FPS;
    const frameOf = (t: number) => Math.floor(t * FPS + 1e-6);
    const atFrame = (want: number) => until(`[${L}, ${R}].every((v) => !v.seeking && Math.floor(v.currentTime * ${FPS} + 1e-6) === ${want})`);
    await page.locator('#fwd').click();
    await atFrame(frameOf(sought.l) + 1);
    const stepped = await times();
    assert.equal(frameOf(stepped.l), frameOf(sought.l) + 1, `one frame forward: ${JSON.stringify({ sought, stepped })}`);
    assert.ok(Math.abs(stepped.r - stepped.l) < frame / 2, `the right video follows the step: ${JSON.stringify(stepped)}`);
    await page.locator('#back').click();
    await page.locator('#back').click();
    await atFrame(frameOf(sought.l) - 1);

    // Played to the end, both stop and the button offers Play; Play again starts both from 0.
    await page.mouse.click(bar.x + bar.width * 0.92, bar.y + bar.height / 2);
    await until(`!${L}.seeking && ${L}.currentTime > 4.2`);
    await page.locator('#play').click();
    await until(`${L}.ended`, 5_000);
    const ended = await times();
    assert.ok(ended.rPaused && Math.abs(ended.r - ended.l) < 0.1, `at the end: ${JSON.stringify(ended)}`);
    assert.equal(await page.locator('#play').getAttribute('aria-label'), 'Play');
    await page.locator('#play').click();
    await until(`!${L}.paused && !${R}.paused && ${L}.currentTime > 0.1 && ${L}.currentTime < 1.5`);
    await page.locator('#play').click();

    // The wipe: drag from the middle to a quarter of the width; the right video's clip follows.
    const before = await clipOfRight();
    assert.equal(before, 'inset(0px 0px 0px 50%)');
    const stage = (await page.locator('#stage').boundingBox())!;
    await page.mouse.move(stage.x + stage.width / 2, stage.y + stage.height / 2);
    await page.mouse.down();
    await page.mouse.move(stage.x + stage.width * 0.35, stage.y + stage.height / 2, { steps: 5 });
    await page.mouse.move(stage.x + stage.width * 0.25, stage.y + stage.height / 2, { steps: 5 });
    await page.mouse.up();
    const dragged = await clipOfRight();
    const pct = Number(/inset\(0px 0px 0px ([\d.]+)%\)/.exec(dragged)?.[1]);
    assert.ok(Math.abs(pct - 25) < 1, `clip after the drag: ${dragged}`);
    assert.equal(await page.locator('#divider').getAttribute('aria-valuenow'), '25');
    // Keyboard: the divider has focus after the drag; arrows move it by 1 % (10 % with shift).
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Shift+ArrowRight');
    assert.equal(await page.locator('#divider').getAttribute('aria-valuenow'), '36');
    assert.notEqual(await clipOfRight(), dragged);

    // Everything fits the viewport: both labels and the controls are in view without scrolling.
    await inPage(`window.scrollTo(0, 0)`);
    for (const sel of ['#left-label', '#right-label', '#stage', '#seek', '#play']) {
      const box = (await page.locator(sel).boundingBox())!;
      assert.ok(box.y >= 0 && box.y + box.height <= 640 && box.x >= 0 && box.x + box.width <= 960, `${sel} in view: ${JSON.stringify(box)}`);
    }
    const shot = path.join(os.tmpdir(), `vidmill-comparison-${process.pid}-${Date.now()}.png`);
    await page.screenshot({ path: shot });
    const png = readFileSync(shot);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG');
    assert.ok(statSync(shot).size > 20_000, `screenshot of ${statSync(shot).size} bytes`);
    console.log(`      screenshot: ${shot}`);

    // Responsive: on a phone-sized viewport nothing overflows sideways.
    await page.setViewportSize({ width: 390, height: 700 });
    const narrow = await inPage<{ scroll: number; stage: number }>(`({ scroll: document.documentElement.scrollWidth, stage: document.getElementById('stage').getBoundingClientRect().width })`);
    assert.ok(narrow.scroll <= 390 && narrow.stage <= 390 && narrow.stage > 300, JSON.stringify(narrow));

    // Nothing but this server was asked for anything, and the CSP blocked nothing.
    assert.deepEqual(
      requested.filter((r) => !r.startsWith(`${base}/`)),
      [],
    );
    assert.deepEqual(problems, []);
  });
});
