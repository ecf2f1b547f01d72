/**
 * A hung Redis (its process stopped: connections open, nothing answers): every command the
 * store sends fails with ioredis's own timeout error instead of waiting, and a request whose
 * answer lives only in Redis is fetched from the upstream. The store keeps the command timeout
 * with one sweep (CommandDeadlines in src/cache/redis-store.ts), not a timer per command.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../src/cache/redis-store.js';
import { RECORDED, startFakeUpstream, startRedis, type FakeUpstream, type TestRedis } from '../../testkit/index.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import { entry } from '../support/entries.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  redis.resume();
  await redis.stop();
});

describe('a RedisStore in front of a hung Redis', () => {
  it('fails its reads and writes with the timeout error, then reads again once Redis answers', async () => {
    const store = new RedisStore({ url: redis.url, commandTimeoutMs: 200, autoPipelining: true });
    try {
      // Commands fail at once until the connection is up (no offline queue).
      const written = () =>
        store.set('k', entry('{"a":1}'), null).then(
          () => true,
          () => false,
        );
      await expect.poll(written, { timeout: 5_000, interval: 50 }).toBe(true);
      expect((await store.get('k'))?.body.toString()).toBe('{"a":1}');
      redis.pause();
      const outcomes = await Promise.allSettled([store.get('k'), store.get('other'), store.set('k', entry('{"a":2}'), null)]);
      expect(outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'answered'))).toEqual(Array(3).fill('Error: Command timed out'));
      redis.resume();
      // The late replies settle nothing; the connection goes on (the set sent meanwhile landed).
      await expect.poll(async () => (await store.get('k'))?.body.toString(), { timeout: 5_000, interval: 50 }).toBe('{"a":2}');
    } finally {
      redis.resume();
      await store.close();
    }
  });
});

describe('a proxy whose Redis hangs', () => {
  let upstream: FakeUpstream;
  beforeAll(async () => {
    upstream = await startFakeUpstream();
  });
  afterAll(async () => {
    await upstream?.close();
  });

  it('answers a request whose entry lives only in Redis from the upstream, and counts the Redis error', async () => {
    // The memory tier refuses the answer (larger than maxEntryBytes): every hit is a Redis read.
    const proxy = await startTestProxy({
      upstreamUrls: [upstream.url],
      redisUrl: redis.url,
      overrides: { redis: { commandTimeoutMs: 200 }, cache: { memory: { maxEntryBytes: 256 } } },
    });
    const path = `/extended/v1/tx/${RECORDED.confirmedTxId}`;
    try {
      expect((await fetchRaw(proxy.url + path)).headers.get('x-cache')).toBe('MISS');
      await expect.poll(async () => (await fetchRaw(proxy.url + path)).headers.get('x-cache'), { timeout: 5_000, interval: 50 }).toBe('HIT');
      upstream.resetCounts();
      redis.pause();
      const during = await fetchRaw(proxy.url + path);
      expect(during.status).toBe(200);
      expect(during.headers.get('x-cache')).toBe('MISS');
      expect(upstream.count(path)).toBe(1);
      expect(await metricValue(proxy, 'stacks_proxy_cache_lookups_total', { tier: 'redis', result: 'error' })).toBeGreaterThanOrEqual(1);
    } finally {
      redis.resume();
      await proxy.close();
    }
  });
});
