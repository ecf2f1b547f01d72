/**
 * Admin purges reach the wider read surface's entries (route families), through real HTTP: a
 * purge by principal, transaction, block or family id through one instance removes those
 * entries from Redis and from the memory tier of both instances sharing it (the next read is a
 * MISS: the upstream is asked again), and only those: an entry about a principal that is a
 * prefix of the purged one, another transaction, another height, stays. And on an instance
 * without Redis, its memory tier.
 */
import { makeSTXTokenTransfer, privateKeyToAddress, randomPrivateKey } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/composition-root.js';
import { startRedis, type TestRedis } from '../../testkit/index.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { nodeAnswer, startSurfaceTestUpstream, withEtag, type SurfaceTestUpstream } from '../support/surface-test-upstream.js';

const TOKEN = 'admin-test-token-0123456789abcdef';
const ALICE = privateKeyToAddress(randomPrivateKey(), 'testnet');
/** A principal ALICE's address starts with: a purge of one must never take the other's entries. */
const PREFIX_OF_ALICE = ALICE.slice(0, -1);

let upstream: SurfaceTestUpstream;
let redis: TestRedis;
let first: ProxyServer;
let second: ProxyServer;
let tx: { id: string; hex: string };
let otherTx: { id: string; hex: string };

async function signed(): Promise<{ id: string; hex: string }> {
  const built = await makeSTXTokenTransfer({ recipient: ALICE, amount: 1n, senderKey: randomPrivateKey(), network: 'testnet', fee: 200n, nonce: 0n });
  return { id: `0x${built.txid()}`, hex: built.serialize() };
}

beforeAll(async () => {
  tx = await signed();
  otherTx = await signed();
  upstream = await startSurfaceTestUpstream();
  const p = '([A-Z0-9]+)';
  upstream.script({
    match: new RegExp(`^/extended/v1/address/${p}/nonces$`),
    answer: (r) => withEtag(r, `pm-${r.url}`, { possible_next_nonce: 3, url: r.url }),
  });
  upstream.script({
    match: new RegExp(`^/extended/v3/principals/${p}/nonces$`),
    answer: (r) => withEtag(r, `pm-${r.url}`, { possible_next_nonce: 3, url: r.url }),
  });
  upstream.script({ match: /^\/extended\/v1\/tx\/mempool\?address=/, answer: (r) => withEtag(r, 'mempool-1', { results: [], url: r.url }) });
  upstream.script({ match: /^\/v2\/accounts\//, answer: (r) => nodeAnswer({ nonce: 3, url: r.url }) });
  upstream.script({
    match: /^\/extended\/v1\/tx\/0x[0-9a-f]{64}\/raw$/,
    answer: (r) => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ raw_tx: r.url.includes(tx.id) ? `0x${tx.hex}` : `0x${otherTx.hex}` }),
    }),
  });
  upstream.script({
    match: /^\/extended\/v3\/transactions\/0x/,
    answer: (r) => withEtag(r, `tx-${r.url}`, { tx_id: r.url.split('/')[4], tx_status: 'pending' }),
  });
  upstream.script({ match: /^\/extended\/v[23]\/blocks\/[0-9]+\/transactions/, answer: (r) => withEtag(r, `block-${r.url}`, { results: [], url: r.url }) });
  redis = await startRedis();
  const overrides = { admin: { token: TOKEN } };
  first = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url, overrides });
  second = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url, overrides });
  await Promise.all([first.purgeChannelSubscribed, second.purgeChannelSubscribed]);
});
afterAll(async () => {
  await first?.close();
  await second?.close();
  await upstream?.close();
  await redis?.stop();
});

const xCache = async (proxy: ProxyServer, path: string): Promise<string | null> => {
  const answer = await fetchRaw(proxy.url + path);
  expect(answer.status, path).toBe(200);
  return answer.headers.get('x-cache');
};

async function purge(proxy: ProxyServer, body: unknown): Promise<{ purged: { memory: number; redis: number | null } }> {
  const answer = await fetchRaw(`${proxy.adminUrl}/admin/purge`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(body),
  });
  expect(answer.status, answer.body.toString()).toBe(200);
  return JSON.parse(answer.body.toString()) as { purged: { memory: number; redis: number | null } };
}

/** Every path cached in both instances' memory tiers (and Redis). */
async function warm(paths: string[]): Promise<void> {
  for (const path of paths) {
    await xCache(first, path);
    await xCache(second, path);
  }
  for (const path of paths) expect(await xCache(second, path), path).toBe('HIT');
}

const memoryHits = (proxy: ProxyServer) => metricValue(proxy, 'stacks_proxy_cache_lookups_total', { tier: 'memory', result: 'hit' });

/**
 * Purges through the first instance and waits until the second applied it. Then each target is
 * a MISS on the first (its memory tier and Redis are purged: the upstream is asked), and on the
 * second no memory hit (its memory tier is purged: it reads what the first just stored in
 * Redis). Unrelated entries are still there (HIT, or REVALIDATED where their class expired).
 */
async function expectPurged(body: unknown, targets: string[], unrelated: string[]): Promise<void> {
  const heard = second.purger.counts.fromPeers;
  const answer = await purge(first, body);
  expect(answer.purged.memory).toBeGreaterThanOrEqual(targets.length);
  expect(answer.purged.redis).toBeGreaterThanOrEqual(targets.length);
  await expect.poll(() => second.purger.counts.fromPeers, { timeout: 5_000 }).toBe(heard + 1);
  for (const path of targets) {
    const asked = upstream.received.length;
    expect(await xCache(first, path), `first ${path}`).toBe('MISS');
    expect(upstream.received.length, path).toBe(asked + 1);
  }
  const before = await memoryHits(second);
  for (const path of targets) await xCache(second, path);
  expect(await memoryHits(second)).toBe(before);
  for (const path of unrelated) {
    expect(await xCache(first, path), `first ${path}`).not.toBe('MISS');
    expect(await xCache(second, path), `second ${path}`).not.toBe('MISS');
  }
}

describe('purges of the wider read surface, through one instance, seen in both memory tiers and Redis', () => {
  it("principal: that principal's entries in every family (nonces v1 and v3, mempool?address=, /v2/accounts), not those of a principal its address starts with", async () => {
    const targets = [
      `/extended/v1/address/${ALICE}/nonces`,
      `/extended/v3/principals/${ALICE}/nonces`,
      `/extended/v1/tx/mempool?address=${ALICE}`,
      `/v2/accounts/${ALICE}?proof=0`,
    ];
    const unrelated = [`/extended/v1/address/${PREFIX_OF_ALICE}/nonces`, `/extended/v1/tx/mempool?address=${PREFIX_OF_ALICE}`, `/extended/v1/tx/${tx.id}/raw`];
    await warm([...targets, ...unrelated]);
    await expectPurged({ principal: ALICE }, targets, unrelated);
  });

  it("tx_id: the transaction's raw bytes (final) and its v3 detail, not another transaction's", async () => {
    const targets = [`/extended/v1/tx/${tx.id}/raw`, `/extended/v3/transactions/${tx.id}`];
    const unrelated = [`/extended/v1/tx/${otherTx.id}/raw`, `/v2/accounts/${ALICE}?proof=0`];
    await warm([...targets, ...unrelated]);
    expect((await fetchRaw(`${second.url}/extended/v1/tx/${tx.id}/raw`)).headers.get('x-cache-class')).toBe('final');
    await expectPurged({ tx_id: tx.id.slice(2).toUpperCase() }, targets, unrelated);
  });

  it("block: the block's transactions (v2 and v3) by its height, not another height's", async () => {
    const targets = ['/extended/v2/blocks/1/transactions?limit=50', '/extended/v3/blocks/1/transactions'];
    const unrelated = ['/extended/v2/blocks/10/transactions'];
    await warm([...targets, ...unrelated]);
    await expectPurged({ block: 1 }, targets, unrelated);
  });

  it('route: a family id purges every entry of that family, nothing else', async () => {
    const targets = [`/extended/v1/address/${ALICE}/nonces`, `/extended/v3/principals/${PREFIX_OF_ALICE}/nonces`];
    const unrelated = [`/v2/accounts/${ALICE}?proof=0`, `/extended/v1/tx/mempool?address=${ALICE}`];
    await warm([...targets, ...unrelated]);
    await expectPurged({ route: 'address_nonces' }, targets, unrelated);
  });
});

describe('without Redis', () => {
  it("a memory-only instance purges a principal's surface entries from its memory tier", async () => {
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { admin: { token: TOKEN } } });
    try {
      const target = `/extended/v1/address/${ALICE}/nonces`;
      const other = `/extended/v1/address/${PREFIX_OF_ALICE}/nonces`;
      for (const path of [target, other]) await xCache(proxy, path);
      expect(await purge(proxy, { principal: ALICE })).toMatchObject({ purged: { memory: 1, redis: null } });
      expect(await xCache(proxy, target)).toBe('MISS');
      expect(await xCache(proxy, other)).not.toBe('MISS');
    } finally {
      await proxy.close();
    }
  });
});
