/**
 * Run-time patch of express-openapi-validator (5.x, with path-to-regexp 8.x).
 *
 * The validator finds the operation of a request by walking the document's routes in order and
 * compiling each one with path-to-regexp's `pathToRegexp` until one matches, on every request
 * (`lookupRoute` in its middlewares/openapi.metadata.js). For `GET /api/v1/projects` that is
 * about fifteen compilations per request, a tenth of the request's CPU in `npm run bench -- api`.
 *
 * `installOpenApiValidatorRouteCache()` memoises `pathToRegexp` on the path-to-regexp module
 * instance the validator loads, for string paths and the options the validator passes
 * (`sensitive`, `strict`). The result is the same (a fresh compilation of the same route and
 * options gives an equal regexp and keys; a test compares them for every route of the
 * contract); it is frozen, and its regexp carries neither the `g` nor the `y` flag, so sharing it
 * between requests keeps no state. Anything else (other options, non-string paths) goes to the
 * original function. Express's router is unaffected: it compiles its layers once, through
 * path-to-regexp's own internal reference.
 *
 * What it relies on (test/unit/openapi-validator-route-cache.test.ts fails when an upgrade breaks
 * it): the validator requires `path-to-regexp` and calls `pathToRegexp` through that module object
 * on every lookup, and the function returns `{ regexp, keys }`. Installing throws when the module
 * has no `pathToRegexp` function.
 */
import { createRequire } from 'node:module';
import { patchDisabled } from '../shared/dependency-patches';

type PathToRegexp = (path: unknown, options?: Record<string, unknown>) => { regexp: RegExp; keys: unknown[] };

const INSTALLED = Symbol.for('vidmill.routeRegexpCache');
/** Bound on cached entries (the document has about 60 routes). */
const MAX_ENTRIES = 1000;

/** The path-to-regexp module object that express-openapi-validator uses. */
export function validatorPathToRegexpModule(): { pathToRegexp: PathToRegexp; [INSTALLED]?: PathToRegexp } {
  return createRequire(require.resolve('express-openapi-validator'))('path-to-regexp') as ReturnType<typeof validatorPathToRegexpModule>;
}

type RouteCache = Map<string, ReturnType<PathToRegexp>>;

/** One map per (sensitive, strict) combination, keyed by the route string itself. */
const caches: readonly [RouteCache, RouteCache, RouteCache, RouteCache] = [new Map(), new Map(), new Map(), new Map()];
let hits = 0;

/** Lookups answered from the cache so far (tests: proves the validator goes through it). */
export function routeCacheHits(): number {
  return hits;
}

export function installOpenApiValidatorRouteCache(): void {
  if (patchDisabled('openapi-validator-route-cache')) return;
  const mod = validatorPathToRegexpModule();
  if (mod[INSTALLED]) return;
  const original = mod.pathToRegexp;
  if (typeof original !== 'function') {
    throw new Error(
      'openapi-validator-route-cache: the path-to-regexp that express-openapi-validator loads has no pathToRegexp function (dependency upgraded? see src/http/openapi-validator-route-cache.ts)',
    );
  }
  const cached: PathToRegexp = (path, options) => {
    if (typeof path !== 'string' || (options !== undefined && !onlyKnownOptions(options))) return original(path, options);
    const cache = caches[((options?.sensitive ? 2 : 0) + (options?.strict ? 1 : 0)) as 0 | 1 | 2 | 3];
    let hit = cache.get(path);
    if (hit !== undefined) hits++;
    else {
      const compiled = original(path, options);
      if (compiled.regexp.global || compiled.regexp.sticky) return compiled; // stateful: never shared
      hit = Object.freeze({ regexp: compiled.regexp, keys: Object.freeze(compiled.keys) as unknown[] });
      if (cache.size >= MAX_ENTRIES) cache.clear();
      cache.set(path, hit);
    }
    return hit;
  };
  mod.pathToRegexp = cached;
  mod[INSTALLED] = original;
}

function onlyKnownOptions(options: Record<string, unknown>): boolean {
  for (const k in options) if (k !== 'sensitive' && k !== 'strict') return false;
  return true;
}
