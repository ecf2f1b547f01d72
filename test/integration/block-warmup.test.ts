/**
 * The warm-up of a new block (issue 16, live.warm) through real HTTP against the counting fake
 * upstream: after a block, the first client read of the block and of a URL clients asked under
 * the previous tip is a hit, and the upstream got one request for it, the warm-up's; the
 * per-block budget holds; warm-up off is the old behaviour; a failing upstream during the
 * warm-up breaks nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, waitFor, type FakeUpstream } from '../../testkit/index.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';
import { signTransfer, startSurfaceUpstream } from '../../testkit/surface-upstream/index.js';

const P = RECORDED.principal;
const HOT = `/extended/v1/address/${P}/transactions`;

let upstream: FakeUpstream;
let proxy: ProxyServer | undefined;

beforeEach(async () => {
  upstream = await startFakeUpstream();
});
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
  await upstream.close();
});

const warmOn = (warm: Record<string, unknown> = {}, more: Record<string, unknown> = {}) => ({ live: { warm: { enabled: true, ...warm } }, ...more });

async function start(overrides: Record<string, unknown>): Promise<ProxyServer> {
  proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides });
  return proxy;
}

/** Warm reads counted so far (every outcome). */
const warmed = (p: ProxyServer, labels: Record<string, string> = {}) => metricValue(p, 'stacks_proxy_warm_requests_total', labels);

async function get(p: ProxyServer, path: string): Promise<{ status: number; cache: string | null; body: Buffer }> {
  const response = await fetchRaw(p.url + path);
  return { status: response.status, cache: response.headers.get('x-cache'), body: response.body };
}

/** A new block, the tip poll that believes it, and the warm-up's `reads` reads counted. */
async function nextBlock(p: ProxyServer, reads: number): Promise<void> {
  const before = await warmed(p);
  upstream.advanceTip();
  await p.tracker.pollOnce();
  await waitFor(async () => (await warmed(p)) >= before + reads, { timeoutMs: 10_000, what: `${reads} warm reads` });
}

describe('warm-up of a new block', () => {
  it('serves the new block and the URLs clients asked under the previous tip as hits, each asked upstream once, by the warm-up', async () => {
    const p = await start(warmOn({}, { activity: { enabled: false } }));
    const old = upstream.tip();
    // Under the old tip clients ask a tip-class history, the tip block by height and by index hash.
    for (let i = 0; i < 3; i++) expect((await get(p, HOT)).status).toBe(200);
    expect((await get(p, `/extended/v2/blocks/${old.height}`)).status).toBe(200);
    expect((await get(p, `/extended/v2/blocks/${old.index_block_hash}`)).status).toBe(200);
    upstream.resetCounts();

    // Planned: the block by height, the history, the block by its index hash.
    await nextBlock(p, 3);
    const tip = upstream.tip();
    expect(tip.height).toBe(old.height + 1);
    for (const path of [`/extended/v2/blocks/${tip.height}`, `/extended/v2/blocks/${tip.index_block_hash}`, HOT]) {
      const read = await get(p, path);
      expect(read.cache, path).toBe('HIT');
      expect(read.body.equals((await fetchRaw(upstream.url + path)).body), path).toBe(true);
      // The warm-up's, and this test's own; the tip block by its index hash also the tracker's (its anchor).
      const asked = path.endsWith(tip.index_block_hash) ? 3 : 2;
      expect(
        upstream.count((r) => r.url === path && r.headers['x-request-id'] === undefined),
        path,
      ).toBe(asked);
    }
    // The first tip, at start, was warmed too: one block then, one now.
    expect(await warmed(p, { kind: 'block', outcome: 'fetched' })).toBe(2);
    expect(await warmed(p, { kind: 'hot', outcome: 'fetched' })).toBe(2);
  });

  it("warms a block's transactions in one tx/multiple with the ids the block learner read, and /tx/{id} is then a hit", async () => {
    const surface = await startSurfaceUpstream({ seed: 'block-warmup', wallets: 4, bots: 1 });
    try {
      const p = await startTestProxy({ upstreamUrls: [surface.url], overrides: warmOn() });
      try {
        const bot = surface.cast.bots[0]!;
        const nonce = surface.current().accounts.get(bot.address)?.nonce ?? 0;
        const answer = surface.broadcast(await signTransfer(bot, surface.cast.wallets[0]!.address, 1_000n, nonce, 300n));
        expect(answer.status).toBe(200);
        // The node answers the id without 0x; the API's routes name it with (without, they redirect).
        const txId = `0x${(JSON.parse(answer.body) as string).replace(/^0x/, '')}`;
        surface.mine();
        surface.resetCounts();
        await p.tracker.pollOnce();
        await waitFor(async () => (await warmed(p, { kind: 'transactions' })) >= 1, { timeoutMs: 10_000, what: 'the transactions warmed' });
        expect(await warmed(p, { kind: 'transactions', outcome: 'fetched' })).toBe(1);
        // The learner's own tx/multiple asks for events (event_limit): the warm-up's is the other one.
        const warmLists = surface.count((r) => r.url.startsWith('/extended/v1/tx/multiple?') && !r.url.includes('event_limit'));
        expect(warmLists).toBe(1);
        const read = await fetchRaw(`${p.url}/extended/v1/tx/${txId}`);
        expect(read.headers.get('x-cache')).toBe('HIT');
        expect(read.body.toString()).toBe(surface.answerAt(Date.now(), 'GET', `/extended/v1/tx/${txId}`).body);
        expect(surface.count((r) => r.url.startsWith(`/extended/v1/tx/${txId}`))).toBe(0);
      } finally {
        await p.close();
      }
    } finally {
      await surface.close();
    }
  });

  it('keeps within live.warm.maxRequestsPerBlock, however many URLs are hot', async () => {
    const p = await start(warmOn({ maxRequestsPerBlock: 2 }, { activity: { enabled: false } }));
    const hot = [1, 2, 3, 4, 5].map((limit) => `${HOT}?limit=${limit}`);
    for (const path of hot) for (let i = 0; i < 2; i++) expect((await get(p, path)).status).toBe(200);
    upstream.resetCounts();

    // The block and five hot URLs planned: two fetched, four over the budget.
    await nextBlock(p, 6);
    const asked = upstream.count((r) => r.url.startsWith(HOT) || r.path === `/extended/v2/blocks/${upstream.tip().height}`);
    expect(asked).toBe(2);
    expect(await warmed(p, { outcome: 'over_budget' })).toBe(4);

    // Per block: the next one costs two again.
    upstream.resetCounts();
    await nextBlock(p, 6);
    expect(upstream.count((r) => r.url.startsWith(HOT) || r.path === `/extended/v2/blocks/${upstream.tip().height}`)).toBe(2);
  });

  it('with live.warm.enabled false, nothing is read before a client asks (the old behaviour)', async () => {
    const p = await start({ activity: { enabled: false } });
    for (let i = 0; i < 3; i++) await get(p, HOT);
    upstream.resetCounts();
    upstream.advanceTip();
    await p.tracker.pollOnce();
    const tip = upstream.tip();
    expect(upstream.count(HOT)).toBe(0);
    expect(upstream.count(`/extended/v2/blocks/${tip.height}`)).toBe(0);
    expect((await get(p, `/extended/v2/blocks/${tip.height}`)).cache).toBe('MISS');
    expect((await get(p, HOT)).cache).toBe('MISS');
    expect(await warmed(p)).toBe(0);
  });

  it('a failing upstream during the warm-up breaks nothing: reads after it are answered, from the upstream once it answers again', async () => {
    const p = await start(warmOn({}, { activity: { enabled: false } }));
    for (let i = 0; i < 2; i++) await get(p, HOT);
    const before = await warmed(p);
    // Blocks by height and address reads (not the tip block by hash, which the tracker reads for its anchor).
    upstream.setFailing({ status: 500, body: '{"error":"boom"}' }, /\/extended\/v(1\/address|2\/blocks\/\d+(\?|$))/);
    await nextBlock(p, 2);
    // Both reads went to the failing upstream (the 500 is passed on unstored, or fails the read).
    expect((await warmed(p, { outcome: 'passed' })) + (await warmed(p, { outcome: 'failed' }))).toBe(2);
    expect(await warmed(p)).toBe(before + 2);
    upstream.setFailing(null);
    const tip = upstream.tip();
    const block = await get(p, `/extended/v2/blocks/${tip.height}`);
    expect(block.status).toBe(200);
    expect(block.cache).toBe('MISS'); // nothing stored from the failed warm-up
    expect((await get(p, HOT)).status).toBe(200);
    expect((await fetchRaw(`${p.url}/extended/v2/blocks/latest`)).status).toBe(200);
  });
});
