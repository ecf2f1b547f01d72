/**
 * Unknown is not "unchanged" (issue 27): learned freshness keeps a `tip` entry about a principal
 * fresh across a block only when the proxy read what that block touched. Through real HTTP, with
 * two upstreams (each a real server counting what it receives): a block whose contents the proxy
 * could not read (its transactions answered 500 or 404 or never, its events 500), and blocks it
 * could not even see (no tip poll answers), leave an address's history, its `/v2/accounts`
 * balance and nonce, and its nonces to be asked for again, and with every upstream down served
 * `STALE` (stale-if-error), never `HIT`.
 */
import { privateKeyToAddress, randomPrivateKey } from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tipWatchMs, type ProxyServer } from '../../src/composition-root.js';
import { testConfig, waitFor } from '../../testkit/index.js';
import { startActivityUpstream, type ActivityUpstream } from '../support/activity-upstream.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

/** Short deadlines, so that a hung learner request ends within the test. */
const FAST = { upstream: { headersTimeoutMs: 300, bodyTimeoutMs: 300, requestDeadlineMs: 1_000, retryBackoffMs: 5 } };

const newPrincipal = (): string => privateKeyToAddress(randomPrivateKey(), 'testnet');
const BOB = newPrincipal();
const CAROL = newPrincipal();
const BLOCK_TXS = /^\/extended\/v2\/blocks\/0x[0-9a-f]{64}\/transactions/;
const EVENTS = /^\/extended\/v1\/tx\/multiple/;

/** What a wallet reads about `principal`: its history (tip), its balance and nonce (tip), its nonces (mempool). */
const pathsOf = (principal: string) => ({
  history: `/extended/v1/address/${principal}/transactions`,
  account: `/v2/accounts/${principal}?proof=0`,
  nonces: `/extended/v1/address/${principal}/nonces`,
});

/** Two upstreams serving one chain: every block is mined on both. */
class TwoUpstreams {
  constructor(readonly all: [ActivityUpstream, ActivityUpstream]) {}
  get urls(): string[] {
    return this.all.map((u) => u.url);
  }
  mine(touching: 'quiet' | 'bob-to-carol' | { to: string }): void {
    for (const upstream of this.all) {
      if (touching === 'quiet') upstream.mine([]);
      else if (touching === 'bob-to-carol') upstream.mine([upstream.transfer(BOB, CAROL)]);
      else upstream.mine([upstream.transfer(BOB, touching.to)]);
    }
  }
  set(fault: { failing?: RegExp; missing?: RegExp; hanging?: RegExp }): void {
    for (const upstream of this.all) Object.assign(upstream, { failing: undefined, missing: undefined, hanging: undefined, ...fault });
  }
  count(path: string): number {
    const exact = path.split('?')[0] as string;
    return this.all.reduce((n, u) => n + u.requests.filter((r) => r.url.split('?')[0] === exact).length, 0);
  }
  async close(): Promise<void> {
    await Promise.all(this.all.map((u) => u.close()));
  }
}

async function twoUpstreams(): Promise<TwoUpstreams> {
  return new TwoUpstreams([await startActivityUpstream(), await startActivityUpstream()]);
}

/** Reads a path through the proxy: what X-Cache said, whether an upstream was asked, and the body. */
async function read(proxy: ProxyServer, upstreams: TwoUpstreams, path: string): Promise<{ cache: string | null; asked: boolean; body: string }> {
  const before = upstreams.count(path);
  const answer = await fetchRaw(proxy.url + path);
  expect(answer.status).toBe(200);
  return { cache: answer.headers.get('x-cache'), asked: upstreams.count(path) > before, body: answer.body.toString() };
}

/**
 * Blocks the proxy reads, touching nobody read here: with two upstreams an entry stamped at tip h
 * leans on learning from h - upstream.maxLagBlocks (a lagging upstream may have answered it), so
 * after a void that many blocks are learned before an entry cached then can be a learned hit.
 */
async function quietBlocks(proxy: ProxyServer, upstreams: TwoUpstreams, blocks: number): Promise<void> {
  for (let i = 0; i < blocks; i++) {
    upstreams.mine('quiet');
    await followTip(proxy);
  }
}

/** Polls the tip once and waits until the learner had its say about what the poll brought. */
async function followTip(proxy: ProxyServer): Promise<void> {
  const before = await metricValue(proxy, 'stacks_proxy_activity_blocks_total');
  await proxy.tracker.pollOnce();
  await waitFor(async () => (await metricValue(proxy, 'stacks_proxy_activity_blocks_total')) > before, {
    timeoutMs: 5_000,
    what: 'the block learner to settle',
  });
}

describe('a block whose contents the proxy could not read', () => {
  let upstreams: TwoUpstreams;
  let proxy: ProxyServer;
  let lagBlocks: number;
  beforeAll(async () => {
    upstreams = await twoUpstreams();
    const options = { upstreamUrls: upstreams.urls, overrides: FAST };
    lagBlocks = testConfig(options).upstream.maxLagBlocks;
    proxy = await startTestProxy(options);
  });
  afterAll(async () => {
    await proxy.close();
    await upstreams.close();
  });
  afterEach(() => upstreams.set({}));

  it.each([
    ['its transactions answered 500', { failing: BLOCK_TXS }],
    ['its transactions answered 404', { missing: BLOCK_TXS }],
    ['its transactions never answered (the request timed out)', { hanging: BLOCK_TXS }],
    ['its events answered 500', { failing: EVENTS }],
  ])('%s: the entries are asked for again, and served STALE with every upstream down', async (_name, fault) => {
    await quietBlocks(proxy, upstreams, lagBlocks);
    const alice = newPrincipal();
    const paths = pathsOf(alice);
    for (const path of Object.values(paths)) expect((await read(proxy, upstreams, path)).cache).toBe('MISS');
    // A block the proxy read, not touching her: her confirmed state is served from cache (the rule works).
    upstreams.mine('quiet');
    await followTip(proxy);
    expect(await read(proxy, upstreams, paths.history)).toMatchObject({ cache: 'HIT', asked: false });
    expect(await read(proxy, upstreams, paths.account)).toMatchObject({ cache: 'HIT', asked: false });
    const before = { history: await read(proxy, upstreams, paths.history), account: await read(proxy, upstreams, paths.account) };

    // A block (an event in it) it cannot read. It does not touch her either, but the proxy cannot know that.
    const unknown = await metricValue(proxy, 'stacks_proxy_activity_blocks_total', { outcome: 'unknown' });
    upstreams.set(fault);
    upstreams.mine('bob-to-carol');
    await followTip(proxy);
    expect(await metricValue(proxy, 'stacks_proxy_activity_blocks_total', { outcome: 'unknown' })).toBe(unknown + 1);

    // Every upstream down: the stored answers stand in, as STALE.
    upstreams.set({ failing: /./ });
    for (const path of Object.values(paths)) expect((await read(proxy, upstreams, path)).cache).toBe('STALE');
    expect((await read(proxy, upstreams, paths.history)).body).toBe(before.history.body);

    // The upstreams up: asked again, not a learned hit.
    upstreams.set({});
    for (const path of Object.values(paths)) {
      const again = await read(proxy, upstreams, path);
      expect(again.asked).toBe(true);
      expect(again.cache).not.toBe('HIT');
    }
  });
});

describe('blocks the proxy could not see (no tip poll answers)', () => {
  let clock = Date.now();
  let upstreams: TwoUpstreams;
  let proxy: ProxyServer;
  let watchMs: number;
  let lagBlocks: number;
  beforeAll(async () => {
    upstreams = await twoUpstreams();
    const options = { upstreamUrls: upstreams.urls, overrides: FAST };
    watchMs = tipWatchMs(testConfig(options));
    lagBlocks = testConfig(options).upstream.maxLagBlocks;
    proxy = await startTestProxy({ ...options, now: () => clock });
  });
  afterAll(async () => {
    await proxy.close();
    await upstreams.close();
  });

  it('a learned entry is not vouched for once the believed tip goes unconfirmed: STALE with every upstream down, asked again when reads are answered', async () => {
    await quietBlocks(proxy, upstreams, lagBlocks);
    const alice = newPrincipal();
    const paths = pathsOf(alice);
    const first = { history: await read(proxy, upstreams, paths.history), account: await read(proxy, upstreams, paths.account) };
    upstreams.mine('quiet');
    await followTip(proxy);
    expect(await read(proxy, upstreams, paths.history)).toMatchObject({ cache: 'HIT', asked: false });

    // The tip polls stop answering, and a block pays her: the proxy sees nothing of it.
    upstreams.set({ failing: /^\/extended$/ });
    upstreams.mine({ to: alice });
    await proxy.tracker.pollOnce();
    // Past the longest a working tracker goes without an answered poll; well within cache.ttl.learnedMaxMs.
    clock += watchMs + 1;

    upstreams.set({ failing: /./ });
    const down = { history: await read(proxy, upstreams, paths.history), account: await read(proxy, upstreams, paths.account) };
    expect(down.history.cache).toBe('STALE');
    expect(down.account.cache).toBe('STALE');
    expect(down.history.body).toBe(first.history.body);
    expect(down.account.body).toBe(first.account.body);

    // Reads answered, tip polls still not: each read is the upstream's, which has seen the block.
    upstreams.set({ failing: /^\/extended$/ });
    const up = await read(proxy, upstreams, paths.history);
    expect(up.asked).toBe(true);
    expect(up.cache).not.toBe('HIT');
    expect(JSON.parse(up.body).confirmed_txs).toBeGreaterThan(JSON.parse(first.history.body).confirmed_txs);
    const account = await read(proxy, upstreams, paths.account);
    expect(account.asked).toBe(true);
    expect(account.body).not.toBe(first.account.body);
  });
});
