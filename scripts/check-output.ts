/**
 * `npm run check-output -- <source> <output> [--frames N] [--start-ms MS] [--timing-changed]`:
 * checks a processed file against its source with the output checker (src/media/output-check.ts)
 * and prints what it found: frames, which source frames the output shows, dropped and repeated
 * frames, timestamps that do not increase, where the audio starts. Exit status 1 when it found a
 * problem, 2 on bad arguments.
 */
import { parseArgs } from 'node:util';
import { checkOutput, resolveMediaBinaries } from '../src/media';

const USAGE = 'usage: npm run check-output -- <source> <output> [--frames N] [--start-ms MS] [--timing-changed]';

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: { frames: { type: 'string' }, 'start-ms': { type: 'string' }, 'timing-changed': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const { positionals, values } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const whole = (name: string, v: string | undefined) => {
    if (v !== undefined && !/^\d+$/.test(v)) throw new Error(`--${name} must be a whole number`);
    return v === undefined ? undefined : Number(v);
  };
  if (positionals.length !== 2) {
    console.error(USAGE);
    return 2;
  }
  let frames: number | undefined;
  let startMs: number | undefined;
  try {
    frames = whole('frames', values.frames);
    startMs = whole('start-ms', values['start-ms']);
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const [source, output] = positionals as [string, string];
  const r = await checkOutput(await resolveMediaBinaries(), source, output, {
    ...(frames !== undefined ? { frames } : {}),
    ...(startMs !== undefined ? { startS: startMs / 1000 } : {}),
    ...(values['timing-changed'] ? { timingChanged: true } : {}),
  });
  console.log(`${r.outputFrames} output frames showing source frames ${r.sourceFrameOf[0] ?? '-'}..${r.sourceFrameOf.at(-1) ?? '-'}`);
  console.log(`dropped: ${r.dropped.length}, repeated: ${r.repeated.length}, timestamps not increasing: ${r.nonIncreasing.length}`);
  if (r.audioOffset) console.log(`audio starts ${r.audioOffset.output.toFixed(3)} s after the first frame (in step with the picture: ${r.audioOffset.expected.toFixed(3)} s)`);
  for (const p of r.problems) console.log(`problem: ${p}`);
  console.log(r.problems.length ? `${r.problems.length} problem(s)` : 'no problem found');
  return r.problems.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(2);
  },
);
