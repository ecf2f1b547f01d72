/**
 * The chain tip from evidence, through real HTTP against fake upstreams: a tip that jumps 1,000
 * blocks is not believed however often the one upstream reports it, and never makes data final
 * (finality comes from a verified watermark); a second upstream confirms a jump at once, the
 * parent chain a real catch-up; each upstream is polled on its own, so one hanging its tip poll
 * never holds back the tip of another.
 */
import { describe, expect, it } from 'vitest';
import { RECORDED, type FakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const { defer, fakeUpstream } = useCleanups();

async function proxyFor(upstreams: FakeUpstream[], overrides: Record<string, unknown> = {}) {
  const proxy = await startTestProxy({ upstreamUrls: upstreams.map((u) => u.url), overrides });
  defer(() => proxy.close());
  return proxy;
}

const JUMP = 1_000;
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'public, no-cache, must-revalidate';
/** A block six burn blocks below the recorded tip is final; one a burn block below the tip is not. */
const RECENT_BLOCK = `/extended/v2/blocks/${RECORDED.tipHeight - 1}`;
const DEEP_BLOCK = '/extended/v2/blocks/1';

/** A transaction mined in a new block on top of the recorded tip, and that block seen by the proxy. */
async function recentTx(upstream: FakeUpstream, proxy: { tracker: { pollOnce(): Promise<void> } }): Promise<string> {
  const id = upstream.addPendingTx();
  upstream.confirmTx(id);
  await proxy.tracker.pollOnce();
  return `/extended/v1/tx/${id}`;
}

const classOf = async (url: string) => {
  const response = await fetchRaw(url);
  expect(response.status).toBe(200);
  return [response.headers.get('x-cache-class'), response.headers.get('cache-control')];
};

describe('a tip that jumps far ahead', () => {
  it('is not believed on one poll: recent blocks and transactions fetched meanwhile are tip data, before and after it returns', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    const tx = await recentTx(upstream, proxy);
    const believed = proxy.tracker.tip;
    expect(believed?.height).toBe(RECORDED.tipHeight + 1);

    upstream.jumpTip(JUMP);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip).toEqual(believed);
    expect(await classOf(proxy.url + RECENT_BLOCK)).toEqual(['tip', REVALIDATE]);
    expect(await classOf(proxy.url + tx)).toEqual(['tip', REVALIDATE]);
    expect(await classOf(proxy.url + DEEP_BLOCK)).toEqual(['final', IMMUTABLE]); // a verified watermark still makes deep data final

    upstream.jumpTip(0);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip).toEqual(believed);
    expect(await classOf(proxy.url + RECENT_BLOCK)).toEqual(['tip', REVALIDATE]);
    expect(await classOf(proxy.url + tx)).toEqual(['tip', REVALIDATE]);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_lag_blocks', { upstream: upstream.url })).toBe(0);
  });

  // Before: the same upstream showing the jump on its next poll made it the tip. One upstream that
  // is wrong for a while is wrong on every poll: that is no evidence.
  it('seen again on the next polls of the same upstream, it is still not the tip; its return changes nothing', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    const tx = await recentTx(upstream, proxy);
    const believed = proxy.tracker.tip;

    upstream.jumpTip(JUMP);
    for (let poll = 0; poll < 3; poll++) await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip).toEqual(believed);
    expect(await classOf(proxy.url + RECENT_BLOCK)).toEqual(['tip', REVALIDATE]);
    expect(await classOf(proxy.url + tx)).toEqual(['tip', REVALIDATE]);

    upstream.jumpTip(0);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip).toEqual(believed);
    expect(await metricValue(proxy, 'stacks_proxy_reorgs_total')).toBe(0);
    upstream.resetCounts();
    for (const path of [RECENT_BLOCK, tx]) {
      const again = await fetchRaw(proxy.url + path);
      expect([again.headers.get('x-cache'), again.headers.get('x-cache-class')], path).toEqual(['HIT', 'tip']);
    }
  });

  it('is believed at once when a second upstream reports it too', async () => {
    const [first, second] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([first, second]);
    first.jumpTip(JUMP);
    second.jumpTip(JUMP);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip?.height).toBe(RECORDED.tipHeight + JUMP);
  });

  it('a step within chainTip.maxJumpBlocks is believed on one poll; a longer one once its parent chain leads to the tip', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream], { chainTip: { maxJumpBlocks: 3 } });
    upstream.advanceTip(3);
    upstream.resetCounts();
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip?.height).toBe(RECORDED.tipHeight + 3);
    expect(upstream.count((r) => r.path === `/extended/v2/blocks/${RECORDED.tipHeight + 3}`)).toBe(0); // no walk for a step
    upstream.advanceTip(4);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip?.height).toBe(RECORDED.tipHeight + 7);
    for (let height = RECORDED.tipHeight + 4; height <= RECORDED.tipHeight + 7; height++) expect(upstream.count(`/extended/v2/blocks/${height}`)).toBe(1);
  });
});

describe('each upstream is polled on its own', () => {
  it('a hanging tip poll of one upstream does not hold back the tip another reports, polled on their own schedules', async () => {
    const [hanging, live] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([hanging, live], { chainTip: { pollIntervalMs: 50 } });
    hanging.setFailing('hang', /^\/extended$/);
    live.advanceTip(2);
    // The hanging poll waits for the upstream's 10 s header timeout; the tip must not.
    await expect.poll(() => proxy.tracker.tip?.height, { timeout: 5_000 }).toBe(RECORDED.tipHeight + 2);
    live.advanceTip(1);
    await expect.poll(() => proxy.tracker.tip?.height, { timeout: 5_000 }).toBe(RECORDED.tipHeight + 3);
    expect(hanging.count('/extended')).toBeGreaterThan(0);
    await hanging.close(); // ends the hung request before the proxy shuts down
  });

  it('pollOnce sees the answering upstream without waiting for the hanging one', async () => {
    const [hanging, live] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([hanging, live]);
    hanging.setFailing('hang', /^\/extended$/);
    live.advanceTip(2);
    const polled = proxy.tracker.pollOnce();
    await expect.poll(() => proxy.tracker.tip?.height, { timeout: 5_000 }).toBe(RECORDED.tipHeight + 2);
    await polled; // ends at chainTip.pollTimeoutMs, not at the upstream's timeouts
    await hanging.close();
  });
});
