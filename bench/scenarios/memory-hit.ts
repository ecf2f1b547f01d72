/**
 * Scenarios 1 and 7: a memory-tier hit at the default settings (log level info, hits sampled in
 * the access log), with every hit logged, with the access log off (warn) and with rate limiting
 * on (per-process budget), against a bare node:http server answering the same body from a Map
 * (with a minimal head, and with the whole head a hit carries), the latter with a little
 * background work (bench/baselines/background-work.ts) and its handler served from inside the
 * proxy's own process (baseline 3); and what each per-request feature costs.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, stopChild } from '../../testkit/index.js';
import { alternate, generatorsOf } from '../lib/load.js';
import { baselineModule, runJsonChild, startNodeServer, startProxy, type Server } from '../lib/proc.js';
import { ratio, type Section } from '../lib/report.js';
import { HIT_PATH, RATE_LIMITED, hitHead, type Context } from './context.js';

/** The metrics' own cost per hit, timed in a child on the servers' CPU (a few seconds; under one with --quick). */
function metricsCost(quick: boolean): Promise<{ nsPerHitFolded: number; nsPerHitPromClientLabels: number }> {
  return runJsonChild('bench/micro/telemetry-cost.js', { cpu: 0, env: { ITERATIONS: String(quick ? 100_000 : 500_000) } });
}

/** The proxy's own JavaScript per hit, without node:http and the kernel (bench/micro/hit-path-cost.ts), on the servers' CPU. */
function hitPathCost(quick: boolean, upstreamUrl: string): Promise<{ nsPerHit: number; nsPerBareHit: number }> {
  return runJsonChild('bench/micro/hit-path-cost.js', {
    cpu: 0,
    env: { ITERATIONS: String(quick ? 50_000 : 200_000), UPSTREAM_URL: upstreamUrl, HIT_PATH, LOG_LEVEL: 'info' },
  });
}

const metricsShare = (ns: number, cpuMicros: number | undefined): string => (cpuMicros ? `${((ns / 1000 / cpuMicros) * 100).toFixed(1)}%` : 'n/a');

export async function memoryHit({ options, upstream, hitBody }: Context): Promise<Section> {
  const servers: Server[] = [];
  try {
    const inProcess = { port: await freePort(), headersFile: join(mkdtempSync(join(tmpdir(), 'scp-bench-')), 'head.json'), body: hitBody };
    const [baseline, info, everyHit, warn, limited] = await Promise.all([
      startNodeServer('bench/baselines/map-server.js', { BODY: hitBody.toString('base64') }, '/health'),
      // The defaults' proxy hosts baseline 3 (bench/baselines/in-process.ts) on a port of its own.
      startProxy({ upstreamUrl: upstream.url, inProcessBare: inProcess }),
      startProxy({ upstreamUrl: upstream.url, config: { accessLog: { hitsEvery: 1 } } }),
      startProxy({ upstreamUrl: upstream.url, logLevel: 'warn' }),
      startProxy({ upstreamUrl: upstream.url, config: RATE_LIMITED }),
    ]);
    servers.push(baseline, info, everyHit, warn, limited);
    for (const proxy of [info, everyHit, warn, limited]) await fetch(proxy.url + HIT_PATH).then((r) => r.arrayBuffer());
    const head = JSON.stringify(await hitHead(info.url + HIT_PATH));
    writeFileSync(inProcess.headersFile, head);
    const fullHead = await startNodeServer('bench/baselines/map-server.js', { BODY: hitBody.toString('base64'), HEADERS: head }, '/health');
    servers.push(fullHead);
    const withBackground = await startNodeServer(
      'bench/baselines/map-server.js',
      { ...{ BODY: hitBody.toString('base64'), HEADERS: head }, BACKGROUND_UPSTREAM_URL: upstream.url },
      '/health',
      0,
      undefined,
      ['--import', baselineModule('background-work.js')],
    );
    servers.push(withBackground);
    const inProcessUrl = `http://127.0.0.1:${inProcess.port}`;
    // wrk where installed (bench/lib/wrk.ts); the same two servers under autocannon too, to show how the generators disagree.
    const hit = (s: Server, preferWrk = true) => [{ url: s.url + HIT_PATH, pids: [s.pid], preferWrk }];
    const bare = (s: Server, preferWrk = true) => [{ url: `${s.url}/x`, pids: [s.pid], preferWrk }];
    const runs = await alternate(
      'memory hit',
      {
        baseline: bare(baseline),
        fullHead: bare(fullHead),
        fullHeadAutocannon: bare(fullHead, false),
        background: bare(withBackground),
        inProcess: [{ url: `${inProcessUrl}/x`, pids: [info.pid], preferWrk: true }],
        info: hit(info),
        infoAutocannon: hit(info, false),
        everyHit: hit(everyHit),
        warn: hit(warn),
        limited: hit(limited),
      },
      options,
    );
    const metrics = await metricsCost(options.quick);
    const js = await hitPathCost(options.quick, upstream.url);
    const jsMicros = (js.nsPerHit - js.nsPerBareHit) / 1000;
    const base = runs.baseline;
    const s = '1 memory hit';
    const rps = (name: string) => ratio(runs[name]?.requestsPerSecond, base?.requestsPerSecond);
    const cpu = (name: string) => ratio(runs[name]?.cpuMicrosPerRequest, base?.cpuMicrosPerRequest);
    const full = runs.fullHead;
    const proxyMinusBare = (runs.info?.cpuMicrosPerRequest ?? NaN) - (full?.cpuMicrosPerRequest ?? NaN);
    const rpsFull = (name: string) => ratio(runs[name]?.requestsPerSecond, full?.requestsPerSecond);
    const cpuFull = (name: string) => ratio(runs[name]?.cpuMicrosPerRequest, full?.cpuMicrosPerRequest);
    const featureCost = (on: string, off: string) =>
      `${ratio(runs[on]?.requestsPerSecond, runs[off]?.requestsPerSecond)}x the req/s, ${ratio(runs[on]?.cpuMicrosPerRequest, runs[off]?.cpuMicrosPerRequest)}x the CPU per request`;
    return {
      id: 'memoryHit',
      rows: [
        { scenario: s, name: 'baseline: bare node:http from a Map (2 headers)', run: base },
        {
          scenario: s,
          name: 'baseline 2: the same, with the whole head of a hit (13 headers)',
          run: full,
          baseline: base,
          note: 'the headers a hit must carry',
        },
        {
          scenario: s,
          name: 'baseline 2 with background work (an upstream poll over undici and a second HTTP server, 4 a second each)',
          run: runs.background,
          baseline: base,
          note: `vs baseline 2: ${rpsFull('background')}x req/s, ${cpuFull('background')}x CPU (the same code, used by other objects too)`,
        },
        {
          scenario: s,
          name: "baseline 3: baseline 2's handler inside the defaults' proxy process (its own port)",
          run: runs.inProcess,
          baseline: base,
          note: `vs baseline 2: ${rpsFull('inProcess')}x req/s, ${cpuFull('inProcess')}x CPU (the process around a hit)`,
        },
        {
          scenario: s,
          name: 'proxy, defaults (LOG_LEVEL=info, 1 hit in 100 logged)',
          run: runs.info,
          baseline: base,
          note: `vs baseline 2: ${rpsFull('info')}x req/s, ${cpuFull('info')}x CPU; vs baseline 3: ${ratio(runs.info?.requestsPerSecond, runs.inProcess?.requestsPerSecond)}x req/s, ${ratio(runs.info?.cpuMicrosPerRequest, runs.inProcess?.cpuMicrosPerRequest)}x CPU (the proxy's own work)`,
        },
        {
          scenario: s,
          name: 'proxy, every hit logged (accessLog.hitsEvery 1)',
          run: runs.everyHit,
          baseline: base,
          note: `vs baseline 2: ${rpsFull('everyHit')}x req/s, ${cpuFull('everyHit')}x CPU`,
        },
        {
          scenario: s,
          name: 'proxy, LOG_LEVEL=warn (no access log)',
          run: runs.warn,
          baseline: base,
          note: `vs baseline 2: ${rpsFull('warn')}x req/s, ${cpuFull('warn')}x CPU`,
        },
        { scenario: '7 feature cost', name: 'proxy, defaults, rate limiting on (memory budget)', run: runs.limited, baseline: base },
        { scenario: s, name: 'baseline 2 under autocannon', run: runs.fullHeadAutocannon, baseline: base, note: 'the generator compared' },
        {
          scenario: s,
          name: 'proxy, defaults, under autocannon',
          run: runs.infoAutocannon,
          baseline: base,
          note: `vs baseline 2 under autocannon: ${ratio(runs.infoAutocannon?.requestsPerSecond, runs.fullHeadAutocannon?.requestsPerSecond)}x req/s, ${ratio(runs.infoAutocannon?.cpuMicrosPerRequest, runs.fullHeadAutocannon?.cpuMicrosPerRequest)}x CPU`,
        },
      ],
      findings: [
        `Load generator of the memory-hit rows: ${generatorsOf([runs.info, full])}. Memory hit at the default settings: ${rps('info')}x the baseline's req/s (target >= 0.85x), ${cpu('info')}x its CPU per request (target <= 1.25x), p99 ${runs.info?.p99Ms} ms (target < 5 ms); access log off: ${rps('warn')}x (target >= 0.9x). Against baseline 2, which writes the same head a hit must carry: ${rpsFull('info')}x req/s and ${cpuFull('info')}x CPU at the defaults, ${rpsFull('warn')}x and ${cpuFull('warn')}x with the access log off; p99 ${runs.info?.p99Ms} ms against baseline 2's ${full?.p99Ms} ms (${ratio(runs.info?.p99Ms, full?.p99Ms)}x; target <= 1.15x CPU, <= 1.3x p99).`,
        `wrk and autocannon on the same two servers: under autocannon the proxy's hit is ${ratio(runs.infoAutocannon?.requestsPerSecond, runs.fullHeadAutocannon?.requestsPerSecond)}x baseline 2's req/s, under wrk ${rpsFull('info')}x; the generator's own CPU per request: autocannon ${runs.infoAutocannon?.generatorCpuMicrosPerRequest} µs on the proxy and ${runs.fullHeadAutocannon?.generatorCpuMicrosPerRequest} µs on baseline 2, wrk ${runs.info?.generatorCpuMicrosPerRequest} and ${full?.generatorCpuMicrosPerRequest} µs.`,
        `Cost of the access log: every hit logged vs none (warn): ${featureCost('everyHit', 'warn')}; the default (1 hit in 100 logged) vs none: ${featureCost('info', 'warn')}. Rate limiting on, memory budget (vs the defaults): ${featureCost('limited', 'info')}. Metrics (no switch; timed in a loop, bench/micro/telemetry-cost.ts): ${metrics.nsPerHitFolded} ns per hit, ${metricsShare(metrics.nsPerHitFolded, runs.info?.cpuMicrosPerRequest)} of a hit's CPU at the defaults (the same samples through prom-client label objects, as before issue 10: ${metrics.nsPerHitPromClientLabels} ns).`,
        `Where the hit's extra CPU goes: the proxy's own JavaScript per hit (the pipeline from URL to res.end, called in a loop without node:http, bench/micro/hit-path-cost.ts) takes ${(js.nsPerHit / 1000).toFixed(2)} µs against ${(js.nsPerBareHit / 1000).toFixed(2)} µs for the bare server's handler: ${jsMicros.toFixed(2)} µs of the ${proxyMinusBare.toFixed(1)} µs a hit costs over baseline 2 in this run; the rest is what runs around that code in a real server (garbage collection of its allocations, a larger heap and code, background timers).`,
        `The same bare handler inside the proxy's process (baseline 3, on a port of its own, the proxy's port idle meanwhile): ${cpuFull('inProcess')}x baseline 2's CPU per request, and the proxy's hit ${ratio(runs.info?.cpuMicrosPerRequest, runs.inProcess?.cpuMicrosPerRequest)}x baseline 3's: of the hit's ${cpuFull('info')}x over baseline 2, the first factor is the process the hit runs in and the second the proxy's own work. Baseline 2 with a little background work (an upstream poll over undici and a second HTTP server, 4 a second each, a few requests' worth of CPU): ${cpuFull('background')}x baseline 2's CPU per request: node's shared code (streams, sockets, HTTP, timers) costs more once other kinds of objects have gone through it, as they do in any proxy.`,
      ],
      data: { runs, metrics, hitPathJs: js },
    };
  } finally {
    for (const server of servers) await stopChild(server.child);
  }
}
