/**
 * The process's JSON-RPC links to its upstreams, one per upstream origin, created on first use.
 * One instance lives in the composition root and is shared by the push feed and the WebSocket
 * fan-out, so that each upstream costs one JSON-RPC WebSocket however many parts want it.
 */
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { upstreamHeadersFor } from '../upstream/outgoing-headers.js';
import { UpstreamRpcLink, type UpstreamRpcLinkOptions } from './upstream-rpc-link.js';

export class UpstreamLinks {
  private readonly links = new Map<string, UpstreamRpcLink>();
  private closed = false;

  constructor(private readonly optionsFor: (origin: string) => UpstreamRpcLinkOptions) {}

  /** The link to `origin`, created and started on first use. After close(): a closed link (its subscribes answer `closed`). */
  linkFor(origin: string): UpstreamRpcLink {
    let link = this.links.get(origin);
    if (link) return link;
    link = new UpstreamRpcLink(this.optionsFor(origin));
    if (this.closed) {
      void link.close();
      return link;
    }
    this.links.set(origin, link);
    link.start();
    return link;
  }

  /** The links made so far. */
  all(): UpstreamRpcLink[] {
    return [...this.links.values()];
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.links.values()].map((link) => link.close()));
  }
}

/**
 * The links as the configuration says: the operator's headers of each upstream (the same ones
 * reads, tip polls and passthrough upgrades send), live.push's ping and reconnect timings,
 * live.fanout.maxUpstreamSubscriptions topics per link. No connection is made until a link is asked for.
 */
export function upstreamLinksFor(config: Config, telemetry: Telemetry, clock: Clock): UpstreamLinks {
  const { pingIntervalMs, reconnectMinMs, reconnectMaxMs } = config.live.push;
  return new UpstreamLinks((origin) => ({
    origin,
    headers: () => upstreamHeadersFor(origin, config.upstream),
    pingIntervalMs,
    reconnectMinMs,
    reconnectMaxMs,
    maxSubscriptions: config.live.fanout.maxUpstreamSubscriptions,
    telemetry,
    clock,
  }));
}
