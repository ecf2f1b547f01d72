/**
 * Nothing final without evidence, through real HTTP against fake upstreams: an answer whose
 * position (block height, burn height, block hash) disagrees with the chain the proxy verified
 * is served as the upstream sent it, never stored and never held against the upstream (the
 * proxy's picture may be what is wrong), in /tx/{id}, tx/multiple and blocks alike, and
 * tx/events?tx_id= does not become final with it; a tip that
 * jumps ahead is believed only on evidence one upstream cannot give alone, and what a believed
 * tip made final stops being final (and immutable) when that tip comes back down.
 */
import { describe, expect, it } from 'vitest';
import { RECORDED, type FakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const { defer, fakeUpstream } = useCleanups();

const ATTEMPTS = 2;
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'public, no-cache, must-revalidate';

async function proxyFor(upstreams: FakeUpstream[], overrides: Record<string, unknown> = {}) {
  // A high breaker threshold: this is about what is stored, not about when a breaker opens.
  const settings = { upstream: { maxAttempts: ATTEMPTS, retryBackoffMs: 1, failureThreshold: 100 }, ...overrides };
  const proxy = await startTestProxy({ upstreamUrls: upstreams.map((u) => u.url), overrides: settings });
  defer(() => proxy.close());
  return proxy;
}

const exactly = (path: string) => new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
const TX_PATH = `/extended/v1/tx/${RECORDED.confirmedTxId}`;
const EVENTS_PATH = `/extended/v1/tx/events?tx_id=${RECORDED.confirmedTxId}`;
/** A block above the watermark (block 36 at burn 130, six below the recorded burn tip 136). */
const RECENT_BLOCK = `/extended/v2/blocks/${RECORDED.tipHeight - 1}`;

/** The upstream's own answer for `path`, with `change` applied: a lie that is otherwise well-formed. */
async function lyingBody(upstream: FakeUpstream, path: string, change: (json: Record<string, unknown>) => void): Promise<string> {
  const json = JSON.parse((await fetchRaw(upstream.url + path)).body.toString()) as Record<string, unknown>;
  change(json);
  return JSON.stringify(json);
}

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;
/** Answers counted as disagreeing with the chain model, every reason together. */
const disagreements = (proxy: Proxy) => metricValue(proxy, 'stacks_proxy_chain_disagreements_total');

const classOf = (response: { headers: Headers }) => [response.headers.get('x-cache-class'), response.headers.get('cache-control')];

/** What a disagreement costs: the client gets the upstream's bytes, the upstream is not failed, the metric counts it. */
async function expectServedAsSent(proxy: Proxy, response: Awaited<ReturnType<typeof fetchRaw>>, body: string, invalidBefore: number) {
  expect([response.status, response.headers.get('x-cache'), response.body.toString()]).toEqual([200, 'BYPASS', body]);
  expect(response.headers.get('cache-control')).not.toBe(IMMUTABLE);
  expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { kind: 'invalid' })).toBe(invalidBefore);
  expect(await disagreements(proxy)).toBeGreaterThan(0);
}

describe('an answer whose position disagrees with the verified chain', () => {
  it.each([
    ['a transaction in block 999999999', TX_PATH, (tx: Record<string, unknown>) => (tx.block_height = 999_999_999)],
    ['a transaction anchored at burn height 1', TX_PATH, (tx: Record<string, unknown>) => (tx.burn_block_height = 1)],
    ['a transaction in another block at its height', TX_PATH, (tx: Record<string, unknown>) => (tx.block_hash = `0x${'ab'.repeat(32)}`)],
    ['a recent block anchored at burn height 1', RECENT_BLOCK, (block: Record<string, unknown>) => (block.burn_block_height = 1)],
    ['a deep block anchored at burn height 1', '/extended/v2/blocks/5', (block: Record<string, unknown>) => (block.burn_block_height = 1)],
    ['a block at a height above every tip', '/extended/v2/blocks/latest', (block: Record<string, unknown>) => (block.height = 999_999_999)],
  ])(
    '%s: served as the upstream sent it, never final, never stored, not held against the upstream; then the right bytes once it is honest',
    async (_name, path, change) => {
      const upstream = await fakeUpstream();
      const proxy = await proxyFor([upstream]);
      const invalidBefore = await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { kind: 'invalid' });
      const lie = await lyingBody(upstream, path, change);
      upstream.setFailing({ status: 200, body: lie }, exactly(path));
      upstream.resetCounts();

      await expectServedAsSent(proxy, await fetchRaw(proxy.url + path), lie, invalidBefore);
      // Not stored: the next read asks again, and gets the same.
      await expectServedAsSent(proxy, await fetchRaw(proxy.url + path), lie, invalidBefore);
      expect(upstream.count(exactly(path))).toBe(2);

      upstream.setFailing(null);
      const honest = await fetchRaw(proxy.url + path);
      expect([honest.status, honest.headers.get('x-cache')]).toEqual([200, 'MISS']);
      expect(honest.body.equals((await fetchRaw(upstream.url + path)).body)).toBe(true);
    },
  );

  it('a deep block anchored at burn height 1 once: the client gets it as sent, unstored; the next read is final', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    const path = '/extended/v2/blocks/5';
    const lie = await lyingBody(upstream, path, (block) => (block.burn_block_height = 1));
    upstream.failNext(1, { status: 200, body: lie }, exactly(path));
    await expectServedAsSent(proxy, await fetchRaw(proxy.url + path), lie, 0);
    const response = await fetchRaw(proxy.url + path);
    expect(JSON.parse(response.body.toString()).burn_block_height).toBe(108);
    expect([response.headers.get('x-cache'), ...classOf(response)]).toEqual(['MISS', 'final', IMMUTABLE]);
  });

  it('with two upstreams the disagreeing answer is what the client gets (one request), and the next read is the other upstream’s, final', async () => {
    const [liar, honest] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([liar, honest]);
    const lie = await lyingBody(liar, TX_PATH, (tx) => (tx.block_height = 999_999_999));
    liar.setFailing({ status: 200, body: lie }, exactly(TX_PATH));
    liar.resetCounts();
    honest.resetCounts();

    const first = await fetchRaw(proxy.url + TX_PATH);
    expect(liar.count(TX_PATH) + honest.count(TX_PATH)).toBe(1);
    const body = liar.count(TX_PATH) === 1 ? lie : (await fetchRaw(honest.url + TX_PATH)).body.toString();
    expect([first.status, first.body.toString()]).toEqual([200, body]);
    // Neither upstream was failed: reads keep going to both.
    for (let i = 0; i < 4; i++) await fetchRaw(`${proxy.url}/extended/v2/blocks/${i + 1}`);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { kind: 'invalid' })).toBe(0);
  });

  it('a disagreeing member of tx/multiple: the list is served as sent, nothing of it is stored', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    const list = `/extended/v1/tx/multiple?tx_id=${RECORDED.confirmedTxId}`;
    const body = await lyingBody(upstream, list, (answer) => {
      (answer[RECORDED.confirmedTxId] as { result: Record<string, unknown> }).result.burn_block_height = 1;
    });
    upstream.setFailing({ status: 200, body }, exactly(list));
    const served = await fetchRaw(proxy.url + list);
    expect([served.status, served.body.toString()]).toEqual([200, body]);
    expect(await disagreements(proxy)).toBe(1);
    upstream.setFailing(null);
    const single = await fetchRaw(proxy.url + TX_PATH);
    expect([single.headers.get('x-cache'), JSON.parse(single.body.toString()).burn_block_height]).toEqual(['MISS', 103]);
  });

  it('tx/events?tx_id= does not become final with a disagreeing transaction', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream], { upstream: { maxAttempts: 1, retryBackoffMs: 1, failureThreshold: 100 } });
    const lie = await lyingBody(upstream, TX_PATH, (tx) => (tx.burn_block_height = 1));
    upstream.failNext(1, { status: 200, body: lie }, exactly(TX_PATH));
    expect((await fetchRaw(proxy.url + TX_PATH)).body.toString()).toBe(lie);
    const events = await fetchRaw(proxy.url + EVENTS_PATH);
    expect(events.status).toBe(200);
    expect(classOf(events)).toEqual(['tip', REVALIDATE]);
  });

  it('an honest deep transaction is final after one check of the block it names, and its events with it', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    upstream.resetCounts();
    const tx = await fetchRaw(proxy.url + TX_PATH);
    expect(classOf(tx)).toEqual(['final', IMMUTABLE]);
    const checks = () => upstream.count((r) => /^\/extended\/v2\/blocks\/0x[0-9a-f]{64}$/.test(r.path));
    expect(checks()).toBe(1); // the check of its block, by the block's hash
    expect(classOf(await fetchRaw(proxy.url + EVENTS_PATH))).toEqual(['final', IMMUTABLE]);
    // The block itself, asked for by height, needs no second check.
    expect(classOf(await fetchRaw(`${proxy.url}/extended/v2/blocks/${RECORDED.confirmedTxHeight}`))).toEqual(['final', IMMUTABLE]);
    expect(checks()).toBe(1);
  });
});

describe('a check that hangs', () => {
  it('holds the answer at most a moment: a deep transaction whose block check never answers is served as tip, not after the request deadline', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream], { upstream: { maxAttempts: ATTEMPTS, retryBackoffMs: 1, failureThreshold: 100, requestDeadlineMs: 60_000 } });
    const checks = upstream.hold(/^\/extended\/v2\/blocks\/0x/);
    defer(async () => checks.release());
    const started = Date.now();
    const tx = await fetchRaw(proxy.url + TX_PATH);
    expect([tx.status, ...classOf(tx)]).toEqual([200, 'tip', REVALIDATE]);
    // Not a speed figure: the request deadline is a minute, and the check never answers.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(tx.body.equals((await fetchRaw(upstream.url + TX_PATH)).body)).toBe(true);
    checks.release();
  }, 40_000);
});

describe('a 304 for stored bytes the verified chain now disagrees with', () => {
  it('confirms nothing: the transaction is fetched again in full, and only the right bytes become final', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    const id = upstream.addPendingTx();
    upstream.confirmTx(id);
    await proxy.tracker.pollOnce();
    const path = `/extended/v1/tx/${id}`;
    // Above the watermark, another block than the one the proxy knows at that height may be a
    // reorg not seen yet: the answer is stored as tip, with the transaction's real ETag.
    const real = await fetchRaw(upstream.url + path);
    const lie = await lyingBody(upstream, path, (tx) => (tx.block_hash = `0x${'cd'.repeat(32)}`));
    upstream.failNext(1, { status: 200, body: lie, headers: { etag: real.headers.get('etag') ?? '' } }, exactly(path));
    expect(classOf(await fetchRaw(proxy.url + path))).toEqual(['tip', REVALIDATE]);

    upstream.advanceTip(7); // the transaction's block is final now, and known
    await proxy.tracker.pollOnce();
    upstream.resetCounts();
    const again = await fetchRaw(proxy.url + path);
    expect([again.headers.get('x-cache'), ...classOf(again)]).toEqual(['MISS', 'final', IMMUTABLE]);
    expect(again.body.equals(real.body)).toBe(true);
    expect(upstream.requests.filter((r) => r.path === path).map((r) => r.headers['if-none-match'] !== undefined)).toEqual([true, false]);
  });
});

describe('a bogus tip', () => {
  /** A transaction mined in a new block on top of the recorded tip, and that block seen by the proxy. */
  async function recentTx(upstream: FakeUpstream, proxy: { tracker: { pollOnce(): Promise<void> } }): Promise<string> {
    const id = upstream.addPendingTx();
    upstream.confirmTx(id);
    await proxy.tracker.pollOnce();
    return `/extended/v1/tx/${id}`;
  }

  it.each([1_000, 15])('%i blocks (and burn blocks) ahead for three polls, then the real tip: never believed, nothing recent becomes final', async (jump) => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    const tx = await recentTx(upstream, proxy);
    const believed = proxy.tracker.tip;

    upstream.jumpTip(jump);
    for (let poll = 0; poll < 3; poll++) {
      await proxy.tracker.pollOnce();
      expect(proxy.tracker.tip).toEqual(believed);
      for (const path of [RECENT_BLOCK, tx]) expect(classOf(await fetchRaw(proxy.url + path)), path).toEqual(['tip', REVALIDATE]);
    }
    upstream.jumpTip(0);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip).toEqual(believed);
    for (const path of [RECENT_BLOCK, tx]) expect(classOf(await fetchRaw(proxy.url + path)), path).toEqual(['tip', REVALIDATE]);
    expect(await metricValue(proxy, 'stacks_proxy_reorgs_total')).toBe(0);
  });

  it('that two upstreams report is believed; when it comes back down, what it made final is no longer final nor immutable', async () => {
    const [first, second] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([first, second]);
    for (const upstream of [first, second]) upstream.jumpTip(15);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip?.height).toBe(RECORDED.tipHeight + 15);
    // Under that tip the recent block is six burn blocks deep: final, as far as the proxy can tell.
    expect(classOf(await fetchRaw(proxy.url + RECENT_BLOCK))).toEqual(['final', IMMUTABLE]);

    for (const upstream of [first, second]) upstream.jumpTip(0);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip?.height).toBe(RECORDED.tipHeight);
    expect(proxy.tracker.view().finalBurnHeight).toBeLessThanOrEqual(RECORDED.tipBurnHeight - 6);
    const after = await fetchRaw(proxy.url + RECENT_BLOCK);
    expect(classOf(after)).toEqual(['tip', REVALIDATE]);
    expect(after.headers.get('x-cache')).not.toBe('HIT');
  });

  it('what it made final, standing in for failing upstreams once it came back down, is served as tip', async () => {
    const [first, second] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([first, second]);
    for (const upstream of [first, second]) upstream.jumpTip(15);
    await proxy.tracker.pollOnce();
    expect(classOf(await fetchRaw(proxy.url + RECENT_BLOCK))).toEqual(['final', IMMUTABLE]);
    for (const upstream of [first, second]) upstream.jumpTip(0);
    await proxy.tracker.pollOnce();

    for (const upstream of [first, second]) upstream.setFailing({ status: 503, body: '{"error":"down"}' }, exactly(RECENT_BLOCK));
    const stale = await fetchRaw(proxy.url + RECENT_BLOCK);
    expect([stale.status, stale.headers.get('x-cache')]).toEqual([200, 'STALE']);
    expect(classOf(stale)).toEqual(['tip', REVALIDATE]);
  });
});

describe('a real catch-up of the only upstream', () => {
  it('is believed once its parent chain links it to the believed tip, a bounded walk per poll; the old tip is served meanwhile', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    upstream.advanceTip(40); // more than maxJumpBlocks (10), more than one poll's walk (32 blocks)
    upstream.resetCounts();
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip?.height).toBe(RECORDED.tipHeight);
    expect(upstream.count(/^\/extended\/v2\/blocks\/\d+$/)).toBe(32);
    expect((await fetchRaw(`${proxy.url}/extended/v2/blocks/latest`)).status).toBe(200); // still serving meanwhile
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip?.height).toBe(RECORDED.tipHeight + 40);
    expect(await metricValue(proxy, 'stacks_proxy_reorgs_total')).toBe(0);
  });
});
