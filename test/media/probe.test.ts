import { strict as assert } from 'node:assert';
import { readFileSync, statSync } from 'node:fs';
import Ajv from 'ajv';
import type { components } from '../../generated/api';
import { UnsupportedMediaError, detectScanning, probeMedia, type ProbeResult, type VideoMetadata } from '../../src/media';
import { bitDepth, codecShortName, containerShortName, displayAspectRatio, frameRate, hdrStandard, scanningFromFieldOrder, scanningFromIdet } from '../../src/media/probe';
import { bins, fixture } from './fixtures';
import { scaled } from '../helpers/timeouts';

// Compile-time: the module's VideoMetadata is the contract's, both ways.
const toContract = (m: VideoMetadata): components['schemas']['VideoMetadata'] => m;
const fromContract = (m: components['schemas']['VideoMetadata']): VideoMetadata => m;
void toContract;
void fromContract;

const contract = JSON.parse(readFileSync('generated/openapi.json', 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addSchema({ $id: 'contract.json', components: contract.components });
const validateMetadata = ajv.compile({ $ref: 'contract.json#/components/schemas/VideoMetadata' });

/** Valid against the contract, no property the schema does not name, no null anywhere. */
function assertContractShape(metadata: VideoMetadata): void {
  assert.ok(validateMetadata(metadata), JSON.stringify(validateMetadata.errors));
  const props = (name: string) => Object.keys(contract.components.schemas[name].properties);
  for (const k of Object.keys(metadata)) assert.ok(props('VideoMetadata').includes(k), `unknown property ${k}`);
  for (const k of Object.keys(metadata.displayAspectRatio ?? {})) assert.ok(props('AspectRatio').includes(k));
  for (const k of Object.keys(metadata.averageFrameRate ?? {})) assert.ok(props('FrameRate').includes(k));
  for (const k of Object.keys(metadata.scanning ?? {})) assert.ok(props('VideoScanning').includes(k));
  assert.doesNotMatch(JSON.stringify(metadata), /null/);
}

describe('Media probe', function () {
  this.timeout(scaled(30_000));

  describe('pure mappings', () => {
    it('container short names from the demuxer list, major brand and extension', () => {
      const isoList = ['mov', 'mp4', 'm4a', '3gp', '3g2', 'mj2'];
      assert.equal(containerShortName(isoList, 'qt  ', '/x/a.mp4'), 'mov');
      assert.equal(containerShortName(isoList, 'isom', '/x/a.mov'), 'mp4');
      assert.equal(containerShortName(isoList, '3gp5', '/x/a'), '3gp');
      assert.equal(containerShortName(isoList, undefined, '/x/a.MOV'), 'mov');
      assert.equal(containerShortName(['matroska', 'webm'], undefined, '/x/a.webm'), 'webm');
      assert.equal(containerShortName(['matroska', 'webm'], undefined, '/x/a.mkv'), 'matroska');
      assert.equal(containerShortName(['mpegts'], undefined, '/x/a.m2ts'), 'mpegts');
      assert.equal(containerShortName(['mxf'], undefined, '/x/a.mxf'), 'mxf');
      assert.equal(containerShortName([], undefined, '/x/a'), undefined);
    });

    it('codec names in the contract spelling', () => {
      assert.equal(codecShortName('mpeg2video'), 'mpeg2');
      assert.equal(codecShortName('prores'), 'prores');
      assert.equal(codecShortName(undefined), undefined);
    });

    it('bit depth from bits_per_raw_sample, else the pixel format', () => {
      assert.equal(bitDepth('10', 'yuv422p10le'), 10);
      assert.equal(bitDepth(undefined, 'yuv420p10le'), 10);
      assert.equal(bitDepth(undefined, 'yuv444p12be'), 12);
      assert.equal(bitDepth(undefined, 'p010le'), 10);
      assert.equal(bitDepth(undefined, 'rgb48le'), 16);
      assert.equal(bitDepth(undefined, 'yuv420p'), 8);
      assert.equal(bitDepth(undefined, 'nv12'), 8);
      assert.equal(bitDepth(undefined, 'rgb565le'), 8);
      assert.equal(bitDepth(undefined, undefined), undefined);
    });

    it('display aspect ratio: two decimals and a conventional tag', () => {
      assert.deepEqual(displayAspectRatio(1920, 1080, '1:1', '16:9'), { ratio: 1.78, tag: '16:9' });
      assert.deepEqual(displayAspectRatio(1440, 1080, '4:3', undefined), { ratio: 1.78, tag: '16:9' });
      assert.deepEqual(displayAspectRatio(720, 576, '64:45', '16:9'), { ratio: 1.78, tag: '16:9' });
      assert.deepEqual(displayAspectRatio(640, 480, undefined, undefined), { ratio: 1.33, tag: '4:3' });
      assert.deepEqual(displayAspectRatio(1998, 1080, '1:1', '37:20'), { ratio: 1.85, tag: '1.85:1' });
      assert.deepEqual(displayAspectRatio(2048, 858, '1:1', '1024:429'), { ratio: 2.39, tag: '2.39:1' });
      assert.deepEqual(displayAspectRatio(1920, 818, '1:1', '960:409'), { ratio: 2.35, tag: '2.35:1' });
      assert.deepEqual(displayAspectRatio(352, 288, '1:1', '11:9'), { ratio: 1.22, tag: '11:9' });
      assert.deepEqual(displayAspectRatio(1000, 700, '1:1', '10:7'), { ratio: 1.43, tag: '10:7' });
      assert.deepEqual(displayAspectRatio(1000, 703, '1:1', '1000:703'), { ratio: 1.42, tag: '1.42:1' });
      assert.deepEqual(displayAspectRatio(1080, 1920, '1:1', '9:16'), { ratio: 0.56, tag: '9:16' });
    });

    it('field order to scanning (without a decoded frame): the displayed field decides tb and bt', () => {
      assert.equal(scanningFromFieldOrder('progressive'), 'PROGRESSIVE');
      assert.equal(scanningFromFieldOrder('tt'), 'INTERLACED_TOP_FIRST');
      assert.equal(scanningFromFieldOrder('bb'), 'INTERLACED_BOTTOM_FIRST');
      assert.equal(scanningFromFieldOrder('tb'), 'INTERLACED_BOTTOM_FIRST');
      assert.equal(scanningFromFieldOrder('bt'), 'INTERLACED_TOP_FIRST');
      assert.equal(scanningFromFieldOrder('unknown'), undefined);
      assert.equal(scanningFromFieldOrder(undefined), undefined);
    });

    it('frame rate: three decimals and the exact fraction (the base rate when the average only approximates it)', () => {
      assert.deepEqual(frameRate('30000/1001', '30000/1001'), { fps: 30000 / 1001, rational: '30000:1001' });
      assert.deepEqual(frameRate('2997/100', '30000/1001'), { fps: 30000 / 1001, rational: '30000:1001' });
      assert.deepEqual(frameRate('0/0', '25/1'), { fps: 25, rational: '25:1' });
      assert.deepEqual(frameRate('1537/64', '24/1'), { fps: 24, rational: '24:1' });
      assert.deepEqual(frameRate('2400/101', '24/1'), { fps: 2400 / 101, rational: '2400:101' });
      assert.equal(frameRate('0/0', '90000/1'), undefined);
      assert.equal(frameRate(undefined, undefined), undefined);
    });

    it('HDR standard from side data; idet verdicts', () => {
      assert.equal(hdrStandard(new Set(['Mastering display metadata'])), 'HDR10');
      assert.equal(hdrStandard(new Set([])), 'PQ10');
      assert.equal(hdrStandard(new Set(['HDR Dynamic Metadata SMPTE2094-40 (HDR10+)', 'Mastering display metadata'])), 'HDR10+');
      assert.equal(hdrStandard(new Set(['DOVI configuration record'])), 'DOLBY_VISION');
      const frames = (v: string, n: number) => `frame:0 pts:0\nlavfi.idet.multiple.current_frame=${v}\n`.repeat(n);
      assert.equal(scanningFromIdet(frames('tff', 60) + frames('progressive', 10)), 'INTERLACED_TOP_FIRST');
      assert.equal(scanningFromIdet(frames('bff', 60) + frames('undetermined', 50)), 'INTERLACED_BOTTOM_FIRST');
      assert.equal(scanningFromIdet(frames('tff', 50) + frames('bff', 32) + frames('progressive', 8)), 'PROGRESSIVE');
      assert.equal(scanningFromIdet(frames('progressive', 60)), 'PROGRESSIVE');
      assert.equal(scanningFromIdet(frames('undetermined', 60)), undefined);
    });
  });

  describe('real files', () => {
    const results = new Map<string, ProbeResult>();
    const probe = async (name: Parameters<typeof fixture>[0]) => {
      if (!results.has(name)) results.set(name, await probeMedia(await bins(), await fixture(name), { detectScanning: true }));
      return results.get(name)!;
    };

    it('H.264 + AAC in MP4', async () => {
      const file = await fixture('h264Mp4');
      const p = await probe('h264Mp4');
      assertContractShape(p.metadata);
      const m = p.metadata;
      assert.equal(m.containerName, 'mp4');
      assert.equal(m.longContainerName, 'QuickTime / MOV');
      assert.equal(m.codecName, 'h264');
      assert.match(m.longCodecName!, /H\.264/);
      assert.equal(m.pixelFormatName, 'yuv420p');
      assert.equal(m.primaryBitDepth, 8);
      assert.equal(m.frameWidth, 320);
      assert.equal(m.frameHeight, 240);
      assert.deepEqual(m.displayAspectRatio, { ratio: 1.33, tag: '4:3' });
      assert.deepEqual(m.averageFrameRate, { frameRate: 29.97, rational: '30000:1001' });
      assert.ok(Math.abs(m.durationInMillis! - 12012) <= 34, `duration ${m.durationInMillis}`);
      assert.equal(m.totalFrames, 360);
      assert.equal(m.size, statSync(file).size);
      assert.ok(m.videoStreamSize! > 0 && m.videoStreamSize! < m.size);
      assert.deepEqual(m.scanning, { metadata: 'PROGRESSIVE', heuristics: 'PROGRESSIVE' });
      assert.equal(m.hdrStandardName, undefined);
      assert.equal(p.durationMs, m.durationInMillis);
      assert.equal(p.width, 320);
      assert.equal(p.height, 240);
      assert.equal(p.hasVideo, true);
      assert.equal(p.hasAudio, true);
      assert.ok(Math.abs(p.fps - 29.97) < 0.001);
    });

    it('HEVC Main 10 in Matroska with HDR10 metadata', async () => {
      const p = await probe('hevcMkv');
      assertContractShape(p.metadata);
      const m = p.metadata;
      assert.equal(m.containerName, 'matroska');
      assert.equal(m.codecName, 'hevc');
      assert.equal(m.pixelFormatName, 'yuv420p10le');
      assert.equal(m.primaryBitDepth, 10);
      assert.deepEqual(m.averageFrameRate, { frameRate: 25, rational: '25:1' });
      assert.ok(Math.abs(m.durationInMillis! - 3000) <= 40);
      assert.equal(m.totalFrames, 75);
      assert.equal(m.colorTransferName, 'smpte2084');
      assert.equal(m.colorPrimariesName, 'bt2020');
      assert.equal(m.colorSpaceName, 'bt2020nc');
      assert.equal(m.colorRangeName, 'tv');
      assert.equal(m.hdrStandardName, 'HDR10');
      assert.equal(m.scanning?.heuristics, 'PROGRESSIVE');
      assert.equal(p.hasAudio, false);
    });

    it('ProRes 422 10-bit in QuickTime', async () => {
      const p = await probe('proresMov');
      assertContractShape(p.metadata);
      const m = p.metadata;
      assert.equal(m.containerName, 'mov');
      assert.equal(m.codecName, 'prores');
      assert.equal(m.pixelFormatName, 'yuv422p10le');
      assert.equal(m.primaryBitDepth, 10);
      assert.deepEqual(m.averageFrameRate, { frameRate: 23.976, rational: '24000:1001' });
      assert.ok(Math.abs(m.durationInMillis! - 3003) <= 42);
      assert.equal(m.totalFrames, 72);
      assert.deepEqual(m.scanning, { metadata: 'PROGRESSIVE', heuristics: 'PROGRESSIVE' });
    });

    it('interlaced MPEG-2 in MPEG-TS: metadata and analysis both find top field first', async () => {
      const p = await probe('interlacedTs');
      assertContractShape(p.metadata);
      const m = p.metadata;
      assert.equal(m.containerName, 'mpegts');
      assert.equal(m.codecName, 'mpeg2');
      assert.equal(m.frameWidth, 352);
      assert.equal(m.frameHeight, 288);
      assert.deepEqual(m.displayAspectRatio, { ratio: 1.22, tag: '11:9' });
      assert.deepEqual(m.averageFrameRate, { frameRate: 25, rational: '25:1' });
      assert.equal(m.totalFrames, 75);
      assert.deepEqual(m.scanning, { metadata: 'INTERLACED_TOP_FIRST', heuristics: 'INTERLACED_TOP_FIRST' });
      assert.equal(p.hasAudio, true);
    });

    it('interlaced ProRes in QuickTime: the first frame decides what the ambiguous tb/bt stream tags mean (ffmpeg writes tb for top field first)', async () => {
      assert.equal((await probe('proresInterlacedTff')).metadata.scanning?.metadata, 'INTERLACED_TOP_FIRST');
      assert.equal((await probe('proresInterlacedBff')).metadata.scanning?.metadata, 'INTERLACED_BOTTOM_FIRST');
    });

    it('detectScanning on its own, with the sample spread over the video', async () => {
      const b = await bins();
      assert.equal(await detectScanning(b, await fixture('interlacedTs'), { durationMs: 3000 }), 'INTERLACED_TOP_FIRST');
      assert.equal(await detectScanning(b, await fixture('h264Mp4'), { durationMs: 12012, frames: 90, segments: 3 }), 'PROGRESSIVE');
      assert.equal(await detectScanning(b, await fixture('proresMov')), 'PROGRESSIVE');
    });

    it('anamorphic video: the display aspect ratio counts the sample aspect ratio', async () => {
      const p = await probeMedia(await bins(), await fixture('anamorphicMp4'));
      assert.deepEqual(p.metadata.displayAspectRatio, { ratio: 1.78, tag: '16:9' });
      assert.equal(p.width, 1440);
    });

    for (const [name, why] of [
      ['randomBytes', /ffprobe cannot read random\.mp4: .*Invalid data found/],
      ['html', /ffprobe cannot read page\.html|page\.html (has no video stream|is not a video)/],
      ['audioM4a', /audio\.m4a has no video stream \(QuickTime \/ MOV, streams: audio\)/],
      ['stillJpg', /still\.jpg is not a video: ffprobe reads it as/],
    ] as const) {
      it(`${name}: UnsupportedMediaError saying why`, async () => {
        const file = await fixture(name);
        await assert.rejects(probeMedia(await bins(), file), (err: unknown) => {
          assert.ok(err instanceof UnsupportedMediaError, String(err));
          assert.match(err.message, why);
          return true;
        });
      });
    }

    it('a missing file is unsupported too, with the reason', async () => {
      await assert.rejects(probeMedia(await bins(), '/nonexistent/video.mp4'), /ffprobe cannot read video\.mp4: .*No such file or directory/);
    });
  });
});
