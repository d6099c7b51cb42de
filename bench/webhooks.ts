/**
 * Webhook delivery throughput and latency. One delivery worker sends signed deliveries to a
 * local keep-alive receiver answering 200, on SQLite and (when reachable) PostgreSQL; the
 * baseline is a bare fetch (undici) POST loop to the same receiver with the same concurrency.
 * Then the idle latency from event commit to receipt (p50, p95).
 * Targets (issue 28), on each database: signed deliveries/s at least 0.8x the bare loop's, and
 * the idle commit-to-receipt p50 under 5 ms. A missed target fails the run.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { loadConfig } from '../src/config';
import { createServices } from '../src/composition';
import { systemClock } from '../src/shared/clock';
import { LocalDiskStore } from '../src/storage/local-disk-store';
import { DeliveryWorker, recordEvent } from '../src/features/webhooks';
import { createTestDatabase } from '../test/helpers/database';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 4000);
const WEBHOOKS = 4; // rateLimitPerSecond is at most 1000 per webhook
const CONCURRENCY = 64;
const TARGET_RATIO = 0.8;
const TARGET_IDLE_P50_MS = 5;

async function receiver() {
  let count = 0;
  let onRequest: () => void = () => undefined;
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      onRequest();
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    get count() {
      return count;
    },
    waitFor(n: number) {
      return new Promise<void>((resolve) => {
        if (count >= n) return resolve();
        onRequest = () => count >= n && resolve();
      });
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function bareLoop(url: string, n: number): Promise<number> {
  const body = JSON.stringify({
    id: randomUUID(),
    webhookId: randomUUID(),
    eventType: 'video_processing.done',
    occurredAt: new Date().toISOString(),
    test: false,
    attemptCount: 1,
    data: { type: 'VIDEO', videoId: randomUUID() },
  });
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < n) {
        const res = await fetch(url, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } });
        await res.text();
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

/** Runs one database; true when both targets were met. */
async function runDialect(dialect: 'sqlite' | 'postgres'): Promise<boolean> {
  process.env.VIDMILL_TEST_DB = dialect;
  const database = await createTestDatabase();
  const config = { ...loadConfig({}), database: database.config, allowPrivateUrls: true };
  const s = createServices({ db: database.db, clock: systemClock, masterKey: randomBytes(32), blobs: new LocalDiskStore(mkdtempSync(path.join(tmpdir(), 'vidmill-bench-'))), config });
  const { team } = await s.accounts.createUserWithTeam({ email: `bench-${randomUUID()}@example.com`, password: 'bench-password-1', name: 'Bench', teamName: 'Bench' });
  const r = await receiver();
  const log = pino({ level: 'silent' });
  try {
    const user = (await database.db('memberships').where({ team_id: team.id }).first()).user_id;
    for (let i = 0; i < WEBHOOKS; i++) {
      await s.webhooks.create(user, team.id, { name: `bench ${i}`, url: r.url, eventTypes: ['video_processing.done'], active: true, rateLimitPerSecond: 1000 });
    }
    await s.signingKeys.current();
    await bareLoop(r.url, Math.min(1000, EVENTS)); // warm-up
    const bare = await bareLoop(r.url, EVENTS);

    const perEvent = EVENTS / WEBHOOKS;
    for (let i = 0; i < perEvent; i += 250) {
      await database.db.transaction(async (trx) => {
        for (let j = i; j < Math.min(perEvent, i + 250); j++) {
          await recordEvent(trx, { teamId: team.id, eventType: 'video_processing.done', videoId: randomUUID(), occurredAt: new Date() });
        }
      });
    }
    const before = r.count;
    const worker = new DeliveryWorker(
      { db: database.db, clock: systemClock, signingKeys: s.signingKeys, policy: { allowPrivateUrls: true }, log },
      { concurrency: CONCURRENCY, perWebhookConcurrency: CONCURRENCY },
    );
    const t0 = performance.now();
    worker.start();
    await r.waitFor(before + EVENTS);
    const seconds = (performance.now() - t0) / 1000;
    const signed = EVENTS / seconds;

    // Idle latency: one event at a time into an idle loop.
    await new Promise((x) => setTimeout(x, 200));
    const latencies: number[] = [];
    for (let i = 0; i < 50; i++) {
      const start = performance.now();
      const target = r.count + WEBHOOKS;
      await database.db.transaction((trx) => recordEvent(trx, { teamId: team.id, eventType: 'video_processing.done', videoId: randomUUID(), occurredAt: new Date() }));
      await r.waitFor(target);
      latencies.push(performance.now() - start);
      await new Promise((x) => setTimeout(x, 20));
    }
    await worker.stop();
    latencies.sort((a, b) => a - b);
    const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
    console.log(
      `webhooks ${dialect.padEnd(8)} signed deliveries/s ${signed.toFixed(0).padStart(6)} | bare POST loop/s ${bare.toFixed(0).padStart(6)} | ratio ${(signed / bare).toFixed(2)} | idle commit->receipt p50 ${pct(50).toFixed(1)} ms p95 ${pct(95).toFixed(1)} ms (each event to ${WEBHOOKS} webhooks)`,
    );
    const ratioPass = signed / bare >= TARGET_RATIO;
    const idlePass = pct(50) < TARGET_IDLE_P50_MS;
    console.log(`${dialect}: signed deliveries/s vs bare POST loop  ${(signed / bare).toFixed(3)}x  (target >= ${TARGET_RATIO}x)  ${ratioPass ? 'PASS' : 'FAIL'}`);
    console.log(`${dialect}: idle commit->receipt p50             ${pct(50).toFixed(1)} ms  (target < ${TARGET_IDLE_P50_MS} ms)  ${idlePass ? 'PASS' : 'FAIL'}`);
    return ratioPass && idlePass;
  } finally {
    await r.close();
    await database.drop();
  }
}

/** True when every database that ran met both targets. */
export async function webhooksBenchmark(): Promise<boolean> {
  console.log(`webhooks: ${EVENTS} deliveries over ${WEBHOOKS} webhooks, concurrency ${CONCURRENCY}`);
  let pass = await runDialect('sqlite');
  try {
    pass = (await runDialect('postgres')) && pass;
  } catch (err: any) {
    console.log(`webhooks postgres skipped: ${err?.message ?? err}`);
  }
  console.log(`\nwebhooks: ${pass ? 'PASS' : 'FAIL (a target was missed)'}`);
  return pass;
}
