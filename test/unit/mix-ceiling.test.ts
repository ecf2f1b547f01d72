/**
 * The ceiling of a mix (testkit/surface-upstream/ceiling.ts): a read is servable when the
 * upstream's answer at its moment equals the upstream's answer at the previous request of the
 * same method, URL and body, by any client. Pure: exchanges and an answer lookup.
 */
import { describe, expect, it } from 'vitest';
import { ceilingOf, type Exchange } from '../../testkit/surface-upstream/index.js';

const ex = (tSend: number, url: string, extra: Partial<Exchange> = {}): Exchange => ({
  actor: 'wallet',
  method: 'GET',
  url,
  family: 'f',
  tSend,
  tRecv: tSend + 1,
  status: 200,
  answer: '',
  ...extra,
});

/** The upstream's answer per URL over time: `[from, answer]` steps. */
const timeline =
  (steps: Record<string, Array<[number, string]>>) =>
  (e: Exchange, time: number): string | undefined => {
    let current: string | undefined;
    for (const [from, answer] of steps[`${e.url}${e.body ?? ''}`] ?? []) if (from <= time) current = answer;
    return current;
  };

describe('ceilingOf', () => {
  it('counts the first request of a key as not servable and a repeat as servable only when the upstream answer did not change', () => {
    const lookup = timeline({
      '/a': [
        [0, 'a1'],
        [25, 'a2'],
      ],
      '/b': [[0, 'b1']],
    });
    const exchanges = [ex(10, '/a'), ex(20, '/a'), ex(30, '/a'), ex(40, '/a'), ex(15, '/b'), ex(35, '/b')];
    const c = ceilingOf(exchanges, lookup);
    expect(c.reads).toBe(6);
    // /a: 10 first (no), 20 same a1 (yes), 30 a2 differs from a1 (no), 40 a2 again (yes); /b: 15 first, 35 same.
    expect(c.servable).toBe(3);
    expect([...c.servableAt.entries()].sort((x, y) => x[0] - y[0]).map(([, s]) => s)).toEqual([false, true, false, true, false, true]);
  });

  it('compares with the previous request of any client, by send time, not list order', () => {
    const lookup = timeline({
      '/a': [
        [0, 'a1'],
        [25, 'a2'],
      ],
    });
    // Listed out of order (answers arrive out of order): the one sent at 30 follows the one sent at 10.
    const c = ceilingOf([ex(30, '/a', { actor: 'explorer' }), ex(10, '/a', { actor: 'wallet' }), ex(31, '/a', { actor: 'dapp' })], lookup);
    expect(c.servableAt.get(0)).toBe(false);
    expect(c.servableAt.get(1)).toBe(false);
    expect(c.servableAt.get(2)).toBe(true);
    expect(c.byActor).toEqual({ wallet: { reads: 1, servable: 0 }, explorer: { reads: 1, servable: 0 }, dapp: { reads: 1, servable: 1 } });
  });

  it('keys POST reads by body too, and leaves out broadcasts and failed exchanges', () => {
    const lookup = timeline({ '/call{"sender":"A"}': [[0, 'x']], '/call{"sender":"B"}': [[0, 'x']], '/v2/transactions{}': [[0, 't']] });
    const post = (t: number, body: string, extra: Partial<Exchange> = {}) => ex(t, '/call', { method: 'POST', body, family: 'call_read', ...extra });
    const c = ceilingOf(
      [
        post(1, '{"sender":"A"}'),
        post(2, '{"sender":"B"}'),
        post(3, '{"sender":"A"}'),
        post(4, '{"sender":"A"}', { status: 0 }),
        ex(5, '/v2/transactions', { method: 'POST', body: '{}', family: 'broadcast' }),
        ex(6, '/v2/transactions', { method: 'POST', body: '{}', family: 'broadcast' }),
      ],
      lookup,
    );
    expect(c.reads).toBe(3);
    expect(c.servable).toBe(1);
    expect(c.byFamily).toEqual({ call_read: { reads: 3, servable: 1 } });
  });

  it('never counts a read servable when either answer is unknown', () => {
    const lookup = timeline({ '/a': [[20, 'a1']] });
    const c = ceilingOf([ex(10, '/a'), ex(30, '/a'), ex(40, '/a')], lookup);
    // 10: unknown; 30: previous unknown; 40: a1 = a1.
    expect(c.servable).toBe(1);
    expect(c.servableAt.get(1)).toBe(false);
  });
});

describe('ownRequestsByPurpose', () => {
  it('sums the own-requests counter by purpose, and says when the proxy does not have it', async () => {
    const { ownRequestsByPurpose } = await import('../../bench/lib/own-requests.js');
    const page = [
      '# HELP stacks_proxy_own_upstream_requests_total x',
      '# TYPE stacks_proxy_own_upstream_requests_total counter',
      'stacks_proxy_own_upstream_requests_total{purpose="tip_poll",upstream="0"} 74',
      'stacks_proxy_own_upstream_requests_total{purpose="tip_poll",upstream="1"} 2',
      'stacks_proxy_own_upstream_requests_total{purpose="contract_lookup"} 3',
      'stacks_proxy_requests_total{route="x"} 9',
    ].join('\n');
    expect(ownRequestsByPurpose(page)).toEqual({ tip_poll: 76, contract_lookup: 3 });
    expect(ownRequestsByPurpose('stacks_proxy_requests_total{route="x"} 9\n')).toBeUndefined();
  });
});

describe('ownRequests', () => {
  it("counts as the proxy's own the upstream requests beyond one per client request not served from cache, page size aside", async () => {
    const { ownRequests } = await import('../../bench/lib/own-requests.js');
    const clients = [
      { method: 'GET', url: '/extended/v2/addresses/A/transactions?limit=20' },
      { method: 'GET', url: '/extended/v1/tx/mempool?address=A&limit=50', xCache: 'MISS' },
      { method: 'GET', url: '/extended/v1/tx/mempool?address=A&limit=50', xCache: 'HIT' },
      { method: 'GET', url: '/extended/v2/blocks/7', xCache: 'REVALIDATED' },
    ];
    const upstream = [
      // The proxy dropped the default page size: still the client's.
      { method: 'GET', url: '/extended/v2/addresses/A/transactions', family: 'address_transactions_v2' },
      { method: 'GET', url: '/extended/v1/tx/mempool?limit=50&address=A', family: 'mempool' },
      // The watcher's page: no client asked the global list.
      { method: 'GET', url: '/extended/v1/tx/mempool?limit=50', family: 'mempool' },
      { method: 'GET', url: '/extended/v2/blocks/7', family: 'block' },
      // A second read of block 7 (the learner's): one client request explains one.
      { method: 'GET', url: '/extended/v2/blocks/7', family: 'block' },
      { method: 'GET', url: '/extended', family: 'status' },
    ];
    expect(ownRequests(clients, upstream)).toEqual({ own: 3, ownByFamily: { mempool: 1, block: 1, status: 1 }, onClientUrls: 1 });
  });
});
