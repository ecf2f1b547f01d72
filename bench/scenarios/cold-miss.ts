/**
 * Scenario 3: cold misses at 20 ms upstream latency. Every request asks for a transaction id
 * never asked before (the upstream answers 404, which the proxy stores), through the proxy and
 * straight to the fake upstream with the same delay: what the proxy adds at p50.
 *
 * Two loads. A closed loop at the run's connections (50), where on this 2-core machine the
 * proxy's CPU saturates and the added latency is mostly queueing for CPU; and a fixed offered
 * rate that saturates nothing (400 req/s over 10 connections: each connection sends its 40
 * requests of a second back to back, about 10 in flight at any time), where the added latency
 * is the proxy's own. At that rate also a bare node:http + undici forwarder (baselines/
 * forward-server.ts): what any process hop costs here. Latencies are every response's own
 * duration (sub-millisecond), not autocannon's whole-millisecond histogram.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type autocannon from 'autocannon';
import { stopChild } from '../../testkit/index.js';
import { addedP50, busyShare, cpuRatio, ms, UNSATURATED } from '../lib/compare.js';
import { alternate } from '../lib/load.js';
import { startNodeServer, startProxy } from '../lib/proc.js';
import type { Section } from '../lib/report.js';
import type { Context } from './context.js';

const LATENCY_MS = 20;
const { rate: FIXED_RATE, connections: FIXED_RATE_CONNECTIONS } = UNSATURATED;
/** The upstream pool default before issue 10: smaller than the 50 client connections. */
const NARROW_POOL = 32;

/** Requests for ids no other request (of any variant or round) uses. */
function distinctTxIds(prefix: string): autocannon.Request[] {
  let n = 0;
  return [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/extended/v1/tx/0x${prefix}${(n++).toString(16).padStart(62, '0')}` }) }];
}

export async function coldMiss({ options, upstream }: Context): Promise<Section> {
  const [proxy, narrow, forwarder] = await Promise.all([
    startProxy({ upstreamUrl: upstream.url }),
    startProxy({ upstreamUrl: upstream.url, config: { upstream: { connectionsPerUpstream: NARROW_POOL } } }),
    startNodeServer('bench/baselines/forward-server.js', { UPSTREAM_URL: upstream.url }, '/health'),
  ]);
  upstream.setDelay(LATENCY_MS);
  try {
    const fixed = { rate: FIXED_RATE, connections: FIXED_RATE_CONNECTIONS, exactLatency: true };
    const runs = await alternate(
      'cold miss',
      {
        direct: [{ url: upstream.url, requests: distinctTxIds('d0'), exactLatency: true }],
        proxy: [{ url: proxy.url, pids: [proxy.pid], requests: distinctTxIds('e0'), exactLatency: true }],
        narrow: [{ url: narrow.url, pids: [narrow.pid], requests: distinctTxIds('e1'), exactLatency: true }],
        directFixed: [{ url: upstream.url, requests: distinctTxIds('d1'), ...fixed }],
        forwardFixed: [{ url: forwarder.url, pids: [forwarder.pid], requests: distinctTxIds('f0'), ...fixed }],
        proxyFixed: [{ url: proxy.url, pids: [proxy.pid], requests: distinctTxIds('e2'), ...fixed }],
      },
      options,
    );
    // What one cold miss asks the upstream for (a second request per miss would double the latency).
    await sleep(4 * LATENCY_MS); // requests of the last run still in flight
    upstream.resetCounts();
    await fetch(`${proxy.url}/extended/v1/tx/0x${'f'.repeat(64)}`).then((r) => r.arrayBuffer());
    const perMiss = upstream.requests.filter((r) => r.path !== '/extended').map((r) => r.url);
    const added = addedP50(runs.proxy, runs.direct);
    const addedNarrow = addedP50(runs.narrow, runs.direct);
    const addedFixed = addedP50(runs.proxyFixed, runs.directFixed);
    const addedHop = addedP50(runs.forwardFixed, runs.directFixed);
    const s = `3 cold miss, upstream +${LATENCY_MS} ms`;
    const atRate = `${FIXED_RATE} req/s offered over ${FIXED_RATE_CONNECTIONS} connections`;
    return {
      id: 'coldMiss',
      rows: [
        { scenario: s, name: 'baseline: the fake upstream called directly', run: runs.direct, note: 'every request a new tx id (404); closed loop' },
        {
          scenario: s,
          name: 'proxy, every request a new key (defaults: 64 upstream connections)',
          run: runs.proxy,
          baseline: runs.direct,
          note: `p50 added ${ms(added)}; one miss = ${perMiss.length} upstream request(s)`,
        },
        {
          scenario: s,
          name: `proxy, the same, connectionsPerUpstream ${NARROW_POOL} (the default before)`,
          run: runs.narrow,
          baseline: runs.direct,
          note: `p50 added ${ms(addedNarrow)}`,
        },
        { scenario: s, name: `baseline: the fake upstream called directly, ${atRate}`, run: runs.directFixed },
        {
          scenario: s,
          name: `bare node:http + undici forwarder, ${atRate}`,
          run: runs.forwardFixed,
          baseline: runs.directFixed,
          note: `p50 added ${ms(addedHop)}: the hop alone`,
        },
        {
          scenario: s,
          name: `proxy at its defaults, ${atRate}`,
          run: runs.proxyFixed,
          baseline: runs.directFixed,
          note: `p50 added ${ms(addedFixed)}; CPU ${cpuRatio(runs.proxyFixed, runs.forwardFixed)} the forwarder's`,
        },
      ],
      findings: [
        `Cold miss at ${LATENCY_MS} ms upstream latency: at a fixed ${atRate} (nothing saturated) the proxy adds ${ms(addedFixed)} at p50 (target <= 1 ms), ` +
          `at ${runs.proxyFixed?.cpuMicrosPerRequest ?? '?'} µs of proxy CPU per miss; a bare node:http + undici forwarder adds ${ms(addedHop)} at ` +
          `${runs.forwardFixed?.cpuMicrosPerRequest ?? '?'} µs (two more wake-ups of a process on another core: the floor of any hop here); in a closed loop of ${options.connections} connections it adds ${ms(added)} at its defaults ` +
          `(${runs.proxy?.cpuMicrosPerRequest ?? '?'} µs per miss, ${busyShare(runs.proxy)} of the proxy's core busy: misses arriving together wait for each other) and ${ms(addedNarrow)} with the ` +
          `former pool of ${NARROW_POOL} upstream connections, where misses also wait for a free connection. Latencies are per-response durations to 0.01 ms; p99 closed loop ` +
          `${runs.direct?.p99Ms} -> ${runs.proxy?.p99Ms} ms. The fake upstream shares CPU 1 with the load generator. 404s count as non-2xx, not errors. One cold miss sent the upstream: ${perMiss.join(', ')}.`,
      ],
      data: {
        runs,
        addedP50Ms: added,
        addedP50MsNarrowPool: addedNarrow,
        addedP50MsFixedRate: addedFixed,
        addedP50MsForwarderFixedRate: addedHop,
        fixedRate: FIXED_RATE,
        fixedRateConnections: FIXED_RATE_CONNECTIONS,
        upstreamRequestsPerMiss: perMiss,
      },
    };
  } finally {
    upstream.setDelay(0);
    await stopChild(proxy.child);
    await stopChild(narrow.child);
    await stopChild(forwarder.child);
  }
}
