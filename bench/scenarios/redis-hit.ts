/**
 * Scenario 2: a Redis-tier hit (the memory tier refuses the entry: maxEntryBytes below the body
 * size) against a bare node:http server doing one ioredis getBuffer per request, with ioredis
 * auto-pipelining on (the baseline the ratios use) and off (the plain one GET per request the
 * issue names), baseline 2 with a little background work (bench/baselines/background-work.ts)
 * and its handler served from inside the proxy's own process (baseline 3,
 * bench/baselines/in-process.ts); the same hit with rate limiting on a Redis budget (one EVALSHA more per request);
 * the same hit with the 2 MiB semi-space of before issue 18 (heap.maxSemiSpaceMiB), and with V8's
 * own rule for starting a full collection (heap.markingStartPercent 0), with the mark-compacts
 * each proxy ran per 1,000 Redis-tier hits (node's own `nodejs_gc_duration_seconds`).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, startRedis, stopChild } from '../../testkit/index.js';
import { alternate, generatorsOf } from '../lib/load.js';
import { scrape, sumSeries } from '../lib/metrics.js';
import { baselineModule, startNodeServer, startProxy, type Server } from '../lib/proc.js';
import { ratio, type Section } from '../lib/report.js';
import { HIT_PATH, RATE_LIMITED, hitHead, type Context } from './context.js';

export async function redisHit({ options, upstream, hitBody }: Context): Promise<Section> {
  const redis = await startRedis();
  const servers: Server[] = [];
  try {
    const client = new Redis(redis.url);
    await client.set('bench:body', hitBody);
    client.disconnect();
    const memoryRefuses = { cache: { memory: { maxEntryBytes: Math.min(256, hitBody.length - 1), maxBytesWithRedis: 1024 } } };
    const inProcess = {
      port: await freePort(),
      headersFile: join(mkdtempSync(join(tmpdir(), 'scp-bench-')), 'head.json'),
      redisUrl: redis.url,
      key: 'bench:body',
    };
    const [baseline, unpipelined, proxy, limited, smallYoung, v8Marking] = await Promise.all([
      startNodeServer('bench/baselines/redis-get-server.js', { REDIS_URL: redis.url, KEY: 'bench:body' }, '/health'),
      startNodeServer('bench/baselines/redis-get-server.js', { REDIS_URL: redis.url, KEY: 'bench:body', AUTO_PIPELINING: '0' }, '/health'),
      // Hosts baseline 3 (bench/baselines/in-process.ts) on a port of its own.
      startProxy({ upstreamUrl: upstream.url, redisUrl: redis.url, config: memoryRefuses, inProcessBare: inProcess }),
      startProxy({ upstreamUrl: upstream.url, redisUrl: redis.url, config: { ...memoryRefuses, ...RATE_LIMITED } }),
      startProxy({ upstreamUrl: upstream.url, redisUrl: redis.url, config: { ...memoryRefuses, heap: { maxSemiSpaceMiB: 2 } } }),
      startProxy({ upstreamUrl: upstream.url, redisUrl: redis.url, config: { ...memoryRefuses, heap: { markingStartPercent: 0 } } }),
    ]);
    servers.push(baseline, unpipelined, proxy, limited, smallYoung, v8Marking);
    for (const p of [proxy, limited, smallYoung, v8Marking]) await fetch(p.url + HIT_PATH).then((r) => r.arrayBuffer());
    const head = JSON.stringify(await hitHead(proxy.url + HIT_PATH));
    writeFileSync(inProcess.headersFile, head);
    const fullHead = await startNodeServer('bench/baselines/redis-get-server.js', { REDIS_URL: redis.url, KEY: 'bench:body', HEADERS: head }, '/health');
    servers.push(fullHead);
    const withBackground = await startNodeServer(
      'bench/baselines/redis-get-server.js',
      { ...{ REDIS_URL: redis.url, KEY: 'bench:body', HEADERS: head }, BACKGROUND_UPSTREAM_URL: upstream.url, BACKGROUND_REDIS_URL: redis.url },
      '/health',
      0,
      undefined,
      ['--import', baselineModule('background-work.js')],
    );
    servers.push(withBackground);
    const before = sumSeries(await scrape(proxy.adminUrl), 'stacks_proxy_cache_lookups_total', { tier: 'redis', result: 'hit' });
    const gcBefore = await Promise.all([proxy, v8Marking].map((p) => hitsAndMajorGcs(p.adminUrl)));
    // wrk where installed (bench/lib/wrk.ts).
    const hit = (s: Server) => [{ url: s.url + HIT_PATH, pids: [s.pid], preferWrk: true }];
    const bare = (s: Server) => [{ url: s.url + '/x', pids: [s.pid], preferWrk: true }];
    const runs = await alternate(
      'redis hit',
      {
        baseline: bare(baseline),
        fullHead: bare(fullHead),
        unpipelined: bare(unpipelined),
        background: bare(withBackground),
        inProcess: [{ url: `http://127.0.0.1:${inProcess.port}/x`, pids: [proxy.pid], preferWrk: true }],
        proxy: hit(proxy),
        smallYoung: hit(smallYoung),
        v8Marking: hit(v8Marking),
        limited: hit(limited),
      },
      options,
    );
    const redisHits = sumSeries(await scrape(proxy.adminUrl), 'stacks_proxy_cache_lookups_total', { tier: 'redis', result: 'hit' }) - before;
    const [defaultMarking, ownMarking] = await Promise.all(
      [proxy, v8Marking].map(async (p, i) => majorGcsPerThousandHits(gcBefore[i] as HitsAndGcs, await hitsAndMajorGcs(p.adminUrl))),
    );
    const base = runs.baseline;
    const s = '2 Redis hit';
    return {
      id: 'redisHit',
      rows: [
        { scenario: s, name: 'baseline: bare node:http + one ioredis getBuffer (auto-pipelining on)', run: base },
        {
          scenario: s,
          name: 'baseline 2: the same, with the whole head of a hit (13 headers)',
          run: runs.fullHead,
          baseline: base,
          note: 'the headers a hit must carry',
        },
        { scenario: s, name: 'bare node:http + one ioredis getBuffer, auto-pipelining off', run: runs.unpipelined, baseline: base },
        {
          scenario: s,
          name: 'baseline 2 with background work (an upstream poll over undici, a second HTTP server, a second Redis client and a subscriber, 4 a second each)',
          run: runs.background,
          baseline: base,
          note: `vs baseline 2: ${ratio(runs.background?.requestsPerSecond, runs.fullHead?.requestsPerSecond)}x req/s, ${ratio(runs.background?.cpuMicrosPerRequest, runs.fullHead?.cpuMicrosPerRequest)}x CPU (the same code, used by other objects too)`,
        },
        {
          scenario: s,
          name: "baseline 3: baseline 2's handler inside the Redis-tier proxy's process (its own port)",
          run: runs.inProcess,
          baseline: base,
          note: `vs baseline 2: ${ratio(runs.inProcess?.requestsPerSecond, runs.fullHead?.requestsPerSecond)}x req/s, ${ratio(runs.inProcess?.cpuMicrosPerRequest, runs.fullHead?.cpuMicrosPerRequest)}x CPU (the process around a hit)`,
        },
        {
          scenario: s,
          name: 'proxy, Redis-tier hit (memory tier refuses the entry)',
          run: runs.proxy,
          baseline: base,
          note: `${redisHits.toLocaleString('en-US')} Redis hits counted by the proxy; vs baseline 2: ${ratio(runs.proxy?.requestsPerSecond, runs.fullHead?.requestsPerSecond)}x req/s, ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.fullHead?.cpuMicrosPerRequest)}x CPU; vs baseline 3: ${ratio(runs.proxy?.requestsPerSecond, runs.inProcess?.requestsPerSecond)}x req/s, ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.inProcess?.cpuMicrosPerRequest)}x CPU (the proxy's own work)`,
        },
        {
          scenario: s,
          name: 'proxy, Redis-tier hit, semi-space 2 MiB (before issue 18)',
          run: runs.smallYoung,
          baseline: base,
          note: `the default 16 MiB against it: ${ratio(runs.proxy?.requestsPerSecond, runs.smallYoung?.requestsPerSecond)}x req/s, ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.smallYoung?.cpuMicrosPerRequest)}x CPU`,
        },
        {
          scenario: s,
          name: "proxy, Redis-tier hit, V8's own start of marking (heap.markingStartPercent 0)",
          run: runs.v8Marking,
          baseline: base,
          note: `mark-compacts per 1,000 hits: ${ownMarking} with it, ${defaultMarking} with the default 60; the default against it: ${ratio(runs.proxy?.requestsPerSecond, runs.v8Marking?.requestsPerSecond)}x req/s, ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.v8Marking?.cpuMicrosPerRequest)}x CPU`,
        },
        { scenario: '7 feature cost', name: 'proxy, Redis-tier hit, rate limiting on (Redis budget)', run: runs.limited, baseline: base },
      ],
      findings: [
        `Load generator: ${generatorsOf([runs.proxy, base])}. Redis-tier hit: ${ratio(runs.proxy?.requestsPerSecond, base?.requestsPerSecond)}x the req/s of one ioredis GET per request (target >= 0.9x), ${ratio(runs.proxy?.cpuMicrosPerRequest, base?.cpuMicrosPerRequest)}x its CPU per request; against baseline 2, which writes the same head a hit carries: ${ratio(runs.proxy?.requestsPerSecond, runs.fullHead?.requestsPerSecond)}x the req/s, ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.fullHead?.cpuMicrosPerRequest)}x the CPU; against the same server with auto-pipelining off: ${ratio(runs.proxy?.requestsPerSecond, runs.unpipelined?.requestsPerSecond)}x the req/s, ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.unpipelined?.cpuMicrosPerRequest)}x the CPU per request. With the 2 MiB semi-space of before issue 18 (heap.maxSemiSpaceMiB: 2) the default 16 MiB does ${ratio(runs.proxy?.requestsPerSecond, runs.smallYoung?.requestsPerSecond)}x the req/s at ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.smallYoung?.cpuMicrosPerRequest)}x the CPU per request. Marking started at 60% of the old-space limit (heap.markingStartPercent, the default) against V8's own rule: ${ratio(runs.proxy?.requestsPerSecond, runs.v8Marking?.requestsPerSecond)}x the req/s at ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.v8Marking?.cpuMicrosPerRequest)}x the CPU, ${defaultMarking} against ${ownMarking} mark-compacts per 1,000 hits. The same bare handler inside the proxy's process (baseline 3, its own port, the proxy's idle meanwhile): ${ratio(runs.inProcess?.cpuMicrosPerRequest, runs.fullHead?.cpuMicrosPerRequest)}x baseline 2's CPU per request (the process a hit runs in), and the proxy's Redis-tier hit ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.inProcess?.cpuMicrosPerRequest)}x baseline 3's (the proxy's own work), ${ratio(runs.proxy?.requestsPerSecond, runs.inProcess?.requestsPerSecond)}x its req/s; baseline 2 with a little background work (an upstream poll, a second HTTP server, a second Redis client and a subscriber, 4 a second each): ${ratio(runs.background?.cpuMicrosPerRequest, runs.fullHead?.cpuMicrosPerRequest)}x baseline 2's CPU per request. Rate limiting with a Redis budget on that hit: ${ratio(runs.limited?.requestsPerSecond, runs.proxy?.requestsPerSecond)}x the req/s, ${ratio(runs.limited?.cpuMicrosPerRequest, runs.proxy?.cpuMicrosPerRequest)}x the CPU per request.`,
      ],
      data: { runs, redisHits, majorGcsPerThousandHits: { default: defaultMarking, v8Rule: ownMarking } },
    };
  } finally {
    for (const server of servers) await stopChild(server.child);
    await redis.stop();
  }
}

interface HitsAndGcs {
  hits: number;
  majorGcs: number;
}

/** A proxy's Redis-tier hits and node's count of major (mark-compact) collections so far. */
async function hitsAndMajorGcs(adminUrl: string): Promise<HitsAndGcs> {
  const metrics = await scrape(adminUrl);
  return {
    hits: sumSeries(metrics, 'stacks_proxy_cache_lookups_total', { tier: 'redis', result: 'hit' }),
    majorGcs: sumSeries(metrics, 'nodejs_gc_duration_seconds_count', { kind: 'major' }),
  };
}

function majorGcsPerThousandHits(before: HitsAndGcs, after: HitsAndGcs): string {
  const hits = after.hits - before.hits;
  return hits > 0 ? ((1000 * (after.majorGcs - before.majorGcs)) / hits).toFixed(2) : 'n/a';
}
