/**
 * Scenario 8: the passthrough (requests outside the 13 cached routes, sent on uncached through
 * the passthrough's own undici pools): a small JSON GET (`/v2/info`, about 260 bytes) and a POST
 * of a 512-byte JSON body (`/v2/transactions`, a broadcast), each through the proxy, through a
 * bare node:http + undici forwarder (baselines/forward-server.ts: what any process hop costs
 * here), and to the fake upstream directly.
 *
 * Two loads, as for cold misses. A fixed offered rate that saturates nothing (UNSATURATED, the
 * upstream answering in 20 ms so that requests go out steadily), where the added latency is the
 * server's own; and a closed loop at the run's connections with the upstream answering at once,
 * where req/s and CPU per request tell the server's capacity; there the proxy is compared with
 * the forwarder only (the fake upstream called directly in a closed loop measures the load
 * generator's core, which it shares). Latencies are every response's own duration (to 0.01 ms).
 * Ten variants, so each run is a third of the run's seconds (1 s at the defaults; autocannon ends
 * runs on whole seconds): the scenario takes about a minute, 20 s with --quick.
 */
import type autocannon from 'autocannon';
import { stopChild } from '../../testkit/index.js';
import { addedP50, addedP99, busyShare, cpuRatio, ms, UNSATURATED } from '../lib/compare.js';
import { alternate, type Run, type Target } from '../lib/load.js';
import { startNodeServer, startProxy, type Server } from '../lib/proc.js';
import type { Row, Section } from '../lib/report.js';
import type { Context } from './context.js';

const LATENCY_MS = 20;
const GET_PATH = '/v2/info';
const POST_PATH = '/v2/transactions';
/** A broadcast as a JSON body of exactly 512 bytes (trailing whitespace is valid JSON). */
const POST_BODY = JSON.stringify({ tx: `0x${'80'.repeat(249)}` }).padEnd(512, ' ');

interface Call {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

const CALLS: Record<'get' | 'post', Call> = {
  get: { method: 'GET', path: GET_PATH, headers: { accept: 'application/json' } },
  post: { method: 'POST', path: POST_PATH, headers: { accept: 'application/json', 'content-type': 'application/json' }, body: POST_BODY },
};

/** The same request through the bare forwarder and through the proxy, and with `upstreamUrl` to the upstream directly. */
function variants(forwarder: Server, proxy: Server, load: Partial<Target>, upstreamUrl?: string): Record<string, Target[]> {
  const out: Record<string, Target[]> = {};
  for (const [method, call] of Object.entries(CALLS)) {
    const requests: autocannon.Request[] = [call];
    if (upstreamUrl) out[`${method}Direct`] = [{ url: upstreamUrl, requests, exactLatency: true, ...load }];
    out[`${method}Forward`] = [{ url: forwarder.url, pids: [forwarder.pid], requests, exactLatency: true, ...load }];
    out[`${method}Proxy`] = [{ url: proxy.url, pids: [proxy.pid], requests, exactLatency: true, ...load }];
  }
  return out;
}

/** Fails the scenario unless the proxy sends both requests on uncached: otherwise it would measure something else. */
async function assertPassthrough(proxyUrl: string): Promise<void> {
  for (const call of Object.values(CALLS)) {
    const response = await fetch(proxyUrl + call.path, { method: call.method, headers: call.headers, body: call.body });
    await response.arrayBuffer();
    if (response.status !== 200 || response.headers.get('x-cache') !== 'BYPASS') {
      throw new Error(
        `passthrough bench: ${call.method} ${call.path} answered ${response.status}, X-Cache ${response.headers.get('x-cache')}; expected 200 BYPASS`,
      );
    }
  }
}

interface Trio {
  direct?: Run;
  forward?: Run;
  proxy?: Run;
}

const trio = (runs: Record<string, Run>, method: string): Trio => ({
  direct: runs[`${method}Direct`],
  forward: runs[`${method}Forward`],
  proxy: runs[`${method}Proxy`],
});

const added = (run: Run | undefined, direct: Run | undefined): string => `p50 ${ms(addedP50(run, direct))}, p99 ${ms(addedP99(run, direct))} over direct`;

function fixedRateRows(scenario: string, what: string, load: string, t: Trio): Row[] {
  return [
    { scenario, name: `baseline: the fake upstream called directly, ${what}, ${load}`, run: t.direct },
    { scenario, name: `baseline: bare node:http + undici forwarder, ${what}, ${load}`, run: t.forward, note: `${added(t.forward, t.direct)}: the hop alone` },
    {
      scenario,
      name: `proxy passthrough, ${what}, ${load}`,
      run: t.proxy,
      baseline: t.forward,
      note: `${added(t.proxy, t.direct)}; CPU ${cpuRatio(t.proxy, t.forward)} the forwarder's`,
    },
  ];
}

function closedLoopRows(scenario: string, what: string, load: string, t: Trio): Row[] {
  return [
    { scenario, name: `baseline: bare node:http + undici forwarder, ${what}, ${load}`, run: t.forward, note: `${busyShare(t.forward)} of its core busy` },
    {
      scenario,
      name: `proxy passthrough, ${what}, ${load}`,
      run: t.proxy,
      baseline: t.forward,
      note: `p50 ${ms(addedP50(t.proxy, t.forward))}, p99 ${ms(addedP99(t.proxy, t.forward))} over the forwarder; ${busyShare(t.proxy)} of its core busy`,
    },
  ];
}

const reqRatio = (run: Run | undefined, base: Run | undefined): string =>
  run && base?.requestsPerSecond ? `${(run.requestsPerSecond / base.requestsPerSecond).toFixed(2)}x` : '?';

function finding(what: string, atRate: string, fixed: Trio, closed: Trio, connections: number): string {
  return (
    `Passthrough ${what}: at a fixed ${atRate} the proxy adds ${ms(addedP50(fixed.proxy, fixed.direct))} at p50 and ${ms(addedP99(fixed.proxy, fixed.direct))} at p99 over calling ` +
    `the upstream directly, where the bare forwarder adds ${ms(addedP50(fixed.forward, fixed.direct))} and ${ms(addedP99(fixed.forward, fixed.direct))}; ` +
    `its CPU per request is ${cpuRatio(fixed.proxy, fixed.forward)} the forwarder's (${fixed.proxy?.cpuMicrosPerRequest ?? '?'} vs ${fixed.forward?.cpuMicrosPerRequest ?? '?'} µs). ` +
    `In a closed loop of ${connections} connections: ${reqRatio(closed.proxy, closed.forward)} the forwarder's req/s (${closed.proxy?.requestsPerSecond ?? '?'} vs ${closed.forward?.requestsPerSecond ?? '?'}; ` +
    `cores ${busyShare(closed.proxy)} and ${busyShare(closed.forward)} busy) at ${cpuRatio(closed.proxy, closed.forward)} its CPU per request, p50/p99 ` +
    `${closed.proxy?.p50Ms ?? '?'}/${closed.proxy?.p99Ms ?? '?'} ms vs ${closed.forward?.p50Ms ?? '?'}/${closed.forward?.p99Ms ?? '?'} ms.`
  );
}

export async function passthrough({ options, upstream }: Context): Promise<Section> {
  const [proxy, forwarder] = await Promise.all([
    startProxy({ upstreamUrl: upstream.url }),
    startNodeServer('bench/baselines/forward-server.js', { UPSTREAM_URL: upstream.url }, '/health'),
  ]);
  try {
    await assertPassthrough(proxy.url);
    upstream.setDelay(LATENCY_MS);
    const short = { ...options, seconds: Math.max(1, Math.round(options.seconds / 3)) };
    const fixedRuns = await alternate('passthrough, fixed rate', variants(forwarder, proxy, { ...UNSATURATED }, upstream.url), short);
    upstream.setDelay(0);
    const closedRuns = await alternate('passthrough, closed loop', variants(forwarder, proxy, {}), short);
    const s = '8 passthrough';
    const atRate = `${UNSATURATED.rate} req/s offered over ${UNSATURATED.connections} connections, upstream +${LATENCY_MS} ms`;
    const closed = `closed loop, ${options.connections} connections`;
    const what = { get: `GET ${GET_PATH}`, post: `POST ${POST_PATH} (512-byte JSON body)` };
    return {
      id: 'passthrough',
      rows: [
        ...fixedRateRows(s, what.get, atRate, trio(fixedRuns, 'get')),
        ...closedLoopRows(s, what.get, closed, trio(closedRuns, 'get')),
        ...fixedRateRows(s, what.post, atRate, trio(fixedRuns, 'post')),
        ...closedLoopRows(s, what.post, closed, trio(closedRuns, 'post')),
      ],
      findings: [
        finding(what.get, atRate, trio(fixedRuns, 'get'), trio(closedRuns, 'get'), options.connections),
        finding(what.post, atRate, trio(fixedRuns, 'post'), trio(closedRuns, 'post'), options.connections) +
          ` Runs of ${short.seconds} s each (ten variants), the proxy at its defaults (LOG_LEVEL=info: one log line per passthrough request).`,
      ],
      data: {
        fixedRate: fixedRuns,
        closedLoop: closedRuns,
        offered: UNSATURATED,
        upstreamLatencyMsAtFixedRate: LATENCY_MS,
        postBodyBytes: POST_BODY.length,
      },
    };
  } finally {
    upstream.setDelay(0);
    await stopChild(proxy.child);
    await stopChild(forwarder.child);
  }
}
