// test-databases: one
// (SQLite only: its subject is the CLI's arguments, output and terminal behaviour; the API's SQL is tested on PostgreSQL by the scenario files.)
/**
 * The `vidmill` CLI driven as a child process against a running server: results parsed from
 * `--json`, human tables, errors with errorCode and requestId and their exit codes, profiles,
 * the keys commands (HTTP Basic), a download's progress bar drawn in a pseudo-terminal, and
 * `process` followed until done.
 */
import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TEST_DIALECT } from '../helpers/database';
import { cliCommandLine, runCli, runInTerminal, startCliServerWithUser, type CliServer } from '../helpers/cli';
import type { TestUser } from '../helpers/harness';
import { fixtureBytes } from '../helpers/media-fixtures';
import { RangeServer, startRangeServer } from '../helpers/range-server';
import { storedVideo } from '../helpers/stored-video';
import { scaled } from '../helpers/timeouts';

describe(`vidmill CLI (${TEST_DIALECT})`, function () {
  this.timeout(scaled(120_000));
  let media: RangeServer;
  let s: CliServer;
  let u: TestUser;
  let n = 0;
  /** The environment of a user of the CLI: server, API key, a configuration file of their own. */
  const env = (extra: Record<string, string | undefined> = {}) => ({ VIDMILL_URL: s.url, VIDMILL_API_KEY: u.apiKey, VIDMILL_CONFIG: path.join(s.home, 'config.json'), ...extra });
  const cli = (args: string[], extra?: Record<string, string | undefined>) => runCli(args, env(extra), { cwd: s.home });
  const json = (out: string) => JSON.parse(out);
  /** A small real video served over HTTPS by the range server; its URL. */
  const served = (seconds = 2) => {
    const p = `/media/cli-${++n}.mp4`;
    media.serve(p, fixtureBytes({ seconds, width: 320, height: 240 }));
    return media.origin + p;
  };

  before(async () => {
    media = await startRangeServer();
  });
  after(() => media.close());
  beforeEach(async () => {
    ({ s, u } = await startCliServerWithUser({ allowPrivateUrls: true, extraCa: [media.ca] }));
  });
  afterEach(() => s.close());

  it('videos import --wait --json, then videos get --json and videos list (--json and the table) show the video', async () => {
    const imported = await cli(['videos', 'import', served(), '--name', 'Beach', '--wait', '--json']);
    assert.equal(imported.code, 0, imported.stderr);
    const video = json(imported.stdout);
    assert.equal(video.name, 'Beach');
    assert.equal(video.ingestion.ingestionState.ingestionStatus, 'DONE');
    assert.match(imported.stderr, /ingestion: 100%/, 'progress lines on stderr when it is no terminal');

    const got = await cli(['videos', 'get', video.id, '--json']);
    assert.equal(got.code, 0, got.stderr);
    assert.equal(json(got.stdout).id, video.id);
    assert.equal(json(got.stdout).upload.uploadState.uploadStatus, 'DONE');
    const human = await cli(['videos', 'get', video.id]);
    assert.match(human.stdout, new RegExp(`^id: +${video.id}$`, 'm'));
    assert.match(human.stdout, /^state: +ready$/m);

    const listed = await cli(['videos', 'list', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      json(listed.stdout).items.map((v: any) => v.id),
      [video.id],
    );
    const all = await cli(['videos', 'list', '--all', '--json']);
    assert.deepEqual(json(all.stdout), { items: json(listed.stdout).items, totalElements: 1 });
    const table = (await cli(['videos', 'list'])).stdout.split('\n');
    assert.match(table[0]!, /^ID +NAME +KIND +STATE +CREATED$/);
    assert.match(table[1]!, new RegExp(`^${video.id} +Beach +master +ready +\\d{4}-`));
  });

  it('an API error prints errorCode, message and requestId on stderr and exits 1 (as JSON with --json)', async () => {
    const missing = randomUUID();
    const res = await cli(['videos', 'get', missing]);
    assert.equal(res.code, 1);
    assert.equal(res.stdout, '');
    const m = /^Error: RESOURCE_NOT_FOUND: (.+) \(HTTP 404, requestId (\S+)\)$/m.exec(res.stderr);
    assert.ok(m, res.stderr);
    assert.ok(m[1]!.length > 3, 'a message');
    assert.notEqual(m[2], 'none');

    const asJson = await cli(['videos', 'get', missing, '--json']);
    assert.equal(asJson.code, 1);
    const { error } = json(asJson.stderr);
    assert.equal(error.errorCode, 'RESOURCE_NOT_FOUND');
    assert.equal(error.status, 404);
    assert.match(error.requestId, /\S{8,}/);
    assert.notEqual(error.requestId, m[2], 'each answer its own request id');

    const badKey = await cli(['videos', 'list'], { VIDMILL_API_KEY: 'not-a-key' });
    assert.equal(badKey.code, 1);
    assert.match(badKey.stderr, /^Error: \w+: .+ \(HTTP 401, requestId \S+\)$/m);
  });

  it('exit codes: 2 for usage (unknown command, bad option, no configuration, delete without --yes off a terminal), 3 when the server cannot be reached', async () => {
    assert.equal((await cli(['videos', 'frobnicate'])).code, 2);
    assert.equal((await cli(['videos', 'list', '--page', 'x'])).code, 2);
    const unconfigured = await runCli(['videos', 'list'], { VIDMILL_CONFIG: path.join(s.home, 'none.json') });
    assert.equal(unconfigured.code, 2);
    assert.match(unconfigured.stderr, /VIDMILL_URL/);
    const videoId = await storedVideo(s.h, u);
    const refused = await cli(['videos', 'delete', videoId]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--yes/);
    assert.equal((await cli(['videos', 'get', videoId])).code, 0, 'not deleted');
    const deleted = await cli(['videos', 'delete', videoId, '--yes', '--json']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.deepEqual(json(deleted.stdout), { removed: [videoId] });

    const down = await cli(['videos', 'list', '--retries', '1'], { VIDMILL_URL: 'http://127.0.0.1:1' });
    assert.equal(down.code, 3);
    assert.match(down.stderr, /^GET \/api\/v1\/videos failed; retrying in [\d.]+s$/m, 'a note per retry');
    assert.match(down.stderr, /^Error: Cannot reach the server: GET \S+ failed after 2 attempts/m);
  });

  it('a profile of the configuration file (--profile) gives the server and key; flags override it', async () => {
    const videoId = await storedVideo(s.h, u);
    const config = path.join(s.home, 'profiles.json');
    writeFileSync(config, JSON.stringify({ defaultProfile: 'broken', profiles: { broken: { url: 'http://127.0.0.1:1', apiKey: 'x' }, work: { url: s.url, apiKey: u.apiKey } } }));
    const base = { VIDMILL_CONFIG: config };
    const listed = await runCli(['--profile', 'work', 'videos', 'list', '--json'], base);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      json(listed.stdout).items.map((v: any) => v.id),
      [videoId],
    );
    assert.equal((await runCli(['videos', 'list', '--retries', '0'], base)).code, 3, 'the default profile is used without --profile');
    const flags = await runCli(['videos', 'list', '--json', '--url', s.url, '--api-key', u.apiKey], base);
    assert.equal(flags.code, 0, flags.stderr);
    const unknown = await runCli(['--profile', 'nope', 'videos', 'list'], base);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /No profile "nope"/);
  });

  it('keys create, list and delete sign in with e-mail and VIDMILL_PASSWORD; the new key works', async () => {
    const basic = { VIDMILL_API_KEY: undefined, VIDMILL_EMAIL: u.email, VIDMILL_PASSWORD: u.password };
    const created = await cli(['keys', 'create', '--name', 'laptop', '--json'], basic);
    assert.equal(created.code, 0, created.stderr);
    const key = json(created.stdout);
    assert.equal(key.name, 'laptop');
    assert.ok(key.apiKey, 'the secret is shown once');
    assert.equal((await cli(['videos', 'list'], { VIDMILL_API_KEY: key.apiKey })).code, 0, 'the new key works');
    const listed = json((await cli(['keys', 'list', '--json'], basic)).stdout);
    assert.deepEqual(listed.items.map((k: any) => k.name).sort(), ['laptop', 'test key']);
    const human = (await cli(['keys', 'list'], basic)).stdout;
    assert.match(human, new RegExp(`^${key.id} +laptop +yes `, 'm'));
    const active = await cli(['keys', 'delete', key.id], basic);
    assert.equal(active.code, 1);
    assert.match(active.stderr, /^Error: ACTIVE_API_KEY_CANNOT_BE_DELETED: /m);
    const deleted = await cli(['keys', 'delete', key.id, '--deactivate'], basic);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, new RegExp(`Deleted API key ${key.id}`));
    const wrong = await cli(['keys', 'list'], { ...basic, VIDMILL_PASSWORD: 'wrong' });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /\(HTTP 401, requestId \S+\)/);
    const noEmail = await cli(['keys', 'list'], { VIDMILL_API_KEY: undefined, VIDMILL_PASSWORD: 'x' });
    assert.equal(noEmail.code, 2);
  });

  it('download draws a progress bar with rate and ETA, redrawn in place, in a pseudo-terminal; the file and its CRC-32C match', async () => {
    const data = randomBytes(8 * 1024 * 1024);
    const videoId = await storedVideo(s.h, u, { data, fileName: 'big.mp4' });
    const out = path.join(s.home, 'out.mp4');
    const res = await runInTerminal(cliCommandLine(['download', videoId, '-o', out]), env(), s.home);
    assert.equal(res.code, 0, res.output);
    assert.deepEqual(readFileSync(out), data);
    // cli-progress redraws the line in place: cursor to column 1 (CSI 1G) or a carriage return, then the bar again.
    const ESC = String.fromCharCode(27);
    const draws = res.output.split(new RegExp(`${ESC}\\[1G|\\r(?!\\n)`)).filter((d) => /download \[[#-]{30}\]/.test(d));
    assert.ok(draws.length >= 2, `redrawn at least twice: ${JSON.stringify(res.output)}`);
    const last = draws[draws.length - 1]!;
    assert.match(last, /download \[#{30}\] 100% \| 8\.4 MB of 8\.4 MB \| [\d.]+ [kMG]?B\/s \| ETA \d+s/);
    assert.match(res.output, /CRC-32C verified/);

    const plain = await cli(['download', videoId, '-o', out, '--json']);
    assert.equal(plain.code, 2, 'an existing file is kept without --force');
    const forced = await cli(['download', videoId, '-o', out, '--force', '--json']);
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(json(forced.stdout).checksumVerified, true);
    assert.match(forced.stderr, /^download: 100% \(8\.4 MB of 8\.4 MB\), [\d.]+ [kMG]?B\/s, ETA \d+s$/m, 'plain progress lines off a terminal');
    assert.ok(!forced.stderr.includes(String.fromCharCode(27)), 'no terminal escapes');
  });

  it('process --preset --yes shows the appraisal with its price and the wallet balance, accepts and follows the processing and the ingestion of the result until done; an immediate compare prints the link', async function () {
    this.timeout(scaled(300_000)); // processing, then the result's ingestion
    await s.h.services.ledger.topUp(u.teamId, 100_000_000);
    const master = json((await cli(['videos', 'import', served(2), '--full-ingestion', '--wait', '--json'])).stdout);
    const processed = await cli(['process', master.id, '--preset', 'compress-h-264', '--yes']);
    assert.equal(processed.code, 0, processed.stderr);
    assert.match(processed.stdout, /^Price: \d+\.\d{3} USD \(US dollars, charged to the team's wallet when accepted\)$/m);
    assert.match(processed.stdout, /^Wallet: \d+\.\d{3} USD for processing$/m);
    assert.match(processed.stdout, /^PRODUCT +AMOUNT +UNIT PRICE +COST$/m);
    const newId = /^([0-9a-f-]{36})\tprocessing DONE, ingestion DONE$/m.exec(processed.stdout)?.[1];
    assert.ok(newId, processed.stdout);
    assert.match(processed.stderr, /Configuration: Compress H\.264/);
    assert.match(processed.stderr, /processing: 100%/);
    assert.match(processed.stderr, /ingestion: 100%/);
    const video = json((await cli(['videos', 'get', newId, '--json'])).stdout);
    assert.equal(video.processing.processingState.processingStatus, 'DONE');
    assert.equal(video.ingestion.ingestionState.ingestionStatus, 'DONE', 'usable when process returns');
    assert.equal(video.masterVideo.id, master.id);

    const refused = await cli(['process', master.id, '--preset', 'Compress H.264']);
    assert.equal(refused.code, 2, 'no confirmation without a terminal and without --yes');
    assert.match(refused.stdout, /^Price: /m, 'the price was shown');
    const unknown = await cli(['process', master.id, '--preset', 'nonsense']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /compress-h-264 +Compress H\.264 \(built-in\)/);

    // process returned once the result was ingested: compare right away (no 409).
    const compared = await cli(['compare', master.id, newId, '--json']);
    assert.equal(compared.code, 0, compared.stderr);
    const link = json(compared.stdout);
    assert.ok(link.link.startsWith(`${s.url}/media/v1/compare/${master.id}/${newId}?`), link.link);
    const self = await cli(['compare', master.id, master.id]);
    assert.equal(self.code, 1);
    assert.match(self.stderr, /^Error: VIDEO_COMPARISON_CONFLICT: /m);
  });
});
