import { strict as assert } from 'node:assert';
import { isoTime } from '../../src/shared/iso-time';
import { PROPERTY_SEED, seededRandom } from '../helpers/fuzzing';

const random = seededRandom(PROPERTY_SEED);

describe('isoTime (toISOString for response timestamps)', () => {
  const same = (ms: number) => assert.equal(isoTime(new Date(ms)), new Date(ms).toISOString(), String(ms));

  it('equals toISOString at the edges of the range, of years, months and days', () => {
    for (const s of [
      '0000-01-01T00:00:00.000Z',
      '0000-02-29T12:00:00.000Z',
      '0001-01-01T00:00:00.000Z',
      '1899-12-31T23:59:59.999Z',
      '1900-02-28T00:00:00.000Z',
      '1900-03-01T00:00:00.000Z',
      '1969-12-31T23:59:59.999Z',
      '1970-01-01T00:00:00.000Z',
      '1970-01-01T00:00:00.001Z',
      '2000-02-29T23:59:59.999Z',
      '2000-03-01T00:00:00.000Z',
      '2024-02-29T00:00:00.000Z',
      '2026-03-31T23:59:59.999Z',
      '2100-02-28T10:20:30.040Z',
      '2100-03-01T00:00:00.000Z',
      '9999-12-31T23:59:59.999Z',
    ]) {
      assert.equal(isoTime(new Date(s)), s);
      same(Date.parse(s));
    }
  });

  it('equals toISOString on 200,000 seeded random instants of years 0000-9999 and around now', () => {
    const min = Date.parse('0000-01-01T00:00:00.000Z');
    const max = Date.parse('9999-12-31T23:59:59.999Z');
    for (let i = 0; i < 100_000; i++) same(min + Math.floor(random() * (max - min + 1)));
    const now = Date.now();
    for (let i = 0; i < 100_000; i++) same(now + Math.floor((random() - 0.5) * 20 * 365 * 86_400_000));
  });

  it('outside 0000-9999 and for an invalid date: what the builtin does', () => {
    same(Date.parse('0000-01-01T00:00:00.000Z') - 1);
    same(Date.parse('9999-12-31T23:59:59.999Z') + 1);
    same(8.64e15);
    same(-8.64e15);
    assert.throws(() => isoTime(new Date(NaN)), RangeError);
  });
});
