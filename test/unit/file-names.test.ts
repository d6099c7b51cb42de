import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { contentDisposition } from '../../src/http/blob-responses';
import { fileNameFrom } from '../../src/shared/file-names';

/** Reads a Content-Disposition back as a client does: the RFC 8187 name when there is one, else the quoted one. */
function parse(header: string): { disposition: string; fallback: string; extended?: string } {
  const m = /^(inline|attachment); filename="([^"\\]*)"(?:; filename\*=UTF-8''([A-Za-z0-9!#$&+\-.^_`|~%]*))?$/.exec(header);
  assert.ok(m, `not a well-formed Content-Disposition: ${header}`);
  return { disposition: m[1]!, fallback: m[2]!, extended: m[3] === undefined ? undefined : decodeURIComponent(m[3]) };
}

describe('Download file names', () => {
  it('a file name from a video name keeps readable characters: "(processed)" stays, not "_processed_"', () => {
    assert.equal(fileNameFrom('Beach Sunset (processed)', 'mp4'), 'Beach Sunset (processed).mp4');
    assert.equal(fileNameFrom('Interview - take 2, v1.5 [final] & more', '.mov'), 'Interview - take 2, v1.5 [final] & more.mov');
    assert.equal(fileNameFrom('Café «Résumé» 日本語', 'mp4'), 'Café «Résumé» 日本語.mp4');
    assert.equal(fileNameFrom('a/b\\c:d*e?f"g<h>i|j', 'mp4'), 'a_b_c_d_e_f_g_h_i_j.mp4', 'path separators and characters Windows refuses');
    assert.equal(fileNameFrom('line\nbreak\ttab', 'mp4'), 'line_break_tab.mp4', 'control characters');
    assert.equal(fileNameFrom('  spaced   out  ', 'mp4'), 'spaced out.mp4');
    assert.equal(fileNameFrom('..', 'mp4'), 'video.mp4');
    assert.equal(fileNameFrom('', 'mxf'), 'video.mxf');
    assert.equal(fileNameFrom('x'.repeat(300), 'mp4').length, 204);
    assert.equal(fileNameFrom('😀'.repeat(300), 'mp4'), '😀'.repeat(200) + '.mp4', 'cut by characters, never half a surrogate pair');
  });

  it('Content-Disposition: a plain ASCII name as is; otherwise a readable ASCII fallback and filename*=UTF-8 (RFC 6266, RFC 8187)', () => {
    assert.equal(contentDisposition('attachment', 'Beach Sunset (processed).mp4'), 'attachment; filename="Beach Sunset (processed).mp4"');
    assert.equal(contentDisposition('attachment', 'Café (processed).mp4'), `attachment; filename="Cafe (processed).mp4"; filename*=UTF-8''Caf%C3%A9%20%28processed%29.mp4`);
    assert.equal(contentDisposition('inline', '日本 100%.jpg'), `inline; filename="__ 100_.jpg"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%20100%25.jpg`);
    assert.equal(contentDisposition('attachment', 'say "hi".mp4'), `attachment; filename="say _hi_.mp4"; filename*=UTF-8''say%20%22hi%22.mp4`);
  });

  it('property: any name gives a header of printable ASCII whose filename* decodes to the name, and a fallback that keeps its readable ASCII', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (text) => {
        const name = fileNameFrom(text, 'mp4');
        const header = contentDisposition('attachment', name);
        assert.match(header, /^[\x20-\x7e]+$/);
        const parsed = parse(header);
        assert.equal(parsed.extended ?? parsed.fallback, name.normalize('NFC'));
        // One fallback character per character of the name (accents dropped): readable ASCII as is.
        const bare = [...name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '')];
        assert.equal([...parsed.fallback].length, bare.length);
        for (const [i, ch] of [...parsed.fallback].entries()) {
          if (/[\x20-\x7e]/.test(bare[i]!) && !/["\\%]/.test(bare[i]!)) assert.equal(ch, bare[i]);
          else assert.equal(ch, '_');
        }
      }),
      { numRuns: 300 },
    );
  });
});
