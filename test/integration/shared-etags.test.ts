/**
 * One upstream ETag per resource: the upstream computes the address routes' ETags from the
 * principal alone (never the query), so a 304 for one page of a principal's history confirms its
 * other pages and the v2 route, and a 304 for /stx confirms /balances. Through real HTTP, with a
 * fake upstream whose principal ETags move only with that principal's activity, as the
 * upstream's do, counting what it is asked.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

/** The recorded pending tx's sender: the fake's new pending txs are sent from it too. */
const P = RECORDED.principal;
const PAGE_1 = `/extended/v1/address/${P}/transactions`;
const PAGE_2 = `/extended/v1/address/${P}/transactions?limit=5&offset=5`;
const V2 = `/extended/v2/addresses/${P}/transactions`;
const STX = `/extended/v1/address/${P}/stx`;
const BALANCES = `/extended/v1/address/${P}/balances`;

let upstream: FakeUpstream;
let proxy: ProxyServer | undefined;
let clock = Date.now();

beforeEach(async () => {
  upstream = await startFakeUpstream({ principalEtags: 'exact' });
  clock = Date.now();
  proxy = await startTestProxy({ upstreamUrls: [upstream.url], now: () => clock });
});
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
  await upstream.close();
});

const proxyUrl = (path: string) => `${proxy?.url ?? ''}${path}`;
const asked = (path: string) => upstream.count((r) => r.url === path);

/** The proxy's answer, checked byte for byte against what the upstream answers now. */
async function fetchChecked(path: string) {
  const answer = await fetchRaw(proxyUrl(path));
  const direct = await fetchRaw(upstream.url + path);
  expect(answer.status).toBe(direct.status);
  expect(answer.body.equals(direct.body)).toBe(true);
  return answer;
}

async function newBlock(mine?: string) {
  if (mine === undefined) upstream.advanceTip();
  else upstream.confirmTx(mine);
  await proxy?.tracker.pollOnce();
  clock += 100;
}

describe('one ETag per principal', () => {
  it('a 304 for one page of a history confirms its other pages and the v2 route, with no request of their own', async () => {
    for (const path of [PAGE_1, PAGE_2, V2]) await fetchRaw(proxyUrl(path));
    await newBlock(); // nothing involving P: its ETag stays
    upstream.resetCounts();

    const revalidated = await fetchRaw(proxyUrl(PAGE_1));
    expect(revalidated.headers.get('x-cache')).toBe('REVALIDATED');
    expect(asked(PAGE_1)).toBe(1);
    for (const path of [PAGE_2, V2]) {
      const answer = await fetchRaw(proxyUrl(path));
      expect(answer.headers.get('x-cache')).toBe('HIT');
      expect(asked(path)).toBe(0);
    }
    // Checked after the counts: the direct requests go to the same fake.
    for (const path of [PAGE_2, V2]) await fetchChecked(path);
    const confirmations = (route: string) => metricValue(proxy as ProxyServer, 'stacks_proxy_etag_scope_confirmations_total', { route });
    expect((await confirmations('address_transactions')) + (await confirmations('address_transactions_v2'))).toBe(2);
  });

  it('once the principal has a new transaction, every page asks the upstream again', async () => {
    for (const path of [PAGE_1, PAGE_2, V2]) await fetchRaw(proxyUrl(path));
    await newBlock(upstream.addPendingTx()); // mines a transaction P sent: its ETag moves
    upstream.resetCounts();

    const changed = await fetchRaw(proxyUrl(PAGE_1));
    expect(changed.headers.get('x-cache')).toBe('MISS');
    for (const path of [PAGE_2, V2]) {
      const answer = await fetchRaw(proxyUrl(path));
      expect(answer.headers.get('x-cache')).toBe('MISS');
      expect(asked(path)).toBe(1);
      expect(answer.headers.get('etag')).toBe(changed.headers.get('etag'));
    }
    for (const path of [PAGE_1, PAGE_2, V2]) await fetchChecked(path);
  });

  it('a confirmation from before the new tip confirms nothing under it', async () => {
    for (const path of [PAGE_1, PAGE_2]) await fetchRaw(proxyUrl(path));
    await newBlock();
    upstream.resetCounts();

    // PAGE_1's ETag was last confirmed under the old tip: PAGE_2 must ask for itself.
    const answer = await fetchRaw(proxyUrl(PAGE_2));
    expect(answer.headers.get('x-cache')).toBe('REVALIDATED');
    expect(asked(PAGE_2)).toBe(1);
    expect(asked(PAGE_1)).toBe(0);
  });

  it('a 304 for /stx confirms /balances, until the principal has a new pending transaction', async () => {
    for (const path of [STX, BALANCES]) await fetchRaw(proxyUrl(path));
    clock += 4_500; // past the 2 s mempool TTL and the 2 s stale-while-revalidate window
    upstream.resetCounts();

    expect((await fetchRaw(proxyUrl(STX))).headers.get('x-cache')).toBe('REVALIDATED');
    expect((await fetchRaw(proxyUrl(BALANCES))).headers.get('x-cache')).toBe('HIT');
    expect(asked(STX)).toBe(1);
    expect(asked(BALANCES)).toBe(0);

    upstream.addPendingTx(); // P sends a transaction: its principal_mempool ETag moves
    clock += 4_500;
    upstream.resetCounts();
    expect((await fetchRaw(proxyUrl(STX))).headers.get('x-cache')).toBe('MISS');
    expect((await fetchRaw(proxyUrl(BALANCES))).headers.get('x-cache')).toBe('MISS');
    expect(asked(BALANCES)).toBe(1);
    for (const path of [STX, BALANCES]) await fetchChecked(path);
  });
});
