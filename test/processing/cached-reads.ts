/**
 * Reads of unchanging source files made once per process: the output checker (checkOutput) reads
 * its source in full each time it judges an output (its streams and frame times in one ffprobe run,
 * its 16x12 pictures in one ffmpeg run), the same two runs for every output of that source. `readCachingBins`
 * gives binaries that answer a repeated read of a registered source from the first answer: an
 * ffprobe whose file is a registered source (its standard output kept), and an ffmpeg decoding
 * one registered source to raw video (`-f rawvideo`, the output file kept). Every other run, and
 * every run on an output, goes to the real binary unchanged (the outputs are always read afresh).
 *
 * The sources must not change after they are registered (each test process has its own copies,
 * test/helpers/media-cache.ts). A read that fails is not kept.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MediaBinaries } from '../../src/media';

/** The wrapper: `$1` the real binary, `$2` the folder of the cache (with `sources`, one path a line), then the arguments. */
const WRAPPER = `#!/bin/sh
real=$1; dir=$2; shift 2
for last; do :; done
kind=
if [ "\${real##*/}" = ffprobe ]; then
  grep -qxF -- "$last" "$dir/sources" && kind=stdout
else
  inputs=0; src=; fmt=; prev=
  for a; do
    [ "$prev" = -i ] && { inputs=$((inputs + 1)); src=$a; }
    [ "$prev" = -f ] && fmt=$a
    prev=$a
  done
  [ "$inputs" = 1 ] && { [ "$fmt" = rawvideo ] || [ "$fmt" = f32le ]; } && [ "$last" != - ] && grep -qxF -- "$src" "$dir/sources" && kind=file
fi
[ -z "$kind" ] && exec "$real" "$@"
if [ "$kind" = stdout ]; then
  key=$(printf '%s\\0' "$real" "$@" | sha256sum | cut -c1-32)
  [ -f "$dir/$key" ] && exec cat "$dir/$key"
  "$real" "$@" > "$dir/$key.tmp.$$" || { rc=$?; cat "$dir/$key.tmp.$$"; rm -f "$dir/$key.tmp.$$"; exit $rc; }
  mv "$dir/$key.tmp.$$" "$dir/$key"
  exec cat "$dir/$key"
fi
n=$#; i=0; for a; do i=$((i + 1)); [ $i -lt $n ] && set -- "$@" "$a"; done; shift $n
key=$(printf '%s\\0' "$real" "$@" | sha256sum | cut -c1-32)
if [ ! -f "$dir/$key" ]; then
  "$real" "$@" "$dir/$key.tmp.$$" || { rc=$?; rm -f "$dir/$key.tmp.$$"; exit $rc; }
  mv "$dir/$key.tmp.$$" "$dir/$key"
fi
exec cp "$dir/$key" "$last"
`;

/** `b` whose repeated reads of `sources` (whole files, read by the output checker) are made once. */
export function readCachingBins(b: MediaBinaries, sources: readonly string[]): MediaBinaries {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-reads-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'sources'), sources.map((s) => `${s}\n`).join(''));
  const wrapper = path.join(dir, 'read');
  writeFileSync(wrapper, WRAPPER);
  chmodSync(wrapper, 0o755);
  const via = (tool: 'ffmpeg' | 'ffprobe', real: string) => {
    const file = path.join(dir, tool);
    writeFileSync(file, `#!/bin/sh\nexec ${JSON.stringify(wrapper)} ${JSON.stringify(real)} ${JSON.stringify(dir)} "$@"\n`);
    chmodSync(file, 0o755);
    return file;
  };
  return { ...b, ffmpeg: via('ffmpeg', b.ffmpeg), ffprobe: via('ffprobe', b.ffprobe) };
}
