/**
 * `vidmill keys list|create|delete`: the API keys of your user. These operations take HTTP Basic
 * (e-mail and password), not an API key: `--email` (or `VIDMILL_EMAIL`, or the profile's
 * `email`) and the password from `VIDMILL_PASSWORD` or a prompt.
 */
import type { Command } from 'commander';
import { createVidmillClient, unwrap, type VidmillClient } from '../client';
import { action, clientRetries, fields, positiveInt, prompt, table, UsageError, type Context } from './context';

async function basicClient(ctx: Context, o: { email?: string }): Promise<VidmillClient> {
  const email = o.email ?? ctx.config.email;
  if (!email) throw new UsageError('The keys commands sign in with your e-mail and password: pass --email (or set VIDMILL_EMAIL)');
  const password = process.env.VIDMILL_PASSWORD ?? (await prompt(`Password for ${email}: `, true));
  if (!password) throw new UsageError('No password: set VIDMILL_PASSWORD or run in a terminal to be asked');
  const authorization = 'Basic ' + Buffer.from(`${email}:${password}`).toString('base64');
  return createVidmillClient({
    baseUrl: ctx.config.url,
    ...clientRetries(ctx.opts),
    fetch: (input, init) => {
      const request = new Request(input, init);
      request.headers.set('Authorization', authorization);
      return fetch(request);
    },
  });
}

async function listCommand(ctx: Context, o: { email?: string; page?: number }) {
  const client = await basicClient(ctx, o);
  const page = unwrap(await client.api.GET('/v1/api-keys', { params: { query: { pageNumber: o.page ?? 0, pageSize: 100 } } }));
  ctx.result(page, () =>
    table(
      ['ID', 'NAME', 'ACTIVE', 'KEY', 'CREATED'],
      page.items.map((k) => [k.id, k.name, k.active ? 'yes' : 'no', k.apiKeyHidden, k.createdAt]),
    ),
  );
}

async function createCommand(ctx: Context, o: { email?: string; name: string; description?: string; inactive?: boolean }) {
  const client = await basicClient(ctx, o);
  const key = unwrap(await client.api.POST('/v1/api-keys', { body: { name: o.name, description: o.description, active: !o.inactive } }));
  ctx.result(
    key,
    () =>
      `${fields([
        ['id', key.id],
        ['name', key.name],
        ['active', key.active],
        ['key', key.apiKey],
      ])}\nThe key is shown once: keep it now (for example in VIDMILL_API_KEY or a profile).`,
  );
}

async function deleteCommand(ctx: Context, id: string, o: { email?: string; deactivate?: boolean }) {
  const client = await basicClient(ctx, o);
  // The API deletes inactive keys only (409 ACTIVE_API_KEY_CANNOT_BE_DELETED): --deactivate does both.
  if (o.deactivate) unwrap(await client.api.POST('/v1/api-keys/{id}/deactivate', { params: { path: { id } } }));
  unwrap(await client.api.DELETE('/v1/api-keys/{id}', { params: { path: { id } } }));
  ctx.result({ deleted: id }, () => `Deleted API key ${id}`);
}

function setActiveCommand(active: boolean) {
  return async (ctx: Context, id: string, o: { email?: string }) => {
    const client = await basicClient(ctx, o);
    const path = { params: { path: { id } } };
    const key = unwrap(active ? await client.api.POST('/v1/api-keys/{id}/activate', path) : await client.api.POST('/v1/api-keys/{id}/deactivate', path));
    ctx.result(key, () => `API key ${id} ${active ? 'activated' : 'deactivated'}`);
  };
}

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('Your API keys (signs in with e-mail and password)');
  keys.command('list').description('List your API keys').option('--email <email>', 'your e-mail').option('--page <n>', 'page number, from 0', positiveInt('--page')).action(action(listCommand));
  keys
    .command('create')
    .description('Create an API key (its secret is shown once)')
    .option('--email <email>', 'your e-mail')
    .requiredOption('--name <name>', 'name of the key')
    .option('--description <text>', 'description of the key')
    .option('--inactive', 'create it deactivated')
    .action(action(createCommand));
  keys
    .command('activate <id>')
    .description('Activate an API key')
    .option('--email <email>', 'your e-mail')
    .action(action(setActiveCommand(true)));
  keys
    .command('deactivate <id>')
    .description('Deactivate an API key (requests with it are refused)')
    .option('--email <email>', 'your e-mail')
    .action(action(setActiveCommand(false)));
  keys
    .command('delete <id>')
    .description('Delete an inactive API key')
    .option('--email <email>', 'your e-mail')
    .option('--deactivate', 'deactivate it first when it is active')
    .action(action(deleteCommand));
}
