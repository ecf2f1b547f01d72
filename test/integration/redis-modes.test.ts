/**
 * Every Redis mode the proxy takes (standalone, Sentinel, Cluster), with ioredis auto-pipelining
 * on (the default) and off: what one instance fetched, another serves from Redis byte for byte,
 * also when many requests read Redis at once (one auto-pipelined batch), and a Redis budget
 * (rate limiting) counts on that Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  RECORDED,
  waitFor,
  startFakeUpstream,
  startRedis,
  startRedisCluster,
  startRedisSentinel,
  type FakeUpstream,
  type TestRedisDeployment,
} from '../../testkit/index.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import type { ProxyServer } from '../../src/composition-root.js';

const MODES: Array<{ mode: string; start: () => Promise<TestRedisDeployment> }> = [
  { mode: 'standalone', start: startRedis },
  { mode: 'Sentinel', start: startRedisSentinel },
  { mode: 'Cluster', start: startRedisCluster },
];

// Two paths whose keys fall in different cluster slots, read by the second instance at once.
const PATHS = [`/extended/v1/tx/${RECORDED.confirmedTxId}`, `/extended/v1/address/${RECORDED.principal}/transactions?limit=5`];

describe.each(MODES)('Redis $mode', ({ start }) => {
  let upstream: FakeUpstream;
  let redis: TestRedisDeployment;
  const proxies: ProxyServer[] = [];

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    redis = await start();
  });
  afterAll(async () => {
    for (const proxy of proxies) await proxy.close();
    await upstream.close();
    await redis.stop();
  });

  it.each([true, false])('auto-pipelining %s: the second instance serves from Redis, byte for byte, many requests at once', async (autoPipelining) => {
    const overrides = {
      redis: { autoPipelining },
      // The memory tier refuses both answers: every read of the second instance goes to Redis.
      cache: { keyPrefix: `modes${String(autoPipelining)}`, memory: { maxEntryBytes: 256 } },
      rateLimit: { enabled: true },
    };
    const first = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url, overrides });
    proxies.push(first);
    const second = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url, overrides });
    proxies.push(second);
    // Nothing queues while disconnected (a Cluster client first loads its slots): wait for the connections.
    for (const proxy of [first, second]) {
      await waitFor(async () => (await metricValue(proxy, 'stacks_proxy_redis_up')) === 1, { timeoutMs: 10_000, what: 'the proxy to connect to Redis' });
    }
    const fetched = await Promise.all(PATHS.map((path) => fetchRaw(first.url + path)));
    expect(fetched.map((r) => r.headers.get('x-cache'))).toEqual(['MISS', 'MISS']);
    upstream.resetCounts();
    // The rate limiter has a connection of its own: its answers carry ratelimit-* once it is up.
    await waitFor(async () => (await fetchRaw(second.url + (PATHS[0] as string))).headers.has('ratelimit-remaining'), {
      timeoutMs: 10_000,
      what: 'the Redis budget to answer',
    });

    const reads = await Promise.all(Array.from({ length: 20 }, (_, i) => fetchRaw(second.url + (PATHS[i % 2] as string))));
    for (const [i, read] of reads.entries()) {
      expect(read.status).toBe(200);
      expect(read.headers.get('x-cache')).toBe('HIT');
      expect(read.body.equals((fetched[i % 2] as (typeof fetched)[number]).body)).toBe(true);
      // The Redis budget answered (rate limiting fails open without a header when Redis does not).
      expect(read.headers.get('ratelimit-remaining')).not.toBeNull();
    }
    expect(upstream.count()).toBe(0);
  });
});
