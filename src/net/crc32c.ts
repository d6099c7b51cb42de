/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI, ext4, Google Cloud
 * Storage and the `crc32c` field of the video-in operations.
 *
 * - `crc32c(buf)` of one buffer; `crc32cUpdate(crc, chunk)` continues a CRC over the next chunk
 *   (start from 0), so a stream is checksummed chunk by chunk without holding it.
 * - `crc32cCombine(crcA, crcB, lengthB)` is the CRC of A followed by B from the CRCs of A and B
 *   and B's length, in O(log lengthB) (zlib's crc32_combine method: multiplication by x^(8n)
 *   modulo the polynomial). Parts copied in parallel and out of order are checksummed per part
 *   and combined in file order at the end.
 *
 * Table-driven slicing: sixteen bytes per step through sixteen 256-entry tables, read as four
 * aligned 32-bit words (on little-endian machines, for chunks of 64 bytes or more: about twice
 * the speed of byte loads, which counts at the copy engine's hundreds of MB/s); otherwise eight
 * bytes per step with byte loads (slicing-by-8).
 */

const POLY = 0x82f63b78;

// Indexing below is within bounds by construction (16 tables of 256 entries, byte-sized indices, loops bounded by
// the chunk's length), hence the non-null assertions that noUncheckedIndexedAccess asks for.
type Tables16 = [
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
];
const TABLES = (() => {
  const t = Array.from({ length: 16 }, () => new Uint32Array(256));
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[0]![n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    for (let k = 1; k < 16; k++) t[k]![n] = ((t[k - 1]![n]! >>> 8) ^ t[0]![t[k - 1]![n]! & 0xff]!) >>> 0;
  }
  return t as Tables16;
})();
const [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15] = TABLES;

/** Word loads through an Int32Array read the platform's byte order; the word path needs little-endian. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([0x04030201]).buffer)[0] === 0x01;

/** Continues `crc` (the CRC-32C of everything before; 0 at the start) over `chunk`. */
export function crc32cUpdate(crc: number, chunk: Uint8Array): number {
  const n = chunk.length;
  if (LITTLE_ENDIAN && n >= 64) return updateWords(crc, chunk);
  let c = ~crc >>> 0;
  let i = 0;
  const end8 = n - (n % 8);
  while (i < end8) {
    c ^= chunk[i]! | (chunk[i + 1]! << 8) | (chunk[i + 2]! << 16) | (chunk[i + 3]! << 24);
    c = T7[c & 0xff]! ^ T6[(c >>> 8) & 0xff]! ^ T5[(c >>> 16) & 0xff]! ^ T4[c >>> 24]! ^ T3[chunk[i + 4]!]! ^ T2[chunk[i + 5]!]! ^ T1[chunk[i + 6]!]! ^ T0[chunk[i + 7]!]!;
    i += 8;
  }
  while (i < n) c = T0[(c ^ chunk[i++]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** Slicing-by-16 over aligned little-endian words: bytes up to a 4-byte boundary, 16 bytes a step, then the tail. */
function updateWords(crc: number, chunk: Uint8Array): number {
  let c = ~crc | 0;
  const n = chunk.length;
  let i = 0;
  while (((chunk.byteOffset + i) & 3) !== 0) c = T0[(c ^ chunk[i++]!) & 0xff]! ^ (c >>> 8);
  const words = ((n - i) >>> 4) << 2;
  const w = new Int32Array(chunk.buffer, chunk.byteOffset + i, words);
  for (let k = 0; k < words; k += 4) {
    const a = w[k]! ^ c;
    const b = w[k + 1]!;
    const d = w[k + 2]!;
    const e = w[k + 3]!;
    c =
      T15[a & 0xff]! ^
      T14[(a >>> 8) & 0xff]! ^
      T13[(a >>> 16) & 0xff]! ^
      T12[a >>> 24]! ^
      T11[b & 0xff]! ^
      T10[(b >>> 8) & 0xff]! ^
      T9[(b >>> 16) & 0xff]! ^
      T8[b >>> 24]! ^
      T7[d & 0xff]! ^
      T6[(d >>> 8) & 0xff]! ^
      T5[(d >>> 16) & 0xff]! ^
      T4[d >>> 24]! ^
      T3[e & 0xff]! ^
      T2[(e >>> 8) & 0xff]! ^
      T1[(e >>> 16) & 0xff]! ^
      T0[e >>> 24]!;
  }
  i += words << 2;
  while (i < n) c = T0[(c ^ chunk[i++]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** CRC-32C of one buffer. */
export function crc32c(buf: Uint8Array): number {
  return crc32cUpdate(0, buf);
}

/** a * b modulo the polynomial (reflected bit order: bit 31 is x^0). */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) modulo the polynomial. */
const X2N: Uint32Array = (() => {
  const t = new Uint32Array(64);
  let p = 0x40000000; // x^1
  t[0] = p;
  for (let k = 1; k < 64; k++) t[k] = p = multModP(p, p);
  return t;
})();

/** x^(n * 2^k) modulo the polynomial; n up to 2^53. */
function x2nModP(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k & 63]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** CRC-32C of A followed by B, from crc(A), crc(B) and the byte length of B. */
export function crc32cCombine(crcA: number, crcB: number, lengthB: number): number {
  if (!Number.isSafeInteger(lengthB) || lengthB < 0) throw new RangeError('lengthB must be a non-negative safe integer');
  return (multModP(x2nModP(lengthB, 3), crcA >>> 0) ^ crcB) >>> 0;
}

/** An incremental hasher over a stream of chunks. */
export class Crc32c {
  private crc = 0;
  private bytes = 0;
  update(chunk: Uint8Array): this {
    this.crc = crc32cUpdate(this.crc, chunk);
    this.bytes += chunk.length;
    return this;
  }
  get value(): number {
    return this.crc;
  }
  get length(): number {
    return this.bytes;
  }
}
