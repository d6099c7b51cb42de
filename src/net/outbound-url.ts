/**
 * The outbound URL guard, one policy for every host a customer names: HTTPS video-in sources
 * and webhook URLs (https on port 443) and bucket endpoints (https on any port: S3-compatible
 * stores such as MinIO listen on ports of their own). Only public addresses are allowed, checked
 * after DNS resolution; `localhost` and `*.localhost` (RFC 6761) count as loopback whatever the
 * resolver says. `allowPrivateUrls` (VIDMILL_ALLOW_PRIVATE_URLS) also allows http, any port and
 * private addresses, for tests and air-gapped installs.
 * `guardedLookup` repeats the address check inside the socket's own DNS lookup, so a name that
 * resolves differently between the check and the connection (DNS rebinding) is still refused;
 * `src/net/guarded-agents.ts` installs it on the http(s) agents every connection to a customer's
 * host goes through, and also checks IP literals there. Both read the policy per connection.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { lookup as dnsLookupCallback, LookupAddress, LookupAllOptions, LookupOneOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { BadRequestError } from '../shared/errors';

export interface OutboundPolicy {
  allowPrivateUrls: boolean;
}

const blockedV4 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blockedV4.addSubnet(net, prefix, 'ipv4');
}

const blockedV6 = new BlockList();
for (const [net, prefix] of [
  ['::', 8], // unspecified, loopback, IPv4-compatible and other reserved forms
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  blockedV6.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address an IPv6 address carries (IPv4-mapped, NAT64, 6to4), if any. */
function embeddedIPv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const groups = expandIPv6(lower);
  if (!groups) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) return v4(groups[6], groups[7]); // ::ffff:a.b.c.d
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return v4(groups[6], groups[7]); // NAT64
  if (groups[0] === 0x2002) return v4(groups[1], groups[2]); // 6to4
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address. */
type IPv6Groups = [number, number, number, number, number, number, number, number];

function expandIPv6(address: string): IPv6Groups | undefined {
  let text = address.split('%')[0]!; // split always yields at least one part
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail[1]!.split('.').map(Number) as [number, number, number, number]; // the pattern matched four numbers
    text = text.slice(0, -tail[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const parse = (s: string) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const r = rest === undefined ? [] : parse(rest);
  const fill = rest === undefined ? [] : new Array<number>(8 - h.length - r.length).fill(0);
  const groups = [...h, ...fill, ...r];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? (groups as IPv6Groups) : undefined;
}

/** True when the address is a public unicast address (not loopback, private, link-local, ...). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address.split('%')[0]!);
  if (family === 4) return !blockedV4.check(address, 'ipv4');
  if (family !== 6) return false;
  const v4 = embeddedIPv4(address);
  if (v4 !== undefined) return isPublicAddress(v4);
  return !blockedV6.check(address.split('%')[0]!, 'ipv6');
}

/** What a URL is checked as: the errorCode and wording of a refusal, and the ports https may use. */
interface UrlKind {
  errorCode: 'INVALID_HTTPS_URL' | 'INVALID_BUCKET_ENDPOINT';
  subject: string;
  /** false: https on 443 only (HTTPS sources, webhooks); true: https on any port (bucket endpoints). */
  anyHttpsPort: boolean;
}

const HTTPS_URL: UrlKind = { errorCode: 'INVALID_HTTPS_URL', subject: 'The URL', anyHttpsPort: false };
const BUCKET_ENDPOINT: UrlKind = { errorCode: 'INVALID_BUCKET_ENDPOINT', subject: 'The bucket endpoint', anyHttpsPort: true };

/** `localhost` and every name under it are loopback (RFC 6761), whatever a resolver answers. */
export function isLoopbackName(host: string): boolean {
  return /^(?:.*\.)?localhost\.?$/i.test(host);
}

/** Parses and checks the form of a URL (scheme, port, no credentials); no DNS. */
export function parseOutboundUrl(raw: string, policy: OutboundPolicy): URL {
  return parseUrl(raw, policy, HTTPS_URL);
}

function parseUrl(raw: string, policy: OutboundPolicy, kind: UrlKind): URL {
  const invalid = (message: string) => new BadRequestError(kind.errorCode, `${kind.subject} ${message}`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('is not a valid absolute URL');
  }
  const schemes = policy.allowPrivateUrls ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) throw invalid(policy.allowPrivateUrls ? 'must use https or http' : 'must use https');
  if (!policy.allowPrivateUrls && !kind.anyHttpsPort && url.port !== '' && url.port !== '443') throw invalid('must use port 443');
  if (url.username || url.password) throw invalid('must not carry a user name or password');
  if (!url.hostname) throw invalid('has no host');
  return url;
}

function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * Checks an HTTPS source or webhook URL completely: its form and, unless private addresses are
 * allowed, every address its host resolves to. Throws 400 INVALID_HTTPS_URL.
 */
export function checkOutboundUrl(raw: string, policy: OutboundPolicy, resolve: (host: string) => Promise<string[]> = resolveAll): Promise<URL> {
  return checkUrl(raw, policy, resolve, HTTPS_URL);
}

/**
 * Checks the endpoint of a customer bucket (S3-compatible store) the same way, except that https
 * may use any port. Absent means AWS S3, which needs no check here (the agents still guard it).
 * Throws 400 INVALID_BUCKET_ENDPOINT.
 */
export async function checkBucketEndpoint(raw: string | undefined, policy: OutboundPolicy, resolve: (host: string) => Promise<string[]> = resolveAll): Promise<void> {
  if (raw !== undefined) await checkUrl(raw, policy, resolve, BUCKET_ENDPOINT);
}

async function checkUrl(raw: string, policy: OutboundPolicy, resolve: (host: string) => Promise<string[]>, kind: UrlKind): Promise<URL> {
  const url = parseUrl(raw, policy, kind);
  if (policy.allowPrivateUrls) return url;
  const host = hostOf(url);
  // The resolved address is not echoed: an answer must not map internal names to addresses.
  const nonPublic = (verb: string) => new BadRequestError(kind.errorCode, `${kind.subject}'s host ${host} ${verb} a non-public address`);
  if (isLoopbackName(host)) throw nonPublic('names');
  if (isIP(host)) {
    if (!isPublicAddress(host)) throw nonPublic('is');
    return url;
  }
  const addresses = await resolve(host).catch(() => [] as string[]);
  if (!addresses.length) throw new BadRequestError(kind.errorCode, `${kind.subject}'s host ${host} does not resolve`);
  if (addresses.some((a) => !isPublicAddress(a))) throw nonPublic('resolves to');
  return url;
}

async function resolveAll(host: string): Promise<string[]> {
  return (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The `code` of the error a guarded connection fails with when its host is not public (or, with plain http, not allowed). */
export const NON_PUBLIC_ADDRESS = 'ERR_NON_PUBLIC_ADDRESS';

/** True for the error of a connection the guard refused (possibly wrapped as `cause`). */
export function isNonPublicAddressRefusal(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: unknown } | undefined;
  return e?.code === NON_PUBLIC_ADDRESS || (e?.cause !== undefined && e.cause !== err && isNonPublicAddressRefusal(e.cause));
}

/** The error a guarded connection fails with; it names the host, never the address. */
export function nonPublicAddressError(host: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${host} is not a public address`), { code: NON_PUBLIC_ADDRESS });
}

/**
 * The error of a plain http connection while private URLs are not allowed (http is allowed only
 * with them); the same `code`, so every caller treats it as the guard's refusal.
 */
export function plainHttpRefusedError(host: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${host}: plain http is not allowed`), { code: NON_PUBLIC_ADDRESS });
}

/** A `lookup` for http(s) agents that refuses non-public addresses unless they are allowed. */
export function guardedLookup(policy: OutboundPolicy) {
  return (hostname: string, options: LookupOneOptions | LookupAllOptions | number, callback: LookupCallback): void => {
    const opts = typeof options === 'number' ? { family: options } : options;
    if (!policy.allowPrivateUrls && isLoopbackName(hostname)) return process.nextTick(callback, nonPublicAddressError(hostname), []);
    dnsLookupCallback(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = addresses;
      if (!policy.allowPrivateUrls && list.some((a) => !isPublicAddress(a.address))) return callback(nonPublicAddressError(hostname), []);
      if ((opts as LookupAllOptions).all) return callback(null, list);
      if (!list.length) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), []);
      callback(null, list[0]!.address, list[0]!.family); // not empty: checked above
    });
  };
}
