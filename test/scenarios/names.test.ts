/**
 * Every name a client sets (projects, videos, API keys, webhooks, locations, processing
 * configurations) needs at least one character that is not white space: the contract's
 * `pattern: '\S'`, enforced by the request validator.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import type supertest from 'supertest';
import { TEST_DIALECT } from '../helpers/database';
import { basic, createHarness, expectError, Harness, TestUser } from '../helpers/harness';

const BLANKS = ['  ', '\t', ' \n '];
const bucket = { bucket: 'my-bucket', accessKey: 'AKIAEXAMPLE', secretAccessKey: 'secret-example-key' };

describe(`Names need a non-space character (${TEST_DIALECT})`, () => {
  let h: Harness;
  let u: TestUser;

  before(async () => {
    h = await createHarness();
    u = await h.user();
  });
  after(() => h.close());

  /** Each operation that takes a name, as a request given the name. */
  const operations = (): Array<[string, (name: string) => supertest.Test, string]> => {
    const key = (t: supertest.Test) => t.set('X-API-Key', u.apiKey);
    const id = randomUUID();
    return [
      ['createProject', (name) => key(h.request.post('/api/v1/projects')).send({ name }), 'body.name'],
      ['patchProject', (name) => key(h.request.patch(`/api/v1/projects/${id}`)).send({ name }), 'body.name'],
      ['patchVideo', (name) => key(h.request.patch(`/api/v1/videos/${id}`)).send({ name }), 'body.name'],
      ['createMasterVideoFromHttps', (name) => key(h.request.post('/api/v1/videos/in/https')).send({ name, url: 'https://example.com/a.mp4' }), 'body.name'],
      ['createMasterVideoFromBucket', (name) => key(h.request.post('/api/v1/videos/in/bucket')).send({ name, objectKey: 'a.mp4', s3Bucket: bucket }), 'body.name'],
      ['createMasterVideoFromBucketInputLocationId', (name) => key(h.request.post(`/api/v1/videos/in/bucket/${id}`)).send({ name, objectKey: 'a.mp4' }), 'body.name'],
      ['startProcessingByVideoId', (name) => key(h.request.post(`/api/v1/videos/${id}/processing/start?videoName=${encodeURIComponent(name)}`)).send({ container: 'MP4' }), 'query.videoName'],
      ['createApiKey', (name) => h.request.post('/api/v1/api-keys').set('Authorization', basic(u.email, u.password)).send({ name, active: false }), 'body.name'],
      ['patchApiKey', (name) => h.request.patch(`/api/v1/api-keys/${u.apiKeyId}`).set('Authorization', basic(u.email, u.password)).send({ name }), 'body.name'],
      ['createWebhook', (name) => key(h.request.post('/api/v1/webhooks')).send({ name, url: 'https://example.com/hook', eventTypes: ['video_in.done'], active: false }), 'body.name'],
      ['patchWebhook', (name) => key(h.request.patch(`/api/v1/webhooks/${id}`)).send({ name }), 'body.name'],
      ['createBucketInputLocation', (name) => key(h.request.post('/api/v1/input-locations/bucket')).send({ name, ...bucket }), 'body.name'],
      ['patchBucketInputLocation', (name) => key(h.request.patch(`/api/v1/input-locations/bucket/${id}`)).send({ name }), 'body.name'],
      ['createBucketOutputLocation', (name) => key(h.request.post('/api/v1/output-locations/bucket')).send({ name, ...bucket }), 'body.name'],
      ['patchBucketOutputLocation', (name) => key(h.request.patch(`/api/v1/output-locations/bucket/${id}`)).send({ name }), 'body.name'],
      ['createVideoProcessingConfiguration', (name) => key(h.request.post('/api/v1/processing-configurations')).send({ name, options: { container: 'MP4' } }), 'body.name'],
    ];
  };

  // The requests are built when a test runs (the user exists by then).
  for (const [operationId, send, field] of operations()) {
    it(`${operationId}: a name of white space only is 400 VALIDATION_ERROR on ${field}`, async () => {
      for (const blank of BLANKS) {
        const res = await send(blank);
        expectError(res, 400, 'VALIDATION_ERROR');
        const issue = res.body.validationErrors.find((e: any) => e.field === field);
        assert.ok(issue, `${JSON.stringify(blank)}: ${JSON.stringify(res.body.validationErrors)}`);
        assert.match(issue.message, /pattern/);
      }
    });
  }

  it('a name with white space around or inside other characters is kept as given', async () => {
    const res = await h.request.post('/api/v1/projects').set('X-API-Key', u.apiKey).send({ name: ' Summer 2026 ' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.name, ' Summer 2026 ');
    const patched = await h.request.patch(`/api/v1/projects/${res.body.id}`).set('X-API-Key', u.apiKey).send({ name: 'x' });
    assert.equal(patched.body.name, 'x');
  });
});
