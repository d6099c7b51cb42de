import { strict as assert } from 'node:assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { microsToUsd, roundToMills, usdToMicros } from '../../src/features/billing/money';
import { DEFAULT_PRICE_LIST, volumeDiscountPercentage } from '../../src/features/billing/price-list';
import { priceJob } from '../../src/features/billing/pricing';

describe('Ledger money and pricing', () => {
  it('money: micro-USD inside, at most 3 decimals outside, whole mills booked', () => {
    assert.equal(usdToMicros(0.0075), 7500);
    assert.equal(roundToMills(12_345_499), 12_345_000);
    assert.equal(roundToMills(-1_234_567), -1_235_000);
    assert.equal(Object.is(roundToMills(-1), 0), true);
    assert.equal(microsToUsd(87_655_000), 87.655);
    assert.equal(microsToUsd(-297_000), -0.297);
    assert.equal(Object.is(microsToUsd(-400), 0), true);
    // no floating-point drift: a thousand 0.001 USD charges sum to exactly 1 USD
    assert.equal(microsToUsd(Array.from({ length: 1000 }, () => 1000).reduce((a, b) => a + b, 0)), 1);
  });

  it('volume discount grows with the gigapixels of a job up to the cap', () => {
    assert.equal(volumeDiscountPercentage(DEFAULT_PRICE_LIST, 0), 0);
    assert.equal(volumeDiscountPercentage(DEFAULT_PRICE_LIST, 330), 8.25);
    assert.equal(volumeDiscountPercentage(DEFAULT_PRICE_LIST, 1000), 25);
    assert.equal(volumeDiscountPercentage(DEFAULT_PRICE_LIST, 50_000), 25);
    const withBase = { ...DEFAULT_PRICE_LIST, volumeDiscount: { ...DEFAULT_PRICE_LIST.volumeDiscount, baseGp: 200 } };
    assert.equal(volumeDiscountPercentage(withBase, 10), 5);
  });

  it('a job is priced per product, discount on processing products only, credits rounded up', () => {
    const job = priceJob(DEFAULT_PRICE_LIST, [
      { productName: 'Super-resolution 4x', category: 'FILTER', amount: 329 },
      { productName: 'H.264 / AVC', category: 'ENCODER', amount: 330 },
      { productName: 'Storage', category: 'STORAGE', amount: 12.4 },
    ]);
    assert.equal(job.gigapixels, 330);
    assert.equal(job.discountPercentage, 8.25);
    assert.deepEqual(job.products.map((p) => p.normalCostMicros), [9_870_000, 2_475_000, 298_000]);
    assert.deepEqual(job.products.map((p) => p.costMicros), [9_056_000, 2_271_000, 298_000]);
    assert.deepEqual(job.products.map((p) => p.discountPercentage), [8.25, 8.25, 0]);
    assert.equal(job.costMicros, 11_625_000);
    assert.equal(job.discountMicros, job.normalCostMicros - job.costMicros);
    assert.deepEqual(job.products.map((p) => p.costCredits), [987, 330, 38]);
    assert.throws(() => priceJob(DEFAULT_PRICE_LIST, [{ productName: 'Nope', category: 'ENCODER', amount: 1 }]), /No price/);
    assert.throws(() => priceJob(DEFAULT_PRICE_LIST, [{ productName: 'AV1', category: 'ENCODER', amount: -1 }]), /Invalid amount/);
  });

  it('VIDMILL_PRICE_LIST_FILE replaces the price list; a bad file refuses to start', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-prices-'));
    const good = path.join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ ...DEFAULT_PRICE_LIST, storage: { usd: 0.02, credits: 2 } }));
    assert.equal(loadConfig({ VIDMILL_PRICE_LIST_FILE: good }).priceList.storage.usd, 0.02);
    assert.deepEqual(loadConfig({}).priceList, DEFAULT_PRICE_LIST);
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ ...DEFAULT_PRICE_LIST, storage: { usd: 0.0000001, credits: 1.5 } }));
    assert.throws(() => loadConfig({ VIDMILL_PRICE_LIST_FILE: bad }), (e: unknown) => e instanceof ConfigError && /storage/.test((e as Error).message));
    assert.throws(() => loadConfig({ VIDMILL_PRICE_LIST_FILE: path.join(dir, 'missing.json') }), ConfigError);
  });
});
