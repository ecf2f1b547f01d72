/**
 * The push feed through the real proxy (issue 16) against the fake upstream's JSON-RPC channel:
 * a block the upstream announces is in tip-class answers long before the (60 s) poll would have
 * found it; a feed that goes quiet is not believed and polling takes over; a dropped upstream
 * connection comes back and pushes again; a mempool notification marks its principals changed;
 * push off opens no WebSocket to the upstream. And the tracker's pollNow on its own.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { PUSH_POLL_MIN_GAP_MS } from '../../src/chain/tracker.js';
import type { ProxyServer } from '../../src/composition-root.js';
import { ANNOUNCE_GRACE_MS } from '../../src/live/push-feed.js';
import { RECORDED, startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

/** Longer than any test here: only a push (or pollNow) can move the tip in time. */
const NEVER_MS = 60_000;
const WAIT = { timeout: 10_000, interval: 20 };

const latestHeight = async (proxy: ProxyServer): Promise<number> =>
  (JSON.parse((await fetchRaw(`${proxy.url}/extended/v2/blocks/latest`)).body.toString()) as { height: number }).height;

describe('push feed', () => {
  const { defer } = useCleanups();

  const pushingUpstream = async (): Promise<FakeUpstream> => {
    const upstream = await startFakeUpstream({ rpcChannel: true });
    defer(() => upstream.close());
    return upstream;
  };

  const proxyWithPush = async (upstream: FakeUpstream, push: Record<string, unknown> = {}, chainTip: Record<string, unknown> = {}) => {
    const proxy = await startTestProxy({
      upstreamUrls: [upstream.url],
      overrides: {
        upstream: { apiKey: 'operator-key' },
        chainTip: { pollIntervalMs: NEVER_MS, ...chainTip },
        live: { push: { enabled: true, crossCheckIntervalMs: NEVER_MS, distrustMs: NEVER_MS, ...push } },
      },
    });
    defer(() => proxy.close());
    return proxy;
  };

  const believed = (proxy: ProxyServer, upstream: FakeUpstream) => metricValue(proxy, 'stacks_proxy_push_feed_believed', { origin: upstream.url });

  it('serves a pushed block in tip-class answers without waiting for the poll', async () => {
    const upstream = await pushingUpstream();
    const proxy = await proxyWithPush(upstream);
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(1);
    expect(upstream.rpc.connectionsOpened).toBe(1);
    // With the operator's credentials, as reads and passthrough upgrades carry them.
    expect(upstream.requests.filter((r) => r.method === 'UPGRADE').map((r) => [r.path, r.headers['x-api-key']])).toEqual([['/extended/v1/ws', 'operator-key']]);
    expect(upstream.rpc.subscribers('block')).toBe(1);
    expect(upstream.rpc.subscribers('mempool')).toBe(1);
    expect(await latestHeight(proxy)).toBe(RECORDED.tipHeight);
    expect((await fetchRaw(`${proxy.url}/extended/v2/blocks/latest`)).headers.get('x-cache')).toBe('HIT');

    upstream.advanceTip();
    await expect.poll(() => latestHeight(proxy), WAIT).toBe(RECORDED.tipHeight + 1);
    expect(await metricValue(proxy, 'stacks_proxy_push_notifications_total', { origin: upstream.url, kind: 'block' })).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_ws_connections', { channel: 'rpc' })).toBe(1);
  });

  it('does not believe a feed that went quiet, and polls at chainTip.pollIntervalMs again', async () => {
    const upstream = await pushingUpstream();
    // Believed: cross-checked every 300 ms; not believed: polled every 100 ms.
    const proxy = await proxyWithPush(upstream, { crossCheckIntervalMs: 300 }, { pollIntervalMs: 100 });
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(1);
    upstream.rpc.setPublishing(false);
    upstream.advanceTip();
    // The cross-check poll finds the block; the feed never announces it.
    await expect.poll(() => metricValue(proxy, 'stacks_proxy_push_distrusted_total', { origin: upstream.url, reason: 'unannounced' }), WAIT).toBe(1);
    expect(await believed(proxy, upstream)).toBe(0);
    expect(proxy.pushFeed?.believed(upstream.url)).toBe(false);
    expect(await latestHeight(proxy)).toBe(RECORDED.tipHeight + 1);
    upstream.advanceTip();
    await expect.poll(() => latestHeight(proxy), WAIT).toBe(RECORDED.tipHeight + 2);
    expect(await metricValue(proxy, 'stacks_proxy_push_notifications_total', { origin: upstream.url, kind: 'block' })).toBe(0);
  });

  it('does not believe a feed whose announcement no poll confirms, even once it named a far higher block', async () => {
    const upstream = await pushingUpstream();
    // Believed: cross-checked every 300 ms; not believed: polled every 100 ms.
    const proxy = await proxyWithPush(upstream, { crossCheckIntervalMs: 300 }, { pollIntervalMs: 100 });
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(1);
    // A block no poll finds: the upstream's tip stays below it.
    upstream.rpc.publish('block', { index_block_hash: `0x${'ab'.repeat(32)}`, height: 999_999_999, hash: `0x${'cd'.repeat(32)}` });
    await expect.poll(() => metricValue(proxy, 'stacks_proxy_push_notifications_total', { origin: upstream.url, kind: 'block' }), WAIT).toBe(1);
    // Then the feed goes quiet while blocks come: they are not "announced" by the far higher one.
    upstream.rpc.setPublishing(false);
    for (let i = 1; i <= 3; i += 1) {
      upstream.advanceTip();
      await expect.poll(() => latestHeight(proxy), WAIT).toBe(RECORDED.tipHeight + i);
    }
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_push_distrusted_total', { origin: upstream.url, reason: 'unconfirmed' })).toBe(1);
    expect(proxy.pushFeed?.believed(upstream.url)).toBe(false);
  });

  it('does not believe a feed that announces a block at the next height that no poll finds', async () => {
    const upstream = await pushingUpstream();
    const proxy = await proxyWithPush(upstream, { crossCheckIntervalMs: 300 }, { pollIntervalMs: 100 });
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(1);
    // One height ahead of the tip, a hash the upstream never has; the tip then stays where it is.
    upstream.rpc.publish('block', { index_block_hash: `0x${'ab'.repeat(32)}`, height: RECORDED.tipHeight + 1, hash: `0x${'cd'.repeat(32)}` });
    await expect.poll(() => metricValue(proxy, 'stacks_proxy_push_distrusted_total', { origin: upstream.url, reason: 'unconfirmed' }), WAIT).toBe(1);
    expect(await believed(proxy, upstream)).toBe(0);
    expect(proxy.tracker.tip?.height).toBe(RECORDED.tipHeight);
  });

  it('believes a feed that announced the latest of several blocks a poll finds at once', async () => {
    const upstream = await pushingUpstream();
    const proxy = await proxyWithPush(upstream);
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(1);
    // The first block is never announced, nor polled (no cross-check before the second): the poll
    // the second one's notification asks for finds that one, which the feed did announce.
    upstream.rpc.setPublishing(false);
    upstream.advanceTip();
    upstream.rpc.setPublishing(true);
    upstream.advanceTip();
    await expect.poll(() => latestHeight(proxy), WAIT).toBe(RECORDED.tipHeight + 2);
    await new Promise((resolve) => setTimeout(resolve, ANNOUNCE_GRACE_MS + 500));
    expect(await metricValue(proxy, 'stacks_proxy_push_distrusted_total', { origin: upstream.url })).toBe(0);
    expect(await believed(proxy, upstream)).toBe(1);
  });

  it('answers a burst of block notifications with a few tip polls, not one each', async () => {
    const upstream = await pushingUpstream();
    const proxy = await proxyWithPush(upstream);
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(1);
    const before = upstream.count('/extended');
    const started = performance.now();
    // 50 distinct blocks, 10 ms apart: each would be worth a poll of its own without coalescing.
    for (let i = 0; i < 50; i += 1) {
      upstream.rpc.publish('block', { index_block_hash: `0x${i.toString(16).padStart(64, '0')}`, height: RECORDED.tipHeight, hash: `0x${'cd'.repeat(32)}` });
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await expect.poll(() => metricValue(proxy, 'stacks_proxy_push_notifications_total', { origin: upstream.url, kind: 'block' }), WAIT).toBe(50);
    // The poll due at the end of the last gap.
    await new Promise((resolve) => setTimeout(resolve, 3 * PUSH_POLL_MIN_GAP_MS));
    const elapsed = performance.now() - started;
    const polls = upstream.count('/extended') - before;
    expect(polls).toBeGreaterThanOrEqual(1);
    // At most one push-triggered poll per gap, and one more at its end.
    expect(polls).toBeLessThanOrEqual(Math.ceil(elapsed / PUSH_POLL_MIN_GAP_MS) + 1);
  });

  it('reconnects after the upstream drops its connection, and pushes again', async () => {
    const upstream = await pushingUpstream();
    const proxy = await proxyWithPush(upstream, { reconnectMinMs: 20, reconnectMaxMs: 100 });
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(1);
    upstream.rpc.dropAll();
    await expect.poll(() => upstream.rpc.connectionsOpened, WAIT).toBe(2);
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(1);
    expect(upstream.rpc.subscribers('block')).toBe(1);
    upstream.advanceTip();
    await expect.poll(() => latestHeight(proxy), WAIT).toBe(RECORDED.tipHeight + 1);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_ws_reconnects_total', { channel: 'rpc' })).toBeGreaterThanOrEqual(1);
  });

  it('marks the principals of a pending transaction changed when the upstream pushes it', async () => {
    const upstream = await pushingUpstream();
    const proxy = await proxyWithPush(upstream);
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(1);
    const before = Date.now();
    expect(proxy.activity?.principalChangedAfter(RECORDED.principal, before)).toBe(false);
    upstream.addPendingTx();
    await expect.poll(() => proxy.activity?.principalChangedAfter(RECORDED.principal, before), WAIT).toBe(true);
    expect(await metricValue(proxy, 'stacks_proxy_push_notifications_total', { origin: upstream.url, kind: 'mempool' })).toBe(1);
  });

  it('survives an upstream that pushes nonsense', async () => {
    const upstream = await pushingUpstream();
    const proxy = await proxyWithPush(upstream);
    await expect.poll(() => believed(proxy, upstream), WAIT).toBe(1);
    for (const params of [null, 7, 'x', [], { height: 'tall' }, { index_block_hash: 5, height: 1 }]) {
      upstream.rpc.sendToAll(JSON.stringify({ jsonrpc: '2.0', method: 'block', params }));
      upstream.rpc.sendToAll(JSON.stringify({ jsonrpc: '2.0', method: 'mempool', params }));
    }
    // A made-up block is only a reason to poll: the poll's answer decides, and it says no new tip.
    upstream.rpc.sendToAll(JSON.stringify({ jsonrpc: '2.0', method: 'block', params: { index_block_hash: `0x${'cd'.repeat(32)}`, height: 999 } }));
    await expect.poll(() => metricValue(proxy, 'stacks_proxy_push_notifications_total', { origin: upstream.url, kind: 'block' }), WAIT).toBe(1);
    await expect.poll(() => upstream.count('/extended'), WAIT).toBeGreaterThanOrEqual(1);
    expect(proxy.tracker.tip?.height).toBe(RECORDED.tipHeight);
    upstream.advanceTip();
    await expect.poll(() => latestHeight(proxy), WAIT).toBe(RECORDED.tipHeight + 1);
  });

  it('opens no WebSocket to the upstream with push off', async () => {
    const upstream = await pushingUpstream();
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { live: { push: { enabled: false } } } });
    defer(() => proxy.close());
    await proxy.tracker.pollOnce();
    expect(await latestHeight(proxy)).toBe(RECORDED.tipHeight);
    expect(upstream.count((r) => r.method === 'UPGRADE')).toBe(0);
    expect(upstream.rpc.connectionsOpened).toBe(0);
    expect(proxy.pushFeed).toBeUndefined();
  });
});

describe('ChainTipTracker.pollNow', () => {
  const { defer, fakeUpstream } = useCleanups();

  it('polls that upstream at once, and again after a poll that was already in flight', async () => {
    const upstream = await fakeUpstream();
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    defer(() => proxy.close());
    const origin = new URL(upstream.url).origin;
    upstream.advanceTip();
    proxy.tracker.pollNow(origin);
    await expect.poll(() => proxy.tracker.tip?.height, WAIT).toBe(RECORDED.tipHeight + 1);

    // A poll asked before the block existed must not be the answer to a push about it.
    upstream.setDelay(200, /^\/extended$/);
    const inFlight = proxy.tracker.pollOnce();
    await expect.poll(() => upstream.count('/extended'), WAIT).toBeGreaterThanOrEqual(2);
    const asked = upstream.count('/extended');
    upstream.advanceTip();
    proxy.tracker.pollNow(origin);
    await inFlight;
    await expect.poll(() => proxy.tracker.tip?.height, WAIT).toBe(RECORDED.tipHeight + 2);
    expect(upstream.count('/extended')).toBe(asked + 1);
  });

  it('ignores an origin it does not poll', async () => {
    const upstream = await fakeUpstream();
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    defer(() => proxy.close());
    const before = upstream.count('/extended');
    proxy.tracker.pollNow('http://127.0.0.1:1');
    await proxy.tracker.pollOnce();
    expect(upstream.count('/extended')).toBe(before + 1);
  });
});
