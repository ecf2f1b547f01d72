/**
 * Scenario 3: cold misses at 20 ms upstream latency. Every request asks for a transaction id
 * never asked before (the upstream answers 404, which the proxy stores), through the proxy and
 * straight to the fake upstream with the same delay: what the proxy adds at p50.
 */
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
  const proxy = await startProxy({ upstreamUrl: upstream.url });
  upstream.setDelay(LATENCY_MS);
  try {
    const runs = await alternate(
      'cold miss',
      { direct: [{ url: upstream.url, requests: distinctTxIds('d0') }], proxy: [{ url: proxy.url, pids: [proxy.pid], requests: distinctTxIds('e0') }] },
      options,
    );
    const added = (runs.proxy?.p50Ms ?? 0) - (runs.direct?.p50Ms ?? 0);
    const s = `3 cold miss, upstream +${LATENCY_MS} ms`;
    return {
      id: 'coldMiss',
      rows: [
        { scenario: s, name: 'baseline: the fake upstream called directly', run: runs.direct, note: 'every request a new tx id (404)' },
        { scenario: s, name: 'proxy, every request a new key', run: runs.proxy, baseline: runs.direct, note: `p50 added ${added.toFixed(2)} ms` },
      ],
      findings: [
        `Cold miss at ${LATENCY_MS} ms upstream latency: the proxy adds ${added.toFixed(2)} ms at p50 (target <= 1 ms); p99 ${runs.direct?.p99Ms} -> ${runs.proxy?.p99Ms} ms. The fake upstream shares CPU 1 with the load generator. 404s count as non-2xx, not errors.`,
      ],
      data: { runs, addedP50Ms: added },
    };
  } finally {
    upstream.setDelay(0);
    await stopChild(proxy.child);
  }
}
