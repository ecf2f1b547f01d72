/**
 * Scenarios 1 and 7: a memory-tier hit at the default settings (log level info), with the
 * access log off (warn) and with rate limiting on (per-process budget), against a bare node:http
 * server answering the same bytes from a Map; and what each per-request feature costs.
 */
import { stopChild } from '../../testkit/index.js';
import { alternate } from '../lib/load.js';
import { startNodeServer, startProxy, type Server } from '../lib/proc.js';
import { ratio, type Section } from '../lib/report.js';
import { HIT_PATH, RATE_LIMITED, type Context } from './context.js';

export async function memoryHit({ options, upstream, hitBody }: Context): Promise<Section> {
  const servers: Server[] = [];
  try {
    const [baseline, info, warn, limited] = await Promise.all([
      startNodeServer('bench/baselines/map-server.js', { BODY: hitBody.toString('base64') }, '/health'),
      startProxy({ upstreamUrl: upstream.url }),
      startProxy({ upstreamUrl: upstream.url, logLevel: 'warn' }),
      startProxy({ upstreamUrl: upstream.url, config: RATE_LIMITED }),
    ]);
    servers.push(baseline, info, warn, limited);
    for (const proxy of [info, warn, limited]) await fetch(proxy.url + HIT_PATH).then((r) => r.arrayBuffer());
    const hit = (s: Server) => [{ url: s.url + HIT_PATH, pids: [s.pid] }];
    const runs = await alternate('memory hit', { baseline: [{ url: `${baseline.url}/x`, pids: [baseline.pid] }], info: hit(info), warn: hit(warn), limited: hit(limited) }, options);
    const base = runs.baseline;
    const s = '1 memory hit';
    const rps = (name: string) => ratio(runs[name]?.requestsPerSecond, base?.requestsPerSecond);
    const cpu = (name: string) => ratio(runs[name]?.cpuMicrosPerRequest, base?.cpuMicrosPerRequest);
    const featureCost = (on: string, off: string) =>
      `${ratio(runs[on]?.requestsPerSecond, runs[off]?.requestsPerSecond)}x the req/s, ${ratio(runs[on]?.cpuMicrosPerRequest, runs[off]?.cpuMicrosPerRequest)}x the CPU per request`;
    return {
      id: 'memoryHit',
      rows: [
        { scenario: s, name: 'baseline: bare node:http from a Map', run: base },
        { scenario: s, name: 'proxy, LOG_LEVEL=info (default)', run: runs.info, baseline: base },
        { scenario: s, name: 'proxy, LOG_LEVEL=warn (no access log)', run: runs.warn, baseline: base },
        { scenario: '7 feature cost', name: 'proxy, info, rate limiting on (memory budget)', run: runs.limited, baseline: base },
      ],
      findings: [
        `Memory hit at the default settings: ${rps('info')}x the baseline's req/s (target >= 0.85x), ${cpu('info')}x its CPU per request (target <= 1.25x), p99 ${runs.info?.p99Ms} ms (target < 5 ms); access log off: ${rps('warn')}x (target >= 0.9x).`,
        `Cost of the access log (info vs warn): ${featureCost('info', 'warn')}. Rate limiting on, memory budget (vs info): ${featureCost('limited', 'info')}. Metrics: the proxy has no switch to turn them off, so their cost cannot be measured from outside (src/ would need one).`,
      ],
      data: { runs },
    };
  } finally {
    for (const server of servers) await stopChild(server.child);
  }
}
