import { strict as assert } from 'node:assert';
import { Crc32c, crc32c, crc32cCombine, crc32cUpdate } from '../../src/net/crc32c';
import { PROPERTY_SEED, seededBytes, seededRandom } from '../helpers/fuzzing';

const random = seededRandom(PROPERTY_SEED);
const randomBytes = (n: number) => seededBytes(n, random);

/** An independent reference: bit by bit, straight from the definition (no tables). */
function referenceCrc32c(buf: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of buf) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

const hex = (n: number) => '0x' + n.toString(16).toUpperCase().padStart(8, '0');

describe('CRC-32C (Castagnoli)', () => {
  it('matches the published vectors (RFC 3720 B.4 and the "123456789" check value)', () => {
    const ascending = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
    const descending = Buffer.from(Array.from({ length: 32 }, (_, i) => 31 - i));
    const vectors: Array<[string, Buffer, number]> = [
      ['32 bytes of zeros', Buffer.alloc(32, 0), 0x8a9136aa],
      ['32 bytes of 0xFF', Buffer.alloc(32, 0xff), 0x62a8ab43],
      ['ascending 0..31', ascending, 0x46dd794e],
      ['descending 31..0', descending, 0x113fdb5c],
      ['"123456789"', Buffer.from('123456789', 'ascii'), 0xe3069283],
      ['empty', Buffer.alloc(0), 0],
    ];
    for (const [name, buf, expected] of vectors) {
      assert.equal(hex(crc32c(buf)), hex(expected), name);
      assert.equal(hex(referenceCrc32c(buf)), hex(expected), `reference: ${name}`);
    }
  });

  it('agrees with the bit-by-bit reference on random buffers of every length class', () => {
    const lengths = [1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 256, 1000, 4096, 65_537, 1_000_003];
    for (const n of lengths) {
      const buf = randomBytes(n);
      assert.equal(hex(crc32c(buf)), hex(referenceCrc32c(buf)), `length ${n}`);
    }
    // Unaligned views into a larger buffer.
    const big = randomBytes(10_000);
    for (const [start, end] of [
      [1, 9_999],
      [3, 4_100],
      [7, 8],
    ]) {
      const view = big.subarray(start, end);
      assert.equal(crc32c(view), referenceCrc32c(view));
    }
  });

  it('agrees with the reference at every alignment and length around the word path (64 bytes and up)', () => {
    const big = randomBytes(4_096);
    for (let offset = 0; offset < 8; offset++) {
      for (const n of [63, 64, 65, 66, 67, 79, 80, 81, 127, 128, 129, 1_001]) {
        const view = big.subarray(offset, offset + n);
        assert.equal(hex(crc32c(view)), hex(referenceCrc32c(view)), `offset ${offset}, length ${n}`);
        assert.equal(hex(crc32cUpdate(0x12345678, view)), hex(crc32cCombine(0x12345678, referenceCrc32c(view), n)), `continued, offset ${offset}, length ${n}`);
      }
    }
  });

  it('is incremental: any chunking gives the CRC of the whole', () => {
    const buf = randomBytes(100_000);
    const whole = crc32c(buf);
    for (let trial = 0; trial < 20; trial++) {
      let crc = 0;
      const hasher = new Crc32c();
      for (let at = 0; at < buf.length;) {
        const size = 1 + Math.floor(random() * 9_000);
        const chunk = buf.subarray(at, at + size);
        crc = crc32cUpdate(crc, chunk);
        hasher.update(chunk);
        at += size;
      }
      assert.equal(crc, whole);
      assert.equal(hasher.value, whole);
      assert.equal(hasher.length, buf.length);
    }
  });

  it('combines per-part CRCs into the CRC of the whole, whatever order the parts were hashed in', () => {
    const buf = randomBytes(300_000);
    const whole = crc32c(buf);
    for (let trial = 0; trial < 20; trial++) {
      const cuts = [0, ...Array.from({ length: 1 + Math.floor(random() * 8) }, () => Math.floor(random() * buf.length)), buf.length].sort((a, b) => a - b);
      const parts = cuts.slice(1).map((end, i) => ({ start: cuts[i]!, end }));
      // Hash the parts in a shuffled order (as parallel downloads finish), combine in file order.
      const crcs = new Map<number, number>();
      for (const p of [...parts].sort(() => random() - 0.5)) crcs.set(p.start, crc32c(buf.subarray(p.start, p.end)));
      let combined = 0;
      for (const p of parts) combined = crc32cCombine(combined, crcs.get(p.start)!, p.end - p.start);
      assert.equal(hex(combined), hex(whole), `cuts ${cuts.join(',')}`);
    }
    assert.equal(crc32cCombine(0x12345678, 0, 0), 0x12345678, 'an empty second part changes nothing');
    assert.equal(crc32cCombine(0, crc32c(buf), buf.length), whole, 'an empty first part changes nothing');
  });

  it('combines over lengths beyond 32 bits (parts of files up to 500 GB)', () => {
    const a = crc32c(randomBytes(100));
    const n1 = 2 ** 31 + 12_345;
    const n2 = 3 * 2 ** 31 + 7;
    // Shifting by n1 then by n2 equals shifting by n1 + n2 (> 2^32) at once.
    assert.equal(crc32cCombine(crc32cCombine(a, 0, n1), 0, n2), crc32cCombine(a, 0, n1 + n2));
    assert.equal(crc32cCombine(crc32cCombine(a, 0, 500e9), 0, 1), crc32cCombine(a, 0, 500e9 + 1));
    assert.throws(() => crc32cCombine(a, 0, -1), RangeError);
  });
});
