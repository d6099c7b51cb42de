import { strict as assert } from 'node:assert';
import { etaError, EtaRun, onEtaRun, ProgressEta, weightedFraction, writeProgress } from '../../src/shared/progress-eta';

const near = (actual: number | undefined, expected: number) => assert.ok(actual !== undefined && Math.abs(actual - expected) < 1e-9, `${actual} != ${expected}`);

/** An estimator on a synthetic clock. */
function synthetic(opts: { minProgress?: number; minElapsedMs?: number; smoothingMs?: number } = {}) {
  let now = 0;
  const eta = new ProgressEta({ now: () => now, label: 'synthetic', ...opts });
  return { eta, at: (ms: number) => (now = ms) };
}

describe('Progress and time left (src/shared/progress-eta.ts)', () => {
  it('no estimate before 5 % of the whole and 2 s have been measured', () => {
    const { eta, at } = synthetic();
    at(0);
    assert.equal(eta.update(0).etaSeconds, undefined);
    at(1000);
    assert.equal(eta.update(0.2).etaSeconds, undefined, '20 % but only 1 s');
    const slow = synthetic();
    slow.at(0);
    slow.eta.observe(0);
    slow.at(10_000);
    assert.equal(slow.eta.update(0.04).etaSeconds, undefined, '10 s but only 4 %');
    at(2000);
    near(eta.update(0.4).etaSeconds, 3); // 40 % in 2 s: 3 s left
  });

  it('measures from its first observation: what was done before (a resumed copy) does not count', () => {
    const { eta, at } = synthetic();
    at(0);
    eta.observe(0.5);
    at(4000);
    near(eta.update(0.6).etaSeconds, 16);
  });

  it('measures from when progress starts: a process starting up (observations at 0) does not slow the rate', () => {
    const { eta, at } = synthetic();
    at(0);
    eta.observe(0);
    at(1500);
    eta.observe(0); // still starting
    at(3500);
    near(eta.update(0.2).etaSeconds, 8); // 20 % in the 2 s since progress started
  });

  it('counts down between observations, and says nothing once overdue', () => {
    const { eta, at } = synthetic();
    at(0);
    eta.observe(0);
    at(2000);
    eta.observe(0.5);
    at(3000);
    near(eta.estimate().etaSeconds, 1);
    at(5000);
    assert.equal(eta.estimate().etaSeconds, undefined, 'the last rate promised the end by now');
    assert.equal(eta.estimate().fraction, 0.5);
  });

  it('never goes back, and the smoothed rate follows a change of speed', () => {
    const { eta, at } = synthetic({ smoothingMs: 3000 });
    at(0);
    eta.observe(0);
    for (let t = 500; t <= 4000; t += 500) {
      at(t);
      eta.observe(t / 20_000); // 5 %/s
    }
    at(4500);
    eta.observe(0.1); // an earlier position reported late: ignored
    assert.equal(eta.estimate().fraction, 0.2);
    for (let t = 5000; t <= 11_000; t += 500) {
      at(t);
      eta.observe(0.2 + (t - 4000) / 10_000); // 10 %/s from 4 s on
    }
    const { fraction, etaSeconds } = eta.estimate();
    near(fraction, 0.9);
    const truth = (1 - fraction) / 0.1;
    assert.ok(Math.abs(etaSeconds! - truth) / truth < 0.25, `after the change: ${etaSeconds} s, truly ${truth} s`);
  });

  it('steps weighted by their expected cost: monotonic, and the step in progress counts by its own fraction', () => {
    const w = [1, 2, 7];
    assert.equal(weightedFraction(w, 0, 0), 0);
    assert.equal(weightedFraction(w, 1, 0), 0.1);
    assert.equal(weightedFraction(w, 2, 0.5), 0.65);
    assert.equal(weightedFraction(w, 3, 0), 1);
    assert.equal(weightedFraction(w, 2, 7), 1, 'clamped');
    let last = 0;
    for (let step = 0; step < 3; step++) {
      for (let f = 0; f <= 1; f += 0.25) {
        const x = weightedFraction(w, step, f);
        assert.ok(x >= last);
        last = x;
      }
    }
  });

  it('a synthetic job (startup, steps, ffmpeg progress with jitter): median error after 10 % under 25 % of the time left', () => {
    const runs: EtaRun[] = [];
    const off = onEtaRun((r) => runs.push(r));
    try {
      // Deterministic jitter.
      let seed = 7;
      const noise = () => ((seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5) * 0.3;
      // Steps as ingestion weighs them (expected ms), each really taking its weight x 1.3 (a slower
      // machine than the model) x jitter; the fourth (the web video) reports progress twice a second.
      const weights = [150, 450, 400, 5000, 3500];
      const { eta, at } = synthetic();
      let t = 0;
      at(t);
      eta.observe(0);
      for (let step = 0; step < weights.length; step++) {
        const takes = weights[step]! * 1.3 * (1 + noise());
        if (step === 3) {
          for (let done = 500; done < takes; done += 500) {
            at(t + done);
            eta.observe(weightedFraction(weights, step, done / takes));
            eta.estimate();
          }
        } else {
          // One report a second while the step runs without progress of its own.
          for (let done = 1000; done < takes; done += 1000) {
            at(t + done);
            eta.estimate();
          }
        }
        t += takes;
        at(t);
        eta.observe(weightedFraction(weights, step + 1, 0));
        eta.estimate();
      }
      eta.finish();
    } finally {
      off();
    }
    const { reports, median } = etaError(runs);
    assert.ok(reports >= 10, `${reports} reports`);
    assert.ok(median! < 0.25, `median error ${median}`);
  });

  it('writeProgress: writes when the percentage or the second changes, one at a time, and nothing after stop()', async () => {
    const { eta, at } = synthetic();
    const written: string[] = [];
    at(0);
    eta.observe(0);
    const writes = writeProgress(eta, async (e) => void written.push(`${Math.floor(e.fraction * 100)}%`), { everyMs: 60_000 });
    await writes.now();
    await writes.now();
    at(1000);
    eta.observe(0.25);
    await writes.now();
    await writes.stop();
    eta.observe(0.5);
    await writes.now();
    assert.deepEqual(written, ['0%', '25%']);
  });
});
