import { strict as assert } from 'node:assert';
import { DEFAULT_PRICE_LIST, priceStorage } from '../../src/features/billing';
import { gbMonths, nextMonthStart } from '../../src/features/billing/testing';

describe('storage pricing (GB-months)', () => {
  it('a GB-month is 10^9 bytes for a whole UTC calendar month, whatever its length', () => {
    const feb = new Date('2027-02-01T00:00:00Z');
    const mar = new Date('2027-03-01T00:00:00Z');
    assert.equal(nextMonthStart(feb).getTime(), mar.getTime());
    assert.equal(gbMonths(1e9, feb, mar, feb), 1);
    assert.equal(gbMonths(1e9, mar, nextMonthStart(mar), mar), 1);
    assert.equal(gbMonths(2e9, new Date('2027-03-01T00:00:00Z'), new Date('2027-03-02T00:00:00Z'), mar), 2 / 31);
  });

  it('costs are the storage price per GB-month, rounded up to whole mills and whole credits', () => {
    // 0.024 USD and 3 credits per GB-month
    assert.deepEqual(priceStorage(DEFAULT_PRICE_LIST, 2.5), { gbMonths: 2.5, unitPriceMicros: 24_000, unitPriceCredits: 3, costMicros: 60_000, costCredits: 8 });
    assert.equal(priceStorage(DEFAULT_PRICE_LIST, 0.0001).costMicros, 1000, 'a fraction of a mill is a mill');
    assert.equal(priceStorage(DEFAULT_PRICE_LIST, 0.0001).costCredits, 1);
    assert.equal(priceStorage(DEFAULT_PRICE_LIST, 0).costMicros, 0);
    assert.equal(priceStorage(DEFAULT_PRICE_LIST, 0).costCredits, 0);
    // float noise does not add a mill: 1/3 GB-month at 0.003 USD is exactly one mill
    assert.equal(priceStorage({ ...DEFAULT_PRICE_LIST, storage: { usd: 0.003, credits: 3 } }, 1 / 3).costMicros, 1000);
  });
});
