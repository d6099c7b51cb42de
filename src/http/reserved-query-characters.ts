/**
 * Query values with reserved characters. RFC 3986 allows `:`, `/`, `?`, `@` and the sub-delims
 * (`! $ ' ( ) * , ; =`) unencoded in a query, and curl or a hand-written client sends
 * `?fromDateTime=2026-11-01T00:00:00Z` with raw colons. express-openapi-validator refuses such
 * a value ("must be url encoded") unless the parameter declares `allowReserved: true`.
 *
 * The published contract does not declare it: to a generated SDK `allowReserved` means "send
 * these characters unencoded", and an SDK that stopped encoding `&` or `#` in a free-text value
 * (a video name) would cut the query, and one that sent `+` raw in a UTC offset would have it read
 * as a space. So SDKs keep encoding, and the server validates requests against a copy of the
 * contract in which every query parameter allows reserved characters: a value is accepted raw or
 * percent-encoded alike. `&`, `#` and `+` keep their query meaning and must be encoded.
 */

/** A copy of the contract whose query parameters all allow reserved characters (for the request validator only). */
export function acceptReservedQueryCharacters<T extends object>(contract: T): T {
  type Parameter = { $ref?: string; in?: string; allowReserved?: boolean } | null | undefined;
  type PathItem = { parameters?: Parameter[] } & Record<string, unknown>;
  const copy = structuredClone(contract) as T & { components?: { parameters?: Record<string, Parameter> }; paths?: Record<string, PathItem> };
  const allow = (p: Parameter) => {
    if (p && !p.$ref && p.in === 'query') p.allowReserved = true;
  };
  Object.values(copy.components?.parameters ?? {}).forEach(allow);
  for (const item of Object.values(copy.paths ?? {})) {
    (item.parameters ?? []).forEach(allow);
    for (const op of Object.values(item)) if (op && typeof op === 'object' && Array.isArray((op as PathItem).parameters)) (op as PathItem).parameters!.forEach(allow);
  }
  return copy;
}
