/**
 * Every combination of encoding (each encodingProfile; each codec with each pixel format or
 * none), container (each, or none), outputScanning and source scanning that the planner accepts
 * must be one this ffmpeg can encode: an accepted appraisal may never fail for a reason known in
 * advance. Each accepted combination is planned against a real source of the smallest size its
 * codec takes (64x64; DNxHR 256x120; DNxHD and XDCAM their smallest fixed frame) and the plan is
 * run for real into a file of its container: a few frames, x264/x265 at `ultrafast`. Identical
 * ffmpeg commands (an absent container that resolves to an explicit one, AUTO that resolves to
 * PROGRESSIVE...) run once. Refusals must be the engine's 400, never another error.
 *
 * Starting ffmpeg costs more than encoding a few 64x64 frames, so the commands that share their
 * source and everything before `-filter_complex` run as the outputs of one ffmpeg process,
 * `batchSize` at a time: each output its own graph with its `[vout]` renamed `[vout<k>]`, its own
 * arguments and file. A batch that fails or leaves an output empty runs again command by command,
 * as a processing run does, so a failure names its combination. Plans with an analysis pass run
 * alone.
 *
 * It touches no database: `npm test` runs it once, in the dialect-free pass.
 */
import { strict as assert } from 'node:assert';
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { probeMedia, runMedia, type MediaBinaries, type ProbeResult } from '../../src/media';
import {
  buildProcessingPlan,
  CODECS,
  CONTAINERS,
  ENCODING_PROFILES,
  processingArgs,
  ProcessingOptionsError,
  runProcessing,
  type BitDepth,
  type ChromaSubsampling,
  type ProcessingOptions,
  type ProcessingPlan,
} from '../../src/processing-planner';
import { dnxhdFrameSizes, PROFILE_SPECS } from '../../src/processing-planner/encoders';
import { encodeCached } from '../helpers/media-cache';
import { bins } from '../media/fixtures';
import { capabilities, workDir } from './engine-fixtures';
import { scaled } from '../helpers/timeouts';

const SCANNINGS = ['AUTO', 'PROGRESSIVE', 'INTERLACED_TOP_FIRST', 'INTERLACED_BOTTOM_FIRST'] as const;
const PIXEL_FORMATS: ({ yuv: ChromaSubsampling; bitDepth: BitDepth } | undefined)[] = [undefined];
for (const yuv of ['4:2:0', '4:2:2', '4:4:4'] as const) for (const bitDepth of [8, 10, 12] as const) PIXEL_FORMATS.push({ yuv, bitDepth });

type Encoding = Pick<ProcessingOptions, 'encodingProfile' | 'encodingConfiguration'>;
const ENCODINGS: Encoding[] = [
  ...ENCODING_PROFILES.map((encodingProfile) => ({ encodingProfile })),
  ...CODECS.flatMap((codec) => PIXEL_FORMATS.map((pixelFormat) => ({ encodingConfiguration: { codec, ...(pixelFormat ? { pixelFormat } : {}) } }))),
];

interface Size {
  width: number;
  height: number;
}

/** The smallest frame the encoding takes (for DNxHD an interlaced one for an interlaced source where the profile has one). */
function sourceSize(e: Encoding, interlaced: boolean): Size {
  if (e.encodingProfile?.startsWith('DNXHD')) {
    const spec = PROFILE_SPECS[e.encodingProfile];
    const sizes = dnxhdFrameSizes(spec.mbps!, spec.pixel.bitDepth as 8 | 10).sort((a, b) => a.width * a.height - b.width * b.height);
    const s = sizes.find((x) => x.interlaced === interlaced) ?? sizes[0] ?? { width: 1920, height: 1080 };
    return { width: s.width, height: s.height };
  }
  if (e.encodingProfile?.startsWith('DNXHR')) return { width: 256, height: 120 };
  if (e.encodingConfiguration?.codec === 'XDCAM') return { width: 1280, height: 720 };
  return { width: 64, height: 64 };
}

interface MatrixSource {
  file: string;
  probe: ProbeResult;
}
const sources = new Map<string, Promise<MatrixSource>>();

/** MPEG-2 + MP2 in MPEG-TS, 0.12 s: progressive 50 frames/s (6 frames) or interlaced top field first 25 frames/s (3 frames). */
function matrixSource(size: Size, interlaced: boolean): Promise<MatrixSource> {
  const key = `${size.width}x${size.height}${interlaced ? 'i' : 'p'}`;
  let p = sources.get(key);
  if (!p) {
    p = (async () => {
      const b = await bins();
      const file = path.join(workDir, `matrix-${key}.ts`);
      await encodeCached(
        b.ffmpeg,
        [
          '-hide_banner',
          '-loglevel',
          'error',
          '-nostdin',
          '-y',
          '-f',
          'lavfi',
          '-i',
          `testsrc2=size=${key.slice(0, -1)}:rate=50:duration=0.12`,
          '-f',
          'lavfi',
          '-i',
          'sine=sample_rate=48000:duration=0.12',
          ...(interlaced ? ['-vf', 'interlace=scan=tff,setfield=tff', '-flags', '+ilme+ildct'] : []),
          '-c:v',
          'mpeg2video',
          '-b:v',
          '8M',
          '-c:a',
          'mp2',
        ],
        file,
      );
      return { file, probe: await probeMedia(b, file) };
    })();
    sources.set(key, p);
  }
  return p;
}

/** Runs `fn` over `items`, `limit` at a time. */
async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** One distinct accepted combination. */
interface Combination {
  label: string;
  source: MatrixSource;
  plan: ProcessingPlan;
}

/** A combination and the file it is encoded into. */
interface Encode {
  combination: Combination;
  output: string;
}

/**
 * Outputs per ffmpeg process: at most 16 (~0.09 s CPU to start ffmpeg against a few hundredths
 * per tiny encode), and at most ~11 million source pixels across them (a 1080p DNxHD output holds
 * ~200 MB in ffmpeg: 5 of them, not 16, at 1080p).
 */
function batchSize(source: MatrixSource): number {
  return Math.max(1, Math.min(16, Math.floor((16 * 960 * 720) / (source.probe.width * source.probe.height))));
}

/**
 * processingArgs's list in three: what comes before `-filter_complex` (overwrite, threads, input
 * options, input), the graph without its final `[vout]`, and what follows `-map [vout]` (output
 * arguments and the output file).
 */
function splitArgs(args: string[]): { head: string[]; graph: string; tail: string[] } {
  const i = args.indexOf('-filter_complex');
  const graph = args[i + 1] ?? '';
  assert.ok(i > 0 && graph.indexOf('[vout]') === graph.length - '[vout]'.length && args[i + 2] === '-map' && args[i + 3] === '[vout]', `not a one-graph command ending in [vout]: ${args.join(' ')}`);
  return { head: args.slice(0, i), graph: graph.slice(0, -'[vout]'.length), tail: args.slice(i + 4) };
}

/** The source pixels a batch encodes per frame. */
function pixels(batch: Encode[]): number {
  return batch.reduce((sum, { combination: { source } }) => sum + source.probe.width * source.probe.height, 0);
}

/** ffmpeg processes run, and the failures (`<label>: <why>`), of the matrix's encodes. */
interface Runs {
  processes: number;
  failures: string[];
}

/** One combination alone, as a processing run does it. */
async function runAlone(b: MediaBinaries, { label, source, plan }: Combination, output: string, runs: Runs): Promise<void> {
  runs.processes += plan.analysis ? 2 : 1;
  try {
    const r = await runProcessing(b, source.file, output, plan, { durationMs: plan.output.durationMs, timeoutMs: scaled(60_000) });
    if (!(r.bytes > 0)) runs.failures.push(`${label}: empty output`);
  } catch (err) {
    runs.failures.push(`${label}: ${(err as Error).message.slice(0, 400)}`);
  } finally {
    await rm(output, { force: true });
  }
}

/** Combinations of one source and command head as the outputs of one ffmpeg process; alone again if it fails. */
async function runBatch(b: MediaBinaries, batch: Encode[], runs: Runs): Promise<void> {
  const args: string[] = [];
  batch.forEach(({ combination: { source, plan }, output }, k) => {
    const { head, graph, tail } = splitArgs(processingArgs(plan, source.file, output));
    if (k === 0) args.push(...head);
    args.push('-filter_complex', `${graph}[vout${k}]`, '-map', `[vout${k}]`, ...tail);
  });
  runs.processes++;
  let whole = true;
  try {
    await runMedia(b.ffmpeg, args, { tool: 'ffmpeg', timeoutMs: scaled(60_000) });
    for (const { output } of batch) if (!((await stat(output)).size > 0)) whole = false;
  } catch {
    whole = false;
  }
  await Promise.all(batch.map(({ output }) => rm(output, { force: true })));
  if (!whole) for (const { combination, output } of batch) await runAlone(b, combination, output, runs);
}

describe('Capability matrix: every accepted combination runs on this ffmpeg', function () {
  this.timeout(scaled(900_000));

  it('codec x profile x container x scanning x pixel format x source scanning: planned, and every accepted plan encoded', async function () {
    const caps = await capabilities();
    const b = await bins();
    let total = 0;
    const accepted: Combination[] = [];
    const refusedBy = new Map<string, number>();
    for (const encoding of ENCODINGS) {
      for (const container of [undefined, ...CONTAINERS]) {
        for (const outputScanning of SCANNINGS) {
          for (const interlaced of [false, true]) {
            total++;
            const options: ProcessingOptions = { ...encoding, ...(container ? { container } : {}), processingSettings: { outputScanning } };
            const source = await matrixSource(sourceSize(encoding, interlaced), interlaced);
            const label = `${JSON.stringify(options)} from a ${interlaced ? 'interlaced' : 'progressive'} ${source.probe.width}x${source.probe.height} source`;
            try {
              const plan = buildProcessingPlan(options, source.probe, { startMs: 0, endMs: source.probe.durationMs }, { capabilities: caps, encoderPreset: 'ultrafast' });
              accepted.push({ label, source, plan });
            } catch (err) {
              assert.ok(err instanceof ProcessingOptionsError, `${label}: ${(err as Error).stack}`);
              refusedBy.set(err.errorCode, (refusedBy.get(err.errorCode) ?? 0) + 1);
            }
          }
        }
      }
    }
    // One encode per distinct ffmpeg command.
    const distinct = new Map<string, Combination>();
    for (const a of accepted) {
      const key = JSON.stringify([a.source.file, processingArgs(a.plan, 'in', 'out')]);
      if (!distinct.has(key)) distinct.set(key, a);
    }
    // Batches of commands sharing their source and head (the input included), as even as can be, the heaviest first.
    const groups = new Map<string, Encode[]>();
    const alone: Encode[] = [];
    let n = 0;
    for (const combination of distinct.values()) {
      const output = path.join(workDir, `matrix-out-${n++}${combination.plan.fileExtension}`);
      if (combination.plan.analysis) {
        alone.push({ combination, output });
        continue;
      }
      const key = JSON.stringify(splitArgs(processingArgs(combination.plan, combination.source.file, output)).head);
      groups.set(key, [...(groups.get(key) ?? []), { combination, output }]);
    }
    const batches = [...groups.values()]
      .flatMap((group) => {
        const size = Math.ceil(group.length / Math.ceil(group.length / batchSize(group[0]!.combination.source)));
        return Array.from({ length: Math.ceil(group.length / size) }, (_, i) => group.slice(i * size, (i + 1) * size));
      })
      .sort((x, y) => pixels(y) - pixels(x));
    const runs: Runs = { processes: 0, failures: [] };
    await pool(batches, 2, (batch) => runBatch(b, batch, runs));
    await pool(alone, 2, ({ combination, output }) => runAlone(b, combination, output, runs));
    const failures = runs.failures;
    console.log(
      `      matrix: ${total} combinations, ${accepted.length} accepted (${[...refusedBy].map(([c, k]) => `${k} ${c}`).join(', ')} refused), ` +
        `${distinct.size} distinct ffmpeg commands, all ${distinct.size} run in ${runs.processes} ffmpeg processes, ${failures.length} failed`,
    );
    assert.deepEqual(failures, [], `${failures.length} accepted combinations failed in ffmpeg:\n${failures.slice(0, 30).join('\n')}`);
  });
});
