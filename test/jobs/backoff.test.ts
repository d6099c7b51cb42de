import { strict as assert } from 'node:assert';
import { backoffMs } from '../../src/jobs/backoff';

describe('backoffMs (the one back-off function)', () => {
  it('doubles from baseMs and stops at maxMs, without jitter by default', () => {
    const delays = [1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, { baseMs: 200, maxMs: 3_000 }));
    assert.deepEqual(delays, [200, 400, 800, 1_600, 3_000, 3_000]);
  });

  it('counts retries below 1 as the first', () => {
    assert.equal(backoffMs(0, { baseMs: 500, maxMs: 10_000 }), 500);
    assert.equal(backoffMs(-3, { baseMs: 500, maxMs: 10_000 }), 500);
  });

  it('takes another growth factor', () => {
    assert.deepEqual(
      [1, 2, 3].map((n) => backoffMs(n, { baseMs: 100, maxMs: 1_000, factor: 3 })),
      [100, 300, 900],
    );
  });

  it('equal jitter stays within [ceiling/2, ceiling] and uses the injected random source', () => {
    for (const r of [0, 0.1, 0.5, 0.9, 1 - Number.EPSILON]) {
      for (let n = 1; n <= 12; n++) {
        const ceiling = Math.min(60_000, 2_000 * 2 ** (n - 1));
        const d = backoffMs(n, { baseMs: 2_000, maxMs: 60_000, jitter: 'equal', random: () => r });
        assert.ok(d >= ceiling / 2 && d <= ceiling, `retry ${n}, random ${r}: ${d} outside [${ceiling / 2}, ${ceiling}]`);
        assert.equal(d, Math.round(ceiling / 2 + (ceiling / 2) * r));
      }
    }
  });

  it('is whole milliseconds', () => {
    assert.ok(Number.isInteger(backoffMs(3, { baseMs: 1_000, maxMs: 10_000, jitter: 'equal', random: () => 0.123456 })));
  });
});
