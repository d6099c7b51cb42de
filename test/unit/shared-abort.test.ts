/**
 * src/shared/abort.ts: the signals src shares between operations in flight take one listener per
 * operation without Node's "possible EventTarget memory leak" warning (the webhook delivery worker
 * printed it at a concurrency of 64), and still abort every listener.
 */
import { strict as assert } from 'node:assert';
import { setImmediate as tick } from 'node:timers/promises';
import { sharedAbortController } from '../../src/shared/abort';

/** The warnings `process` emits while `fn` adds and removes 64 listeners on `signal`. */
async function warningsWhile64Listen(signal: AbortSignal): Promise<Error[]> {
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    const listeners = Array.from({ length: 64 }, () => () => undefined);
    for (const l of listeners) signal.addEventListener('abort', l, { once: true });
    await tick();
    for (const l of listeners) signal.removeEventListener('abort', l);
    await tick();
  } finally {
    process.off('warning', onWarning);
  }
  return warnings.filter((w) => w.name === 'MaxListenersExceededWarning');
}

describe('shared abort signals (src/shared/abort.ts)', () => {
  it('a plain AbortController warns past 10 listeners (what the helper is for)', async () => {
    assert.equal((await warningsWhile64Listen(new AbortController().signal)).length, 1);
  });

  it('sharedAbortController takes 64 listeners at once without a warning, and aborts each of them', async () => {
    const c = sharedAbortController();
    assert.deepEqual(await warningsWhile64Listen(c.signal), []);
    let heard = 0;
    for (let i = 0; i < 20; i++) c.signal.addEventListener('abort', () => heard++, { once: true });
    c.abort(new Error('stop'));
    assert.equal(heard, 20);
  });
});
