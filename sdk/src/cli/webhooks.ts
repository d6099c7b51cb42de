/**
 * `vidmill webhooks listen --events a,b --forward-to URL`: like Stripe's CLI. Creates a webhook
 * listener for the team, long-polls its deliveries, POSTs each one's signed headers and body
 * verbatim to the local URL, prints a line per delivery, and acknowledges by polling with the
 * last sequence. Ctrl-C deletes the listener (exit 130).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { unwrap } from '../client';
import { VidmillApiError } from '../errors';
import type { components } from '../generated/api';
import { action, checkInterrupted, isNetworkError, positiveInt, UsageError, type Context } from './context';

type EventType = components['schemas']['WebhookEventType'];

/** Every event type of the contract (the compiler checks the list is complete and right). */
const EVENT_TYPES = Object.keys({
  'video_in.started': 1,
  'video_in.done': 1,
  'video_in.failed': 1,
  'video_in_ingestion.started': 1,
  'video_in_ingestion.done': 1,
  'video_in_ingestion.failed': 1,
  'clip_processing.started': 1,
  'clip_processing.done': 1,
  'clip_processing.failed': 1,
  'clip_ingestion.started': 1,
  'clip_ingestion.done': 1,
  'clip_ingestion.failed': 1,
  'video_processing.started': 1,
  'video_processing.done': 1,
  'video_processing.failed': 1,
  'video_processing_ingestion.started': 1,
  'video_processing_ingestion.done': 1,
  'video_processing_ingestion.failed': 1,
  'video_out.started': 1,
  'video_out.done': 1,
  'video_out.failed': 1,
  'video.deleted': 1,
} satisfies Record<EventType, 1>) as EventType[];

/** Headers that belong to one hop, not to the delivery: never forwarded. */
const HOP_HEADERS = new Set(['host', 'content-length', 'connection', 'transfer-encoding', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-authorization', 'proxy-connection']);

/** `a,b` -> the event types; `*` or absent -> all; a name without a dot's suffix (`video_in`) -> its three. */
export function parseEventTypes(list: string | undefined): EventType[] {
  if (!list || list.trim() === '*') return [...EVENT_TYPES];
  const out = new Set<EventType>();
  for (const raw of list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const matches = EVENT_TYPES.filter((t) => t === raw || t.startsWith(`${raw}.`) || (raw.endsWith('.*') && t.startsWith(raw.slice(0, -1))));
    if (!matches.length) throw new UsageError(`Unknown event type "${raw}". Known: ${EVENT_TYPES.join(', ')}`);
    matches.forEach((t) => out.add(t));
  }
  return [...out];
}

async function listenCommand(ctx: Context, o: { events?: string; forwardTo: string; team?: string; waitSeconds?: number }) {
  let target: URL;
  try {
    target = new URL(o.forwardTo);
  } catch {
    throw new UsageError(`--forward-to is not a URL: ${o.forwardTo}`);
  }
  const eventTypes = parseEventTypes(o.events);
  const client = ctx.client;
  const listener = unwrap(await client.api.POST('/v1/webhooks/listeners', { params: { query: { selectTeamId: o.team } }, body: { eventTypes } }));
  ctx.info(`Listening for ${eventTypes.length === EVENT_TYPES.length ? 'all events' : eventTypes.join(', ')} (listener ${listener.id}); forwarding to ${target.href}. Ctrl-C to stop.`);
  if (ctx.json) process.stdout.write(JSON.stringify({ listener }) + '\n');
  let after: number | undefined;
  let failures = 0;
  try {
    for (;;) {
      checkInterrupted(ctx.signal);
      let items: components['schemas']['WebhookListenerDelivery'][];
      try {
        const page = unwrap(
          await client.api.GET('/v1/webhooks/listeners/{id}/deliveries', {
            params: { path: { id: listener.id }, query: { after, waitSeconds: o.waitSeconds ?? 20 } },
            signal: ctx.signal,
          }),
        );
        items = page.items;
        failures = 0;
      } catch (err) {
        checkInterrupted(ctx.signal);
        // The server restarting or the network dropping for a moment: try again with back-off.
        const passing = isNetworkError(err) || (err instanceof VidmillApiError && (err.status >= 500 || err.status === 429));
        if (!passing || ++failures > 10) throw err;
        ctx.info(`Polling failed (${err instanceof VidmillApiError ? err.errorCode : (err as Error).message}); retrying`);
        await sleep(Math.min(30_000, 500 * 2 ** failures), undefined, { signal: ctx.signal }).catch(() => undefined);
        continue;
      }
      for (const item of items) {
        const status = await forward(target, item, ctx.signal);
        const line = { time: new Date().toISOString(), eventType: item.eventType, eventId: item.eventId, sequence: item.sequence, status };
        if (ctx.json) process.stdout.write(JSON.stringify(line) + '\n');
        else process.stdout.write(`${line.time}  ${item.eventType.padEnd(34)} ${item.eventId}  -> ${status}\n`);
        after = item.sequence;
      }
    }
  } finally {
    // Ctrl-C or a failure: the listener is of no use any more.
    const deleted = await client.api.DELETE('/v1/webhooks/listeners/{id}', { params: { path: { id: listener.id } } }).catch(() => undefined);
    if (deleted?.response.ok) ctx.info(`Listener ${listener.id} deleted.`);
  }
}

/** POSTs one delivery to the local URL: its status, or why there was none. */
async function forward(target: URL, item: components['schemas']['WebhookListenerDelivery'], signal: AbortSignal): Promise<string> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(item.headers as Record<string, unknown>)) {
    if (HOP_HEADERS.has(name.toLowerCase())) continue;
    if (typeof value === 'string' || typeof value === 'number') headers.set(name, String(value));
    else if (Array.isArray(value)) headers.set(name, value.map(String).join(', '));
  }
  try {
    const res = await fetch(target, { method: 'POST', headers, body: item.body, signal: AbortSignal.any([signal, AbortSignal.timeout(30_000)]), redirect: 'manual' });
    await res.arrayBuffer().catch(() => undefined);
    return String(res.status);
  } catch (err) {
    checkInterrupted(signal);
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return `error (${cause?.code ?? cause?.message ?? (err as Error).message})`;
  }
}

export function registerWebhooks(program: Command): void {
  const webhooks = program.command('webhooks').description('Webhooks: receive your team’s events on this machine');
  webhooks
    .command('listen')
    .description('Receive the team’s webhook events through a temporary listener and forward them, signed, to a local URL')
    .requiredOption('--forward-to <url>', 'local URL to POST each event to, e.g. http://localhost:3000/hook')
    .option('--events <types>', 'comma-separated event types (video_in.done,video_processing); default all')
    .option('--team <teamId>', 'team to listen to (selectTeamId), when you belong to several')
    .option('--wait-seconds <n>', 'long-poll wait per request (default 20)', positiveInt('--wait-seconds'))
    .action(action(listenCommand));
}
