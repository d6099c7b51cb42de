/**
 * http and https agents under the outbound policy, for clients whose requests go to a host a
 * customer named (the S3 clients of customer buckets). Every socket they open is checked where
 * it is opened:
 * - a host name through `guardedLookup`: the address resolved is checked and is the one
 *   connected to, so neither DNS rebinding nor a redirect to another name reaches a private
 *   address;
 * - an IP literal in `createConnection`, since Node connects to a literal without any lookup.
 * A refused socket fails with `code` ERR_NON_PUBLIC_ADDRESS before any packet is sent.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { guardedLookup, isPublicAddress, nonPublicAddressError, OutboundPolicy } from './outbound-url';

export interface GuardedAgents {
  httpAgent: http.Agent;
  httpsAgent: https.Agent;
}

type ConnectCallback = (err: Error | null, stream: Duplex) => void;

/** The refusal of a literal, non-public host; undefined when the connection may go ahead. */
function literalRefusal(policy: OutboundPolicy, options: { host?: string | null; hostname?: string | null }): Error | undefined {
  if (policy.allowPrivateUrls) return undefined;
  const host = String(options.host ?? options.hostname ?? '').replace(/^\[(.*)\]$/, '$1');
  return isIP(host) && !isPublicAddress(host) ? nonPublicAddressError(host) : undefined;
}

/**
 * A pair of agents; the caller owns them (`destroy()` when done). `maxSockets` per origin, as the
 * AWS SDK's own default agents have.
 */
export function guardedAgents(policy: OutboundPolicy, opts: { keepAlive?: boolean; maxSockets?: number } = {}): GuardedAgents {
  const options = { keepAlive: opts.keepAlive ?? true, maxSockets: opts.maxSockets ?? 50, lookup: guardedLookup(policy) };

  class GuardedHttpAgent extends http.Agent {
    override createConnection(o: http.ClientRequestArgs, callback?: ConnectCallback): Duplex | null | undefined {
      const refused = literalRefusal(policy, o);
      if (refused) return void process.nextTick(() => callback?.(refused, undefined as unknown as Socket));
      return super.createConnection(o, callback);
    }
  }
  class GuardedHttpsAgent extends https.Agent {
    override createConnection(o: https.RequestOptions, callback?: ConnectCallback): Duplex | null | undefined {
      const refused = literalRefusal(policy, o);
      if (refused) return void process.nextTick(() => callback?.(refused, undefined as unknown as Socket));
      return super.createConnection(o, callback);
    }
  }
  return { httpAgent: new GuardedHttpAgent(options), httpsAgent: new GuardedHttpsAgent(options) };
}
