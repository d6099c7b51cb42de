/**
 * The one way Vidmill connects to a host a customer named: http and https agents under the
 * outbound policy, used by the S3 clients of customer buckets, the HTTPS (and, where allowed,
 * http) sources of video in and webhook deliveries. Every socket they open is checked where it
 * is opened, against the policy as it is at that moment (`policy.allowPrivateUrls` is read per
 * connection, so a URL stored, queued or retried while private addresses were allowed is refused
 * once they no longer are):
 * - a host name through `guardedLookup`: the address resolved is checked and is the one
 *   connected to, so neither DNS rebinding nor a redirect to another name reaches a private
 *   address;
 * - an IP literal in `createConnection`, since Node connects to a literal without any lookup;
 * - plain http only while private URLs are allowed (the policy's only use of http).
 * A refused socket fails with `code` ERR_NON_PUBLIC_ADDRESS before any packet is sent. A request
 * sent without one of these agents would use Node's global agent, unguarded: never do that for a
 * customer's host.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { rootCertificates } from 'node:tls';
import type { Duplex } from 'node:stream';
import { guardedLookup, isPublicAddress, nonPublicAddressError, OutboundPolicy, plainHttpRefusedError } from './outbound-url';

export interface GuardedAgents {
  httpAgent: http.Agent;
  httpsAgent: https.Agent;
}

export interface GuardedAgentOptions {
  keepAlive?: boolean;
  /** Sockets per origin; default 50, as the AWS SDK's own default agents have. */
  maxSockets?: number;
  /** Certificate authorities trusted besides the system's (PEM), e.g. a private CA. */
  extraCa?: string[];
}

type ConnectCallback = (err: Error | null, stream: Duplex) => void;
type ConnectOptions = { host?: string | null; hostname?: string | null };

/**
 * The methods of Node's Agent the guard wraps: `createConnection` opens every new connection,
 * `addRequest` (undocumented, long-standing) is where a pooled one is chosen for a request, and
 * `keepSocketAlive` decides whether a free one is pooled (Node returns a boolean; its types say void).
 */
interface AgentHooks {
  createConnection(o: http.ClientRequestArgs, callback?: ConnectCallback): Duplex | null | undefined;
  addRequest(req: http.ClientRequest, o: http.RequestOptions): void;
  keepSocketAlive(socket: Socket): unknown;
}

/** Named, so a client's agents can be told apart from Node's (what `guard` installs is on the instance). */
class GuardedHttpAgent extends http.Agent {}
class GuardedHttpsAgent extends https.Agent {}

function hostOf(options: ConnectOptions): string {
  return String(options.host ?? options.hostname ?? '').replace(/^\[(.*)\]$/, '$1');
}

/**
 * A pair of agents; the caller owns them (`destroy()` when done). Each connection is checked
 * against `policy` when it is made; the agents' own guarded lookup is used whatever lookup a
 * request names. A kept-alive connection opened while private URLs were allowed is not reused
 * once they are not: it is closed, and the request opens (and checks) a new one.
 */
export function guardedAgents(policy: OutboundPolicy, opts: GuardedAgentOptions = {}): GuardedAgents {
  const lookup: LookupFunction = guardedLookup(policy);
  const options = { keepAlive: opts.keepAlive ?? true, maxSockets: opts.maxSockets ?? 50, lookup };
  /** Connections opened while private URLs were allowed: reused only while they still are. */
  const lenient = new WeakSet<object>();
  const outdated = (socket: object) => !policy.allowPrivateUrls && lenient.has(socket);

  /** Wraps the agent's hooks: `refusal` says whether a new connection may be opened. */
  const guard = <A extends http.Agent>(agent: A, refusal: (o: ConnectOptions) => Error | undefined): A => {
    const hooks = agent as unknown as AgentHooks;
    const create = hooks.createConnection.bind(agent);
    const add = hooks.addRequest.bind(agent);
    const keep = hooks.keepSocketAlive.bind(agent);
    hooks.createConnection = (o, callback) => {
      const refused = policy.allowPrivateUrls ? undefined : refusal(o);
      if (refused) return void process.nextTick(() => callback?.(refused, undefined as unknown as Socket));
      const socket = create({ ...o, lookup }, callback);
      if (socket && policy.allowPrivateUrls) lenient.add(socket);
      return socket;
    };
    hooks.addRequest = (req, o) => {
      for (const free of Object.values(agent.freeSockets)) {
        for (const socket of (free ?? []).filter(outdated)) {
          free!.splice(free!.indexOf(socket), 1); // free holds it: filtered from it
          socket.destroy();
        }
      }
      add(req, o);
    };
    hooks.keepSocketAlive = (socket) => !outdated(socket) && keep(socket) !== false;
    return agent;
  };

  const ca = opts.extraCa?.length ? { ca: [...rootCertificates, ...opts.extraCa] } : {};
  return {
    // Plain http only while private URLs are allowed (the policy's only use of http).
    httpAgent: guard(new GuardedHttpAgent(options), (o) => plainHttpRefusedError(hostOf(o))),
    // A literal is checked here; a name by the lookup.
    httpsAgent: guard(new GuardedHttpsAgent({ ...options, ...ca }), (o) => {
      const host = hostOf(o);
      return isIP(host) && !isPublicAddress(host) ? nonPublicAddressError(host) : undefined;
    }),
  };
}
