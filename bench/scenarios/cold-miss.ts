/**
 * Scenario 3: cold misses at 20 ms upstream latency. Every request asks for a transaction id
 * never asked before (the upstream answers 404, which the proxy stores), through the proxy and
 * straight to the fake upstream with the same delay: what the proxy adds at p50.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type autocannon from 'autocannon';
import { stopChild } from '../../testkit/index.js';
import { alternate } from '../lib/load.js';
import { startProxy } from '../lib/proc.js';
import type { Section } from '../lib/report.js';
import type { Context } from './context.js';

const LATENCY_MS = 20;

/** Requests for ids no other request (of any variant or round) uses. */
function distinctTxIds(prefix: string): autocannon.Request[] {
  let n = 0;
  return [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/extended/v1/tx/0x${prefix}${(n++).toString(16).padStart(62, '0')}` }) }];
}

export async function coldMiss({ options, upstream }: Context): Promise<Section> {
  const [proxy, wide] = await Promise.all([
    startProxy({ upstreamUrl: upstream.url }),
    // The default pool (upstream.connectionsPerUpstream 32) is smaller than the 50 client
  // connections: misses queue for a connection. A pool as large as the load shows the proxy's own cost.
    startProxy({ upstreamUrl: upstream.url, config: { upstream: { connectionsPerUpstream: 64 } } }),
  ]);
  upstream.setDelay(LATENCY_MS);
  try {
    const runs = await alternate(
      'cold miss',
      { direct: [{ url: upstream.url, requests: distinctTxIds('d0') }], proxy: [{ url: proxy.url, pids: [proxy.pid], requests: distinctTxIds('e0') }], wide: [{ url: wide.url, pids: [wide.pid], requests: distinctTxIds('e1') }] },
      options,
    );
    // What one cold miss asks the upstream for (a second request per miss would double the latency).
    await sleep(4 * LATENCY_MS); // requests of the last run still in flight
    upstream.resetCounts();
    await fetch(`${proxy.url}/extended/v1/tx/0x${'f'.repeat(64)}`).then((r) => r.arrayBuffer());
    const perMiss = upstream.requests.filter((r) => r.path !== '/extended').map((r) => r.url);
    const added = (runs.proxy?.p50Ms ?? 0) - (runs.direct?.p50Ms ?? 0);
    const addedWide = (runs.wide?.p50Ms ?? 0) - (runs.direct?.p50Ms ?? 0);
    const s = `3 cold miss, upstream +${LATENCY_MS} ms`;
    return {
      id: 'coldMiss',
      rows: [
        { scenario: s, name: 'baseline: the fake upstream called directly', run: runs.direct, note: 'every request a new tx id (404)' },
        { scenario: s, name: 'proxy, every request a new key (defaults: 32 upstream connections)', run: runs.proxy, baseline: runs.direct, note: `p50 added ${added.toFixed(2)} ms; one miss = ${perMiss.length} upstream request(s)` },
        { scenario: s, name: 'proxy, the same, connectionsPerUpstream 64', run: runs.wide, baseline: runs.direct, note: `p50 added ${addedWide.toFixed(2)} ms` },
      ],
      findings: [
        `Cold miss at ${LATENCY_MS} ms upstream latency: the proxy adds ${added.toFixed(2)} ms at p50 at its defaults, where 50 client connections queue for 32 upstream connections, and ${addedWide.toFixed(2)} ms with a pool of 64 (target <= 1 ms; autocannon reports whole milliseconds); p99 ${runs.direct?.p99Ms} -> ${runs.proxy?.p99Ms} ms. The fake upstream shares CPU 1 with the load generator. 404s count as non-2xx, not errors. One cold miss sent the upstream: ${perMiss.join(', ')}.`,
      ],
      data: { runs, addedP50Ms: added, addedP50MsWidePool: addedWide, upstreamRequestsPerMiss: perMiss },
    };
  } finally {
    upstream.setDelay(0);
    await stopChild(proxy.child);
    await stopChild(wide.child);
  }
}
