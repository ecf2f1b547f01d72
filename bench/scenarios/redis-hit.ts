/**
 * Scenario 2: a Redis-tier hit (the memory tier refuses the entry: maxEntryBytes below the body
 * size) against a bare node:http server doing one ioredis getBuffer per request; and the same hit
 * with rate limiting on a Redis budget (one EVALSHA more per request).
 */
import { Redis } from 'ioredis';
import { startRedis, stopChild } from '../../testkit/index.js';
import { alternate } from '../lib/load.js';
import { scrape, sumSeries } from '../lib/metrics.js';
import { startNodeServer, startProxy, type Server } from '../lib/proc.js';
import { ratio, type Section } from '../lib/report.js';
import { HIT_PATH, RATE_LIMITED, type Context } from './context.js';

export async function redisHit({ options, upstream, hitBody }: Context): Promise<Section> {
  const redis = await startRedis();
  const servers: Server[] = [];
  try {
    const client = new Redis(redis.url);
    await client.set('bench:body', hitBody);
    client.disconnect();
    const memoryRefuses = { cache: { memory: { maxEntryBytes: Math.min(256, hitBody.length - 1), maxBytesWithRedis: 1024 } } };
    const [baseline, proxy, limited] = await Promise.all([
      startNodeServer('bench/baselines/redis-get-server.js', { REDIS_URL: redis.url, KEY: 'bench:body' }, '/health'),
      startProxy({ upstreamUrl: upstream.url, redisUrl: redis.url, config: memoryRefuses }),
      startProxy({ upstreamUrl: upstream.url, redisUrl: redis.url, config: { ...memoryRefuses, ...RATE_LIMITED } }),
    ]);
    servers.push(baseline, proxy, limited);
    for (const p of [proxy, limited]) await fetch(p.url + HIT_PATH).then((r) => r.arrayBuffer());
    const before = sumSeries(await scrape(proxy.adminUrl), 'stacks_proxy_cache_lookups_total', { tier: 'redis', result: 'hit' });
    const hit = (s: Server) => [{ url: s.url + HIT_PATH, pids: [s.pid] }];
    const runs = await alternate('redis hit', { baseline: [{ url: baseline.url + '/x', pids: [baseline.pid] }], proxy: hit(proxy), limited: hit(limited) }, options);
    const redisHits = sumSeries(await scrape(proxy.adminUrl), 'stacks_proxy_cache_lookups_total', { tier: 'redis', result: 'hit' }) - before;
    const base = runs.baseline;
    const s = '2 Redis hit';
    return {
      id: 'redisHit',
      rows: [
        { scenario: s, name: 'baseline: bare node:http + one ioredis getBuffer', run: base },
        { scenario: s, name: 'proxy, Redis-tier hit (memory tier refuses the entry)', run: runs.proxy, baseline: base, note: `${redisHits.toLocaleString('en-US')} Redis hits counted by the proxy` },
        { scenario: '7 feature cost', name: 'proxy, Redis-tier hit, rate limiting on (Redis budget)', run: runs.limited, baseline: base },
      ],
      findings: [
        `Redis-tier hit: ${ratio(runs.proxy?.requestsPerSecond, base?.requestsPerSecond)}x the req/s of one ioredis GET per request (target >= 0.9x), ${ratio(runs.proxy?.cpuMicrosPerRequest, base?.cpuMicrosPerRequest)}x its CPU per request. Rate limiting with a Redis budget on that hit: ${ratio(runs.limited?.requestsPerSecond, runs.proxy?.requestsPerSecond)}x the req/s, ${ratio(runs.limited?.cpuMicrosPerRequest, runs.proxy?.cpuMicrosPerRequest)}x the CPU per request.`,
      ],
      data: { runs, redisHits },
    };
  } finally {
    for (const server of servers) await stopChild(server.child);
    await redis.stop();
  }
}
