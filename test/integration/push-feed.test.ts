/**
 * The push feed through the real proxy (issue 16) against the fake upstream's JSON-RPC channel:
 * a block the upstream announces is in tip-class answers long before the (60 s) poll would have
 * found it; a feed that goes quiet is not believed and polling takes over; a dropped upstream
 * connection comes back and pushes again; a mempool notification marks its principals changed;
 * push off opens no WebSocket to the upstream. And the tracker's pollNow on its own.
 */
import { describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/composition-root.js';
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
