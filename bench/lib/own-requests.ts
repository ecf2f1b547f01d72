/**
 * The proxy's own upstream requests for the wallet mix's report (issue 28): those no client
 * request explains, counted at the fake upstream, and by purpose from the proxy's Prometheus page
 * (`stacks_proxy_own_upstream_requests_total{purpose}`).
 */
/** `stacks_proxy_own_upstream_requests_total{purpose}` from a Prometheus text page; undefined when absent. */
export function ownRequestsByPurpose(metrics: string): Record<string, number> | undefined {
  const out: Record<string, number> = {};
  let found = false;
  for (const line of metrics.split('\n')) {
    const m = /^stacks_proxy_own_upstream_requests_total\{([^}]*)\}\s+([0-9.e+]+)/.exec(line);
    if (!m) continue;
    found = true;
    const purpose = /purpose="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '';
    out[purpose] = (out[purpose] ?? 0) + Number(m[2]);
  }
  return found ? out : undefined;
}

export interface ClientRequest {
  method: string;
  url: string;
  xCache?: string;
}

export interface UpstreamRequest {
  method: string;
  url: string;
  family: string;
}

/**
 * The key an upstream request and a client request share when one caused the other: method, path
 * and query without `limit` and `offset` (the proxy drops a default page size, e.g. `?limit=20`
 * on address transactions), the rest sorted.
 */
function causeKey(method: string, url: string): string {
  const q = url.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  params.delete('limit');
  params.delete('offset');
  params.sort();
  return `${method === 'HEAD' ? 'GET' : method} ${q < 0 ? url : url.slice(0, q)}?${params.toString()}`;
}

/**
 * The proxy's own upstream requests: per key (causeKey), those beyond the client requests of that
 * key the proxy did not answer from cache (each such client request may cause one upstream
 * request, no more): tip polls, watcher pages, contract lookups, block reads, upgrades, and
 * (`onClientUrls`) reads of URLs clients ask that the proxy made behind answers from cache.
 */
export function ownRequests(
  exchanges: readonly ClientRequest[],
  received: readonly UpstreamRequest[],
): { own: number; ownByFamily: Record<string, number>; onClientUrls: number } {
  const clientMisses = new Map<string, number>();
  const clientKeys = new Set<string>();
  for (const e of exchanges) {
    const key = causeKey(e.method, e.url);
    clientKeys.add(key);
    const x = (e.xCache ?? '').toUpperCase();
    if (x === 'HIT' || x === 'STALE') continue;
    clientMisses.set(key, (clientMisses.get(key) ?? 0) + 1);
  }
  let own = 0;
  let onClientUrls = 0;
  const ownByFamily: Record<string, number> = {};
  for (const r of received) {
    const key = causeKey(r.method, r.url);
    const left = clientMisses.get(key) ?? 0;
    if (left > 0) {
      clientMisses.set(key, left - 1);
      continue;
    }
    own++;
    // A client asks this URL too, but was answered from cache: a refresh or check behind a hit.
    if (clientKeys.has(key)) onClientUrls++;
    ownByFamily[r.family] = (ownByFamily[r.family] ?? 0) + 1;
  }
  return { own, ownByFamily, onClientUrls };
}
