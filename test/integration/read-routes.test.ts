/**
 * The 13 read endpoints through real HTTP: the proxy on a random port in front of the fake
 * upstream, with the memory store and with a real redis-server. Caching is proven by
 * counting requests at the upstream; byte identity by comparing with a direct upstream call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, startRedis, type FakeUpstream, type TestRedis } from '../../testkit/index.js';
import { startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw, pathOf } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

const P = RECORDED.principal;
const TX = RECORDED.confirmedTxId;

/** One request per endpoint, with the class the proxy must give it at the recorded chain state. */
const ENDPOINTS: Array<{ name: string; path: string; cls: string }> = [
  { name: '1 address stx balance', path: `/extended/v1/address/${P}/stx`, cls: 'mempool' },
  { name: '2 mempool fees', path: '/extended/v2/mempool/fees', cls: 'mempool' },
  { name: '3 address balances', path: `/extended/v1/address/${P}/balances`, cls: 'mempool' },
  { name: '4 transaction (confirmed, deep)', path: `/extended/v1/tx/${TX}`, cls: 'final' },
  { name: '4 transaction (pending)', path: `/extended/v1/tx/${RECORDED.pendingTxId}`, cls: 'mempool' },
  { name: '4 transaction (unknown: negative cache)', path: `/extended/v1/tx/${RECORDED.unknownTxId}`, cls: 'mempool' },
  { name: '5 block by height (deep)', path: '/extended/v2/blocks/1', cls: 'final' },
  { name: '5 block latest', path: '/extended/v2/blocks/latest', cls: 'tip' },
  { name: '5 block above the tip (negative cache)', path: '/extended/v2/blocks/999999', cls: 'tip' },
  { name: '6 tx/multiple', path: `/extended/v1/tx/multiple?tx_id=${TX}&tx_id=${RECORDED.unknownTxId}`, cls: 'mempool' },
  { name: '7 mempool stats', path: '/extended/v1/tx/mempool/stats', cls: 'mempool' },
  { name: '8 tx events by address', path: `/extended/v1/tx/events?address=${P}&limit=5`, cls: 'tip' },
  { name: '9 contract events', path: `/extended/v1/contract/${RECORDED.contractId}/events?limit=5`, cls: 'tip' },
  { name: '10 address transactions', path: `/extended/v1/address/${P}/transactions`, cls: 'tip' },
  { name: '11 address transactions v2', path: `/extended/v2/addresses/${P}/transactions?limit=5`, cls: 'tip' },
  { name: '12 block by burn height (deep)', path: `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`, cls: 'final' },
  { name: '12 burn height without block (negative)', path: `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithoutBlock}`, cls: 'tip' },
  {
    name: '13 tx with transfers (deep)',
    path: '/extended/v1/address/ST000000000000000000002AMW42H/0x66146a2549bb199c4960d58af1a9ed3022904896976cfa14bb05b4b5d3844d80/with_transfers',
    cls: 'final',
  },
];

describe.each([{ store: 'memory' as const }, { store: 'redis' as const }])('read routes with the $store store', ({ store }) => {
  let upstream: FakeUpstream;
  let proxy: ProxyServer;
  let redis: TestRedis | undefined;

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    if (store === 'redis') redis = await startRedis();
    proxy = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis?.url });
  });
  afterAll(async () => {
    await proxy?.close();
    await upstream?.close();
    await redis?.stop();
  });

  it.each(ENDPOINTS)('$name: miss then hit, one upstream request, upstream bytes, class $cls', async ({ path, cls }) => {
    const direct = await fetchRaw(upstream.url + path);
    upstream.resetCounts();

    const first = await fetchRaw(proxy.url + path);
    expect(first.status).toBe(direct.status);
    expect(first.body.equals(direct.body)).toBe(true);
    expect(first.headers.get('x-cache')).toBe('MISS');
    expect(first.headers.get('x-cache-class')).toBe(cls);
    expect(first.headers.get('content-type')).toBe(direct.headers.get('content-type'));

    const second = await fetchRaw(proxy.url + path);
    expect(second.status).toBe(direct.status);
    expect(second.body.equals(direct.body)).toBe(true);
    expect(second.headers.get('x-cache')).toBe('HIT');
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
    expect(upstream.count(pathOf(path))).toBe(1);
  });

  it('answers If-None-Match with 304 and no body, without asking the upstream', async () => {
    const path = `/extended/v1/tx/${TX}`;
    const first = await fetchRaw(proxy.url + path);
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^".+"$/);
    upstream.resetCounts();
    const revalidated = await fetchRaw(proxy.url + path, { headers: { 'if-none-match': etag as string } });
    expect(revalidated.status).toBe(304);
    expect(revalidated.body.length).toBe(0);
    expect(revalidated.headers.get('etag')).toBe(etag);
    expect(upstream.count()).toBe(0);
  });

  it('answers HEAD with the GET headers and no body', async () => {
    const path = '/extended/v2/blocks/2';
    const get = await fetchRaw(proxy.url + path);
    const head = await fetchRaw(proxy.url + path, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers.get('content-length')).toBe(String(get.body.length));
    expect(head.headers.get('etag')).toBe(get.headers.get('etag'));
  });

  it('gives final data an immutable Cache-Control and the rest must-revalidate', async () => {
    const final = await fetchRaw(`${proxy.url}/extended/v2/blocks/3`);
    expect(final.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const tip = await fetchRaw(`${proxy.url}/extended/v2/blocks/latest`);
    expect(tip.headers.get('cache-control')).toBe('public, no-cache, must-revalidate');
  });

  it('serves equal requests in any spelling from one entry', async () => {
    await fetchRaw(`${proxy.url}/extended/v1/address/${P}/transactions?limit=3&offset=1`);
    upstream.resetCounts();
    const spellings = [
      `/extended/v1/address/${P}/transactions?offset=1&limit=3`,
      `/extended/v1/address/${P}/transactions?offset=1&limit=3&unanchored=false&foo=bar`,
      `/extended/v1/address/${P}/transactions/?limit=3&offset=1`,
    ];
    for (const path of spellings) {
      const response = await fetchRaw(proxy.url + path);
      expect(response.headers.get('x-cache')).toBe('HIT');
    }
    expect(upstream.count()).toBe(0);
  });
});
