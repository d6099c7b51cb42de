/**
 * The admin CLI (scripts/admin.ts) run as an operator runs it: a child process with VIDMILL_*
 * settings, against this file's database.
 */
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadContract } from '../../src/composition';
import { NAME_MAX_LENGTH } from '../../src/shared/names';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, Harness, TestUser } from '../helpers/harness';
import { scaled } from '../helpers/timeouts';

const ROOT = path.resolve(__dirname, '../..');
/**
 * `npm run admin` is `tsx scripts/admin.ts`: the tsx command starts node with tsx's loader as a
 * second process and relays to it. The test starts that node with the same loader directly,
 * which spares the relay's start (a sixth of each command's CPU).
 */
const ADMIN = ['--import', 'tsx', 'scripts/admin.ts'];

describe(`Admin CLI (${TEST_DIALECT})`, function () {
  this.timeout(scaled(60_000));
  let h: Harness;
  let u: TestUser;
  let dataDir: string;
  const masterKey = randomBytes(32).toString('base64');

  /** Runs `npm run admin -- <args>` with this file's database (or `env` instead). */
  const admin = (args: string[], env?: Record<string, string>) => {
    const database = h.database.config;
    const r = spawnSync(process.execPath, [...ADMIN, ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        VIDMILL_MASTER_KEY: masterKey,
        ...(env ?? {
          VIDMILL_DATA_DIR: dataDir,
          VIDMILL_DATABASE_URL: database.client === 'sqlite' ? `sqlite:${database.filename}` : database.connectionString,
        }),
      },
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, lines: r.stdout.trim().split('\n').filter(Boolean) };
  };

  before(async () => {
    h = await createHarness();
    u = await h.user({ teamName: 'Studio Ada' });
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-admin-'));
  });
  after(async () => {
    await h.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('list-teams shows each team id (for a top-up) with its members; the database used is named on stderr first', () => {
    const r = admin(['list-teams']);
    assert.equal(r.status, 0, r.stderr);
    const database = h.database.config;
    const firstLine = r.stderr.split('\n')[0]!;
    if (database.client === 'sqlite') assert.equal(firstLine, `database: SQLite file ${database.filename}`);
    else assert.match(firstLine, /^database: PostgreSQL \S+\/vidmill_test_[0-9a-f_]+$/);
    const teams = r.lines.map((l) => JSON.parse(l));
    const mine = teams.find((t) => t.teamId === u.teamId);
    assert.deepEqual(mine, { teamId: u.teamId, name: 'Studio Ada', billingType: 'WALLET', apiEnabled: true, members: [{ email: u.email, role: 'owner' }] });

    const topUp = admin(['top-up', '--team-id', u.teamId, '--amount-usd', '10']);
    assert.equal(topUp.status, 0, topUp.stderr);
    assert.equal(topUp.stdout.trim(), 'topped up');
  });

  it('list-users shows each user with their teams', () => {
    const r = admin(['list-users']);
    assert.equal(r.status, 0, r.stderr);
    const users = r.lines.map((l) => JSON.parse(l));
    const me = users.find((x) => x.email === u.email);
    assert.deepEqual(me, { userId: u.userId, email: u.email, name: 'Test User', teams: [{ teamId: u.teamId, role: 'owner' }] });
  });

  it('refuses to create a new empty SQLite database where none exists (a wrong data directory), naming the file', () => {
    const wrong = path.join(dataDir, 'not-the-data-dir');
    const r = admin(['top-up', '--team-id', u.teamId, '--amount-usd', '10'], { VIDMILL_DATA_DIR: wrong });
    assert.equal(r.status, 1);
    assert.match(r.stderr, new RegExp(`^database: SQLite file ${path.join(wrong, 'vidmill.sqlite').replace(/[.]/g, '\\.')}\n`));
    assert.match(r.stderr, /no database at .*not-the-data-dir\/vidmill\.sqlite; the admin commands do not create one/);
    assert.doesNotMatch(r.stderr, /TEAM_NOT_FOUND/);
    assert.equal(existsSync(wrong), false, 'nothing was created');
  });

  it("team names follow the API's name rule (1 to 47 characters, not only white space) in create-team, create-user and update-team", async () => {
    // The rule is the contract's: the Team schema's length, and the pattern of the names a client sets.
    const schemas: any[] = Object.values(loadContract().components.schemas);
    const teamName = loadContract().components.schemas.Team.properties.name;
    assert.deepEqual([teamName.minLength, teamName.maxLength], [1, NAME_MAX_LENGTH]);
    const patterns = new Set(schemas.map((x) => x.properties?.name?.pattern).filter(Boolean));
    assert.deepEqual([...patterns], ['\\S']);
    const long = 'x'.repeat(NAME_MAX_LENGTH + 1);
    const refused = (args: string[], field: string) => {
      const r = admin(args);
      assert.equal(r.status, 1, `${args.join(' ')}: ${r.stdout}`);
      assert.match(r.stderr, new RegExp(`VALIDATION_ERROR: ${field} must`), r.stderr);
    };
    refused(['create-team', '--name', long], 'name');
    refused(['create-team', '--name', ' \t '], 'name');
    refused(['create-user', '--email', `blank-${randomBytes(4).toString('hex')}@example.com`, '--team-name', '   '], 'name');
    refused(['update-team', '--team-id', u.teamId, '--name', long], 'name');
    const names = (await h.services.db('teams').select('name')).map((t: { name: string }) => t.name);
    assert.ok(!names.some((n) => n.length > NAME_MAX_LENGTH || !/\S/.test(n)), JSON.stringify(names));
    // The longest name the rule allows is kept, and the API serves it against its contract.
    const longest = ' '.repeat(2) + 'é'.repeat(NAME_MAX_LENGTH - 2);
    const r = admin(['update-team', '--team-id', u.teamId, '--name', longest]);
    assert.equal(r.status, 0, r.stderr);
    const res = await h.request.get(`/api/v1/teams/${u.teamId}`).set('X-API-Key', u.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.name, longest);
  });

  it('--help prints the commands', () => {
    const r = admin(['--help']);
    assert.equal(r.status, 0);
    assert.match(r.stdout, /list-teams/);
    assert.match(r.stdout, /top-up +--team-id ID --amount-usd N/);
  });
});
