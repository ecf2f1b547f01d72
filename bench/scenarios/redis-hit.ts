/**
 * Scenario 2: a Redis-tier hit (the memory tier refuses the entry: maxEntryBytes below the body
 * size) against a bare node:http server doing one ioredis getBuffer per request, with ioredis
 * auto-pipelining on (the baseline the ratios use) and off (the plain one GET per request the
 * issue names); the same hit with rate limiting on a Redis budget (one EVALSHA more per request);
 * and the same hit with the 2 MiB semi-space of before issue 18 (heap.maxSemiSpaceMiB).
 */
import { Redis } from 'ioredis';
import { startRedis, stopChild } from '../../testkit/index.js';
import { alternate, generatorsOf } from '../lib/load.js';
import { scrape, sumSeries } from '../lib/metrics.js';
import { startNodeServer, startProxy, type Server } from '../lib/proc.js';
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
    const [baseline, unpipelined, proxy, limited, smallYoung] = await Promise.all([
      startNodeServer('bench/baselines/redis-get-server.js', { REDIS_URL: redis.url, KEY: 'bench:body' }, '/health'),
      startNodeServer('bench/baselines/redis-get-server.js', { REDIS_URL: redis.url, KEY: 'bench:body', AUTO_PIPELINING: '0' }, '/health'),
      startProxy({ upstreamUrl: upstream.url, redisUrl: redis.url, config: memoryRefuses }),
      startProxy({ upstreamUrl: upstream.url, redisUrl: redis.url, config: { ...memoryRefuses, ...RATE_LIMITED } }),
      startProxy({ upstreamUrl: upstream.url, redisUrl: redis.url, config: { ...memoryRefuses, heap: { maxSemiSpaceMiB: 2 } } }),
    ]);
    servers.push(baseline, unpipelined, proxy, limited, smallYoung);
    for (const p of [proxy, limited, smallYoung]) await fetch(p.url + HIT_PATH).then((r) => r.arrayBuffer());
    const fullHead = await startNodeServer(
      'bench/baselines/redis-get-server.js',
      { REDIS_URL: redis.url, KEY: 'bench:body', HEADERS: JSON.stringify(await hitHead(proxy.url + HIT_PATH)) },
      '/health',
    );
    servers.push(fullHead);
    const before = sumSeries(await scrape(proxy.adminUrl), 'stacks_proxy_cache_lookups_total', { tier: 'redis', result: 'hit' });
    // wrk where installed (bench/lib/wrk.ts).
    const hit = (s: Server) => [{ url: s.url + HIT_PATH, pids: [s.pid], preferWrk: true }];
    const bare = (s: Server) => [{ url: s.url + '/x', pids: [s.pid], preferWrk: true }];
    const runs = await alternate(
      'redis hit',
      {
        baseline: bare(baseline),
        fullHead: bare(fullHead),
        unpipelined: bare(unpipelined),
        proxy: hit(proxy),
        smallYoung: hit(smallYoung),
        limited: hit(limited),
      },
      options,
    );
    const redisHits = sumSeries(await scrape(proxy.adminUrl), 'stacks_proxy_cache_lookups_total', { tier: 'redis', result: 'hit' }) - before;
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
          name: 'proxy, Redis-tier hit (memory tier refuses the entry)',
          run: runs.proxy,
          baseline: base,
          note: `${redisHits.toLocaleString('en-US')} Redis hits counted by the proxy; vs baseline 2: ${ratio(runs.proxy?.requestsPerSecond, runs.fullHead?.requestsPerSecond)}x req/s, ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.fullHead?.cpuMicrosPerRequest)}x CPU`,
        },
        {
          scenario: s,
          name: 'proxy, Redis-tier hit, semi-space 2 MiB (before issue 18)',
          run: runs.smallYoung,
          baseline: base,
          note: `the default 16 MiB against it: ${ratio(runs.proxy?.requestsPerSecond, runs.smallYoung?.requestsPerSecond)}x req/s, ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.smallYoung?.cpuMicrosPerRequest)}x CPU`,
        },
        { scenario: '7 feature cost', name: 'proxy, Redis-tier hit, rate limiting on (Redis budget)', run: runs.limited, baseline: base },
      ],
      findings: [
        `Load generator: ${generatorsOf([runs.proxy, base])}. Redis-tier hit: ${ratio(runs.proxy?.requestsPerSecond, base?.requestsPerSecond)}x the req/s of one ioredis GET per request (target >= 0.9x), ${ratio(runs.proxy?.cpuMicrosPerRequest, base?.cpuMicrosPerRequest)}x its CPU per request; against baseline 2, which writes the same head a hit carries: ${ratio(runs.proxy?.requestsPerSecond, runs.fullHead?.requestsPerSecond)}x the req/s, ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.fullHead?.cpuMicrosPerRequest)}x the CPU; against the same server with auto-pipelining off: ${ratio(runs.proxy?.requestsPerSecond, runs.unpipelined?.requestsPerSecond)}x the req/s, ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.unpipelined?.cpuMicrosPerRequest)}x the CPU per request. With the 2 MiB semi-space of before issue 18 (heap.maxSemiSpaceMiB: 2) the default 16 MiB does ${ratio(runs.proxy?.requestsPerSecond, runs.smallYoung?.requestsPerSecond)}x the req/s at ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.smallYoung?.cpuMicrosPerRequest)}x the CPU per request. Rate limiting with a Redis budget on that hit: ${ratio(runs.limited?.requestsPerSecond, runs.proxy?.requestsPerSecond)}x the req/s, ${ratio(runs.limited?.cpuMicrosPerRequest, runs.proxy?.cpuMicrosPerRequest)}x the CPU per request.`,
      ],
      data: { runs, redisHits },
    };
  } finally {
    for (const server of servers) await stopChild(server.child);
    await redis.stop();
  }
}
