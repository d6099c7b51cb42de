import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { loadContract } from '../../src/composition';
import { insertVideo } from '../../src/features/videos/testing';
import { TEST_DIALECT } from '../helpers/database';
import { createHarness, expectError, Harness, TestUser } from '../helpers/harness';
import { apiRequests } from '../helpers/scenario';

/** Every operation with a `selectTeamId` or `teamId` query parameter, with its request body example. */
function teamSelectingOperations(): { operationId: string; method: string; path: string; param: string; body?: unknown }[] {
  const doc = loadContract();
  const ops = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of ['get', 'post', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const refs = (op.parameters ?? []).map((p: any) => p.$ref);
      const param = refs.includes('#/components/parameters/SelectTeamId') ? 'selectTeamId' : refs.includes('#/components/parameters/FilterByTeamId') ? 'teamId' : undefined;
      if (param) ops.push({ operationId: op.operationId, method, path, param, body: op.requestBody?.content['application/json'].example });
    }
  }
  return ops;
}

describe(`Account, teams and projects (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;
  const { get } = apiRequests(
    () => h,
    () => u,
  );

  beforeEach(async () => {
    h = await createHarness();
    u = await h.user({ teamName: 'First team' });
  });
  afterEach(() => h.close());

  describe('account and teams', () => {
    it('getAccount returns the user and the default team (oldest API-enabled team)', async () => {
      h.clock.advance(1000);
      const newer = await h.services.accounts.createTeam({ name: 'Newer team', ownerEmail: u.email });
      const res = await get('/v1/account');
      assert.equal(res.status, 200);
      assert.equal(res.body.user.id, u.userId);
      assert.equal(res.body.defaultTeam.id, u.teamId);
      assert.notEqual(res.body.defaultTeam.id, newer.id);
    });

    it('the default team moves to the oldest API-enabled team when the first is disabled', async () => {
      h.clock.advance(1000);
      const newer = await h.services.accounts.createTeam({ name: 'Newer team', ownerEmail: u.email });
      await h.services.accounts.updateTeam(u.teamId, { apiEnabled: false });
      assert.equal((await get('/v1/account')).body.defaultTeam.id, newer.id);
    });

    it('a user without an API-enabled team gets 403 DEFAULT_TEAM_NOT_API_ENABLED', async () => {
      await h.services.accounts.updateTeam(u.teamId, { apiEnabled: false });
      expectError(await get('/v1/account'), 403, 'DEFAULT_TEAM_NOT_API_ENABLED');
      expectError(await get('/v1/projects/default'), 403, 'DEFAULT_TEAM_NOT_API_ENABLED');
    });

    it('getTeams lists the teams the user belongs to, with billingType', async () => {
      const other = await h.user({ teamName: 'Not mine' });
      await h.services.accounts.addMember(other.teamId, u.email);
      const res = await get('/v1/teams?sortBy=createdAt&sortDirection=ASC');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.items.map((t: any) => t.id).sort(), [u.teamId, other.teamId].sort());
      assert.ok(res.body.items.every((t: any) => t.billingType === 'WALLET' && t.apiEnabled === true));
    });

    it('getTeamById: own team 200, a team of someone else 404', async () => {
      const other = await h.user();
      assert.equal((await get(`/v1/teams/${u.teamId}`)).body.name, 'First team');
      expectError(await get(`/v1/teams/${other.teamId}`), 404, 'TEAM_NOT_FOUND');
      expectError(await get(`/v1/teams/${randomUUID()}`), 404, 'TEAM_NOT_FOUND');
    });
  });

  describe('team selection', () => {
    it('selectTeamId of a team the user does not belong to is 403 FORBIDDEN', async () => {
      const other = await h.user();
      const res = await h.request.post(`/api/v1/projects?selectTeamId=${other.teamId}`).set('X-API-Key', u.apiKey).send({ name: 'x' });
      expectError(res, 403, 'FORBIDDEN');
    });
    it('an unknown team is answered like a team of someone else: 403 FORBIDDEN, same message, on every operation that takes selectTeamId or teamId', async () => {
      const other = await h.user();
      const ops = teamSelectingOperations();
      assert.equal(ops.length, 25, ops.map((o) => o.operationId).join(', '));
      for (const op of ops) {
        const call = (teamId: string) => {
          const path = `/api${op.path.replace(/\{[^}]+\}/g, randomUUID())}?${op.param}=${teamId}`;
          const req = (h.request as any)[op.method](path).set('X-API-Key', u.apiKey);
          return op.body === undefined ? req : req.send(op.body);
        };
        const unknownId = randomUUID();
        const [unknown, foreign] = [await call(unknownId), await call(other.teamId)];
        expectError(unknown, 403, 'FORBIDDEN');
        expectError(foreign, 403, 'FORBIDDEN');
        assert.equal(unknown.body.message, `You are not a member of team ${unknownId}`, op.operationId);
        assert.equal(foreign.body.message, `You are not a member of team ${other.teamId}`, op.operationId);
        const shape = (body: any) => Object.keys(body).sort();
        assert.deepEqual(shape(unknown.body), shape(foreign.body), op.operationId);
      }
    });
    it('teamId filter of a team the user does not belong to is 403 FORBIDDEN', async () => {
      const other = await h.user();
      expectError(await get(`/v1/projects?teamId=${other.teamId}`), 403, 'FORBIDDEN');
    });
    it('selectTeamId of a member team that is not API-enabled is 403 ACCESS_DENIED', async () => {
      const team = await h.services.accounts.createTeam({ name: 'Disabled', ownerEmail: u.email, apiEnabled: false });
      expectError(await get(`/v1/projects/default?selectTeamId=${team.id}`), 403, 'ACCESS_DENIED');
    });
  });

  describe('projects', () => {
    it('createProject in the default team, or in the selected team', async () => {
      const res = await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: 'Holiday' });
      assert.equal(res.status, 201);
      assert.equal(res.body.teamId, u.teamId);
      assert.equal(res.body.name, 'Holiday');
      assert.equal(res.body.isSample, false);
      const team = await h.services.accounts.createTeam({ name: 'Second', ownerEmail: u.email });
      const selected = await h.request.post(`/api/v1/projects?selectTeamId=${team.id}`).set('X-API-Key', u.apiKey).send({ name: 'There' });
      assert.equal(selected.status, 201);
      assert.equal(selected.body.teamId, team.id);
    });

    it('getDefaultProject is the oldest project named "Default Project"', async () => {
      const first = await get('/v1/projects/default');
      assert.equal(first.status, 200);
      assert.equal(first.body.name, 'Default Project');
      h.clock.advance(1000);
      await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: 'Default Project' });
      assert.equal((await get('/v1/projects/default')).body.id, first.body.id);
    });

    it('getDefaultProject is 404 when the team has no default project', async () => {
      const def = (await get('/v1/projects/default')).body;
      await h.request.patch(`/api/v1/projects/${def.id}`).set('X-API-Key', u.apiKey).send({ name: 'Renamed' });
      expectError(await get('/v1/projects/default'), 404, 'RESOURCE_NOT_FOUND');
    });

    it('getProjects pages, sorts and filters by team', async () => {
      for (const name of ['a', 'b', 'c']) {
        h.clock.advance(1000);
        await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name });
      }
      const other = await h.user();
      await h.request.post('/api/v1/projects').set('X-API-Key', other.apiKey).send({ name: 'hidden' });
      const page = await get('/v1/projects?pageSize=2&pageNumber=1&sortDirection=DESC');
      assert.equal(page.status, 200);
      assert.equal(page.body.totalElements, 4);
      assert.equal(page.body.totalPages, 2);
      assert.deepEqual(
        page.body.items.map((p: any) => p.name),
        ['a', 'Default Project'],
      );
      const past = await get('/v1/projects?pageSize=2&pageNumber=9');
      assert.equal(past.body.numberOfElements, 0);
      assert.equal(past.body.totalElements, 4);
      const filtered = await get(`/v1/projects?teamId=${u.teamId}&sortBy=updatedAt`);
      assert.equal(filtered.body.totalElements, 4);
      assert.ok(filtered.body.items.every((p: any) => p.teamId === u.teamId));
    });

    it("patchProject renames and moves updatedAt; another team's project is 404", async () => {
      const created = (await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: 'old' })).body;
      h.clock.advance(5000);
      const res = await h.request.patch(`/api/v1/projects/${created.id}`).set('X-API-Key', u.apiKey).send({ name: 'new' });
      assert.equal(res.status, 200);
      assert.equal(res.body.name, 'new');
      assert.ok(res.body.updatedAt > created.updatedAt);
      const other = await h.user();
      expectError(await h.request.patch(`/api/v1/projects/${created.id}`).set('X-API-Key', other.apiKey).send({ name: 'x' }), 404, 'RESOURCE_NOT_FOUND');
      expectError(await get(`/v1/projects/${created.id}`, other.apiKey), 404, 'RESOURCE_NOT_FOUND');
    });

    it('deleteProjectById: 204 when empty, 409 PROJECT_WITH_VIDEOS_CANNOT_BE_DELETED when it holds videos', async () => {
      const empty = (await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: 'empty' })).body;
      assert.equal((await h.request.delete(`/api/v1/projects/${empty.id}`).set('X-API-Key', u.apiKey)).status, 204);
      expectError(await get(`/v1/projects/${empty.id}`), 404, 'RESOURCE_NOT_FOUND');

      const full = (await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: 'full' })).body;
      await insertVideo(h.database.db, { id: randomUUID(), teamId: u.teamId, projectId: full.id, userId: u.userId, name: 'clip.mp4', createdAt: h.clock.now() });
      expectError(await h.request.delete(`/api/v1/projects/${full.id}`).set('X-API-Key', u.apiKey), 409, 'PROJECT_WITH_VIDEOS_CANNOT_BE_DELETED');
      assert.equal((await get(`/v1/projects/${full.id}`)).status, 200);
      const other = await h.user();
      expectError(await h.request.delete(`/api/v1/projects/${full.id}`).set('X-API-Key', other.apiKey), 404, 'RESOURCE_NOT_FOUND');
    });
  });
});
