/**
 * Redis as the shared tier: what one proxy instance fetched, another one serves without an
 * upstream request, byte for byte and with the same class and ETag.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, startRedis, type FakeUpstream, type TestRedis } from '../../testkit/index.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

let upstream: FakeUpstream;
let redis: TestRedis;
let first: ProxyServer;
let second: ProxyServer;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  redis = await startRedis();
  first = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url });
  second = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url });
});
afterAll(async () => {
  await first.close();
  await second.close();
  await upstream.close();
  await redis.stop();
});

describe('two instances sharing Redis', () => {
  it.each([`/extended/v1/tx/${RECORDED.confirmedTxId}`, `/extended/v1/address/${RECORDED.principal}/transactions?limit=5`, '/extended/v2/mempool/fees'])(
    'the second instance serves %s from Redis',
    async (path) => {
      const fetched = await fetchRaw(first.url + path);
      expect(fetched.headers.get('x-cache')).toBe('MISS');
      upstream.resetCounts();

      const shared = await fetchRaw(second.url + path);
      expect(shared.headers.get('x-cache')).toBe('HIT');
      expect(shared.body.equals(fetched.body)).toBe(true);
      expect(shared.headers.get('etag')).toBe(fetched.headers.get('etag'));
      expect(shared.headers.get('x-cache-class')).toBe(fetched.headers.get('x-cache-class'));
      expect(upstream.count()).toBe(0);
    },
  );

  it('reports Redis as up and counts Redis hits', async () => {
    expect(await metricValue(second, 'stacks_proxy_redis_up')).toBe(1);
    expect(await metricValue(second, 'stacks_proxy_cache_lookups_total', { tier: 'redis', result: 'hit' })).toBe(3); // one per case above
  });
});
