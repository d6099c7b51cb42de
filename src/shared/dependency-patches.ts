/**
 * The run-time patches of dependencies (src/http/openapi-validator-route-cache.ts,
 * src/http/openapi-validator-ref-resolution.ts, src/db/better-sqlite3-statement-cache.ts) can be left out one by one to measure what each is worth: `VIDMILL_DISABLE_PATCHES=name,...` (a measurement switch,
 * set by `BENCH_API_WITHOUT` in bench/api.ts; not an operator setting).
 */
export type DependencyPatch = 'openapi-validator-route-cache' | 'openapi-validator-ref-resolution' | 'better-sqlite3-statement-cache';

export function patchDisabled(name: DependencyPatch): boolean {
  return (process.env.VIDMILL_DISABLE_PATCHES ?? '').split(',').includes(name);
}
