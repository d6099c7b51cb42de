import { strict as assert } from 'node:assert';
import { FixedWindowLimiter, RATE_WINDOW_MS } from '../../src/http/rate-limit';

describe('FixedWindowLimiter (in-memory, synchronous)', () => {
  let now: number;
  const limiter = (points: number) => new FixedWindowLimiter(points, RATE_WINDOW_MS, () => now);
  beforeEach(() => {
    now = Date.parse('2026-03-01T10:00:00.250Z');
  });

  it('a window starts with the first request of a key and counts down to 0, then refuses', () => {
    const l = limiter(3);
    assert.deepEqual(l.consume('k'), { allowed: true, remaining: 2, msBeforeNext: RATE_WINDOW_MS });
    now += 1500;
    assert.deepEqual(l.consume('k'), { allowed: true, remaining: 1, msBeforeNext: RATE_WINDOW_MS - 1500 });
    assert.deepEqual(l.consume('k'), { allowed: true, remaining: 0, msBeforeNext: RATE_WINDOW_MS - 1500 });
    assert.deepEqual(l.consume('k'), { allowed: false, remaining: 0, msBeforeNext: RATE_WINDOW_MS - 1500 });
    // refused requests count too (as in rate-limiter-flexible): still refused later in the window
    now += 50_000;
    assert.equal(l.consume('k').allowed, false);
  });

  it('the budget is per key', () => {
    const l = limiter(1);
    assert.equal(l.consume('a').allowed, true);
    assert.equal(l.consume('a').allowed, false);
    assert.equal(l.consume('b').allowed, true);
  });

  it('a new window begins when the old one has ended (not aligned to the clock minute)', () => {
    const l = limiter(1);
    l.consume('k');
    now += RATE_WINDOW_MS - 1;
    assert.deepEqual(l.consume('k'), { allowed: false, remaining: 0, msBeforeNext: 1 });
    now += 1;
    assert.deepEqual(l.consume('k'), { allowed: true, remaining: 0, msBeforeNext: RATE_WINDOW_MS });
  });

  it('forgets the windows of keys that stopped sending (bounded memory)', () => {
    const l = limiter(10);
    for (let i = 0; i < 100; i++) l.consume(`key-${i}`);
    assert.equal(l.size, 100);
    now += RATE_WINDOW_MS + 1;
    l.consume('active');
    assert.equal(l.size, 1);
  });
});
