/**
 * The burn chain's tip is not the tip block's anchor (upstream-contract.md §5): the status's
 * `chain_tip.burn_block_height` moves with every burn block, with or without a Stacks block, and
 * a real recording had the tip block anchored 24 burn blocks below it. Through real HTTP: with
 * the fake's burn chain that far ahead (burn blocks without Stacks blocks, 404 on
 * by_burn_block_height, 304 to a conditional status poll), every answer is the upstream's own,
 * nothing is a disagreement, the breaker stays closed, and finality is found from the tip block's
 * anchor; a burn tip moved behind 304s reaches the proxy by its full poll; and a burn tip the
 * upstream's chain does not have (a wrong view) is not believed.
 */
import { describe, expect, it } from 'vitest';
import { RECORDED, type FakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const { defer, fakeUpstream } = useCleanups();

const IMMUTABLE = 'public, max-age=31536000, immutable';
const STATUS = /^\/extended$/;

/**
 * The fake's GET /extended reporting a burn tip `ahead` burn blocks above the tip block's anchor
 * that its burn chain does not have (same ETag: the Stacks tip's): an upstream with a wrong view.
 */
async function burnTipAhead(upstream: FakeUpstream, ahead: number): Promise<void> {
  const real = await fetchRaw(`${upstream.url}/extended`);
  const status = JSON.parse(real.body.toString()) as { chain_tip: { burn_block_height: number } };
  status.chain_tip.burn_block_height = RECORDED.tipBurnHeight + ahead;
  upstream.setFailing({ status: 200, body: JSON.stringify(status), headers: { etag: real.headers.get('etag') ?? '' } }, STATUS);
}

const READS = [
  ...Array.from({ length: RECORDED.tipHeight }, (_, i) => `/extended/v2/blocks/${i + 1}`),
  `/extended/v2/blocks/${RECORDED.tipIndexHash}`,
  '/extended/v2/blocks/latest',
  `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`,
  `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithoutBlock}`,
  `/extended/v1/block/by_burn_block_height/${RECORDED.tipBurnHeight + 5}`,
  `/extended/v1/tx/${RECORDED.confirmedTxId}`,
  `/extended/v1/tx/${RECORDED.pendingTxId}`,
  `/extended/v1/tx/multiple?tx_id=${RECORDED.confirmedTxId}&tx_id=${RECORDED.unknownTxId}`,
  `/extended/v1/address/${RECORDED.principal}/transactions`,
  `/extended/v1/address/${RECORDED.principal}/balances`,
];

describe('a burn tip above the tip block’s anchor', () => {
  /** A proxy in front of `upstream`, its first tip poll answered. */
  async function proxyOf(upstream: FakeUpstream) {
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    defer(() => proxy.close());
    await proxy.tracker.pollOnce();
    return proxy;
  }

  /** Every read of READS through the proxy is what the upstream answers for it (`pass` names the round). */
  async function expectUpstreamsAnswers(proxy: { url: string }, upstream: FakeUpstream, pass: string): Promise<void> {
    for (const path of READS) {
      const [viaProxy, direct] = [await fetchRaw(proxy.url + path), await fetchRaw(upstream.url + path)];
      expect([viaProxy.status, viaProxy.body.toString()], `${pass} ${path}`).toEqual([direct.status, direct.body.toString()]);
    }
  }

  it('24 burn blocks with no Stacks block: every answer is the upstream’s, no disagreement, the breaker closed, the tip block final', async () => {
    const upstream = await fakeUpstream();
    upstream.advanceBurn(24);
    const proxy = await proxyOf(upstream);
    expect([proxy.tracker.view().burnHeight, proxy.tracker.view().tipAnchorBurnHeight]).toEqual([RECORDED.tipBurnHeight + 24, RECORDED.tipBurnHeight]);

    for (const pass of ['first', 'second']) await expectUpstreamsAnswers(proxy, upstream, pass);
    expect(await metricValue(proxy, 'stacks_proxy_chain_disagreements_total')).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total')).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_breaker_open')).toBe(0);
    // The tip block is 24 burn blocks deep: final, found from its anchor with one by_burn_block_height request.
    const tipBlock = await fetchRaw(`${proxy.url}/extended/v2/blocks/${RECORDED.tipHeight}`);
    expect([tipBlock.headers.get('x-cache-class'), tipBlock.headers.get('cache-control')]).toEqual(['final', IMMUTABLE]);
    const burnReads = upstream.requests.filter((r) => r.path.startsWith('/extended/v1/block/by_burn_block_height/') && r.headers['x-request-id'] === undefined);
    expect(burnReads.map((r) => r.path)).toContain(`/extended/v1/block/by_burn_block_height/${RECORDED.tipBurnHeight}`);
  });

  it('one burn block ahead (the new tenure not started): the tip block is not final, nothing is a disagreement', async () => {
    const upstream = await fakeUpstream();
    upstream.advanceBurn(1);
    const proxy = await proxyOf(upstream);
    await expectUpstreamsAnswers(proxy, upstream, 'first');
    const tipBlock = await fetchRaw(`${proxy.url}/extended/v2/blocks/${RECORDED.tipHeight}`);
    expect(tipBlock.headers.get('x-cache-class')).toBe('tip');
    expect(await metricValue(proxy, 'stacks_proxy_chain_disagreements_total')).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total')).toBe(0);
  });

  it('burn blocks without a Stacks block behind 304s: the full poll every 5 s moves the burn tip, and the tip block becomes final', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyOf(upstream);
    expect(proxy.tracker.view().finalStacksHeight).toBeLessThan(RECORDED.tipHeight);
    upstream.advanceBurn(6);
    // A conditional poll cannot show them (the status ETag follows the Stacks tip): 304s.
    await proxy.tracker.pollOnce();
    expect(upstream.requests.filter((r) => r.path === '/extended').at(-1)?.headers['if-none-match']).toBeDefined();
    expect(proxy.tracker.view().burnHeight).toBe(RECORDED.tipBurnHeight);
    // Within BURN_TIP_REFRESH_MS (5 s) a poll asks in full.
    const polled = async () => {
      await proxy.tracker.pollOnce();
      return proxy.tracker.view().burnHeight;
    };
    await expect.poll(polled, { timeout: 15_000, interval: 250 }).toBe(RECORDED.tipBurnHeight + 6);
    await expect.poll(() => proxy.tracker.view().finalStacksHeight, { timeout: 5_000, interval: 100 }).toBe(RECORDED.tipHeight);
    const tipBlock = await fetchRaw(`${proxy.url}/extended/v2/blocks/${RECORDED.tipIndexHash}`);
    expect([tipBlock.headers.get('x-cache-class'), tipBlock.headers.get('cache-control')]).toEqual(['final', IMMUTABLE]);
    expect(await metricValue(proxy, 'stacks_proxy_chain_disagreements_total')).toBe(0);
  }, 30_000);

  it('a burn tip 1,000 ahead for the same Stacks tip, reported for three polls, is not believed: nothing recent becomes final', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyOf(upstream);
    const before = proxy.tracker.view();
    await burnTipAhead(upstream, 1_000);
    for (let poll = 0; poll < 3; poll++) {
      await proxy.tracker.pollOnce();
      expect([proxy.tracker.view().burnHeight, proxy.tracker.view().finalStacksHeight]).toEqual([before.burnHeight, before.finalStacksHeight]);
      const recent = await fetchRaw(`${proxy.url}/extended/v2/blocks/${RECORDED.tipHeight - 1}`);
      expect(recent.headers.get('x-cache-class')).toBe('tip');
    }
    upstream.setFailing(null);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.view().burnHeight).toBe(RECORDED.tipBurnHeight);
  });
});
