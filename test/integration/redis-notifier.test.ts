/**
 * The upstream's Redis change notifier read by the real proxy (issue 16), against a real
 * redis-server to which the test writes entries exactly as the upstream's redis-notifier.ts
 * does (XADD <queue> * data <json>): an applied block is in tip-class answers long before the
 * 60 s poll; a rollback has the tracker find the reorg; entries from before the start, malformed
 * or oversized ones move nothing; Redis going away and coming back is waited out.
 */
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/composition-root.js';
import { MAX_ENTRY_BYTES, parseNotifierEntry, REDIS_NOTIFIER_ORIGIN } from '../../src/live/redis-notifier-feed.js';
import { RECORDED, startRedis, type FakeUpstream, type TestRedis } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const WAIT = { timeout: 10_000, interval: 20 };
let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

/** The upstream's message for a new canonical block (and the blocks a reorg rolled back). */
function notifierMessage(tip: { height: number; index_block_hash: string }, rolledBack: { height: number; index_block_hash: string }[] = []): string {
  const time = Date.now();
  const header = (b: { height: number; index_block_hash: string }) => ({ hash: b.index_block_hash, index: b.height, time: Math.floor(time / 1000) });
  return JSON.stringify({
    id: `stacks-${tip.height}-${tip.index_block_hash}-${time}`,
    payload: { chain: 'stacks', network: 'testnet', time, apply_blocks: [header(tip)], rollback_blocks: rolledBack.map(header) },
  });
}

const latestHeight = async (proxy: ProxyServer): Promise<number> =>
  (JSON.parse((await fetchRaw(`${proxy.url}/extended/v2/blocks/latest`)).body.toString()) as { height: number }).height;

describe('Redis change notifier', () => {
  const { defer, fakeUpstream } = useCleanups();

  const setUp = async (stream: string): Promise<{ upstream: FakeUpstream; proxy: ProxyServer; writer: Redis }> => {
    const upstream = await fakeUpstream();
    const writer = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    writer.on('error', () => undefined);
    defer(async () => writer.disconnect());
    // From before the proxy starts: not read (the feed starts at the stream's end).
    await writer.xadd(stream, '*', 'data', notifierMessage(upstream.tip()));
    const proxy = await startTestProxy({
      upstreamUrls: [upstream.url],
      overrides: {
        chainTip: { pollIntervalMs: 60_000 },
        live: { push: { enabled: false, reconnectMinMs: 20, reconnectMaxMs: 200 }, redisNotifier: { url: redis.url, stream, blockMs: 200 } },
      },
    });
    defer(() => proxy.close());
    await proxy.redisNotifier?.positioned;
    return { upstream, proxy, writer };
  };

  const counted = (proxy: ProxyServer, kind: string) => metricValue(proxy, 'stacks_proxy_push_notifications_total', { origin: REDIS_NOTIFIER_ORIGIN, kind });

  it('polls the tip at once for an applied block, from the stream’s end on', async () => {
    const { upstream, proxy, writer } = await setUp('notifier:apply');
    expect(await latestHeight(proxy)).toBe(RECORDED.tipHeight);
    upstream.advanceTip();
    await writer.xadd('notifier:apply', '*', 'data', notifierMessage(upstream.tip()));
    await expect.poll(() => latestHeight(proxy), WAIT).toBe(RECORDED.tipHeight + 1);
    expect(await counted(proxy, 'redis_apply')).toBe(1);
  });

  it('has the tracker find a reorg the notifier announces', async () => {
    const { upstream, proxy, writer } = await setUp('notifier:rollback');
    const orphaned = upstream.tip();
    upstream.reorg(1);
    await writer.xadd('notifier:rollback', '*', 'data', notifierMessage(upstream.tip(), [orphaned]));
    await expect.poll(() => proxy.tracker.tip?.indexBlockHash, WAIT).toBe(upstream.tip().index_block_hash);
    expect(await metricValue(proxy, 'stacks_proxy_reorgs_total')).toBe(1);
    expect(await counted(proxy, 'redis_rollback')).toBe(1);
    expect(proxy.redisNotifier?.rollbacks).toBe(1);
  });

  it('skips malformed and oversized entries', async () => {
    const { upstream, proxy, writer } = await setUp('notifier:garbage');
    expect(await latestHeight(proxy)).toBe(RECORDED.tipHeight);
    await writer.xadd('notifier:garbage', '*', 'data', 'not json');
    await writer.xadd('notifier:garbage', '*', 'other', notifierMessage(upstream.tip()));
    await writer.xadd('notifier:garbage', '*', 'data', JSON.stringify({ payload: { apply_blocks: Array.from({ length: 20_000 }, () => ({ hash: '0x00' })) } }));
    await writer.xadd('notifier:garbage', '*', 'data', '{"payload":{"apply_blocks":[]}}');
    upstream.advanceTip();
    await writer.xadd('notifier:garbage', '*', 'data', notifierMessage(upstream.tip()));
    await expect.poll(() => latestHeight(proxy), WAIT).toBe(RECORDED.tipHeight + 1);
    expect(await counted(proxy, 'redis_apply')).toBe(1);
  });

  it('waits out Redis going away and reads again when it is back', async () => {
    const { upstream, proxy, writer } = await setUp('notifier:outage');
    await redis.kill();
    // Fails while Redis is down: the proxy goes on answering.
    expect(await latestHeight(proxy)).toBe(RECORDED.tipHeight);
    await redis.restart();
    upstream.advanceTip();
    await expect
      .poll(async () => {
        await writer.xadd('notifier:outage', '*', 'data', notifierMessage(upstream.tip()));
        return latestHeight(proxy);
      }, WAIT)
      .toBe(RECORDED.tipHeight + 1);
  });

  it('closes at once while its Redis is unreachable, whatever the backoff', async () => {
    const upstream = await fakeUpstream();
    // Nothing listens on port 9 (discard): every connection attempt fails; waits grow to reconnectMaxMs.
    const reconnectMaxMs = 20_000;
    const proxy = await startTestProxy({
      upstreamUrls: [upstream.url],
      overrides: { live: { push: { enabled: false, reconnectMinMs: 250, reconnectMaxMs }, redisNotifier: { url: 'redis://127.0.0.1:9' } } },
    });
    // Let the feed fail a few times and wait for the connection.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const started = performance.now();
    await proxy.close();
    // Not a latency bound: well under the longest wait, which a close that is not woken would sit out.
    expect(performance.now() - started).toBeLessThan(reconnectMaxMs / 4);
  }, 60_000);
});

describe('parseNotifierEntry', () => {
  it('reads what the upstream writes', () => {
    const message = notifierMessage({ height: 7, index_block_hash: '0x01' }, [{ height: 7, index_block_hash: '0x02' }]);
    expect(parseNotifierEntry(['data', message])).toEqual({ applied: 1, rolledBack: 1 });
  });

  it('refuses what it cannot read', () => {
    expect(parseNotifierEntry([])).toBeUndefined();
    expect(parseNotifierEntry(['data'])).toBeUndefined();
    expect(parseNotifierEntry(['data', '{'])).toBeUndefined();
    expect(parseNotifierEntry(['data', 'null'])).toBeUndefined();
    expect(parseNotifierEntry(['data', '{"payload":3}'])).toBeUndefined();
    expect(parseNotifierEntry(['data', `{"payload":{"apply_blocks":[],"pad":"${'x'.repeat(MAX_ENTRY_BYTES)}"}}`])).toBeUndefined();
    expect(parseNotifierEntry(['data', '{"payload":{"apply_blocks":"x"}}'])).toEqual({ applied: 0, rolledBack: 0 });
  });
});
