/**
 * Freshness classes over time: a new block, a reorg, a pending tx being mined, the mempool
 * TTL and its If-None-Match revalidation, tx/multiple composition, single-flight, and input
 * the proxy rejects before any upstream request.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, loadRecordings, type FakeUpstream } from '../../testkit/index.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw, getLiteralPath, pathOf } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';
import { ROUTES } from '../../src/routes/route-table.js';

const P = RECORDED.principal;
const TX = RECORDED.confirmedTxId;

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

const start = async (overrides: Record<string, unknown> = {}, now?: () => number) => {
  proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides, now });
  return proxy;
};

describe('chain tip', () => {
  it('refetches tip entries after a new block, and keeps serving final entries from cache', async () => {
    const p = await start();
    const tipPath = `/extended/v1/address/${P}/transactions`;
    const finalPath = '/extended/v2/blocks/1';
    await fetchRaw(p.url + tipPath);
    await fetchRaw(p.url + finalPath);
    expect((await fetchRaw(p.url + tipPath)).headers.get('x-cache')).toBe('HIT');

    upstream.advanceTip();
    await p.tracker.pollOnce();
    upstream.resetCounts();

    const after = await fetchRaw(p.url + tipPath);
    // Revalidated with If-None-Match; the principal's ETag moved with the tip, so a full answer.
    expect(after.headers.get('x-cache')).toBe('MISS');
    expect(upstream.count(tipPath)).toBe(1);
    expect(after.body.equals((await fetchRaw(upstream.url + tipPath)).body)).toBe(true);
    expect((await fetchRaw(p.url + finalPath)).headers.get('x-cache')).toBe('HIT');
    expect(await metricValue(p, 'stacks_proxy_chain_tip_height')).toBe(RECORDED.tipHeight + 1);
  });

  it('serves blocks/latest for the new tip after one poll', async () => {
    const p = await start();
    const before = JSON.parse((await fetchRaw(`${p.url}/extended/v2/blocks/latest`)).body.toString()) as { height: number };
    upstream.advanceTip(2);
    await p.tracker.pollOnce();
    const after = JSON.parse((await fetchRaw(`${p.url}/extended/v2/blocks/latest`)).body.toString()) as { height: number };
    expect(after.height).toBe(before.height + 2);
  });

  it('purges tip entries and final entries above the fork point on a reorg, keeps deeper final ones', async () => {
    // With no confirmations required every block is final: the reorg must still purge recent ones.
    const p = await start({ finality: { burnConfirmations: 0 } });
    const recent = `/extended/v2/blocks/${RECORDED.tipHeight - 1}`;
    const deep = '/extended/v2/blocks/1';
    const tipRoute = `/extended/v1/contract/${RECORDED.contractId}/events`;
    for (const path of [recent, deep, tipRoute]) await fetchRaw(p.url + path);
    expect((await fetchRaw(p.url + recent)).headers.get('x-cache-class')).toBe('final');

    upstream.reorg(3);
    await p.tracker.pollOnce();
    upstream.resetCounts();

    const recentAfter = await fetchRaw(p.url + recent);
    expect(recentAfter.headers.get('x-cache')).toBe('MISS');
    expect(recentAfter.body.equals((await fetchRaw(upstream.url + recent)).body)).toBe(true);
    expect((await fetchRaw(p.url + tipRoute)).headers.get('x-cache')).toBe('MISS');
    expect((await fetchRaw(p.url + deep)).headers.get('x-cache')).toBe('HIT');
    expect(await metricValue(p, 'stacks_proxy_reorgs_total')).toBe(1);
    // Counted at lookup: the recent final entry and the tip entry, once each.
    expect(await metricValue(p, 'stacks_proxy_reorg_purged_entries_total')).toBe(2);
  });

  it('serves a pending tx as confirmed right after the poll that sees its block', async () => {
    const p = await start();
    const id = upstream.addPendingTx();
    const path = `/extended/v1/tx/${id}`;
    const pending = await fetchRaw(p.url + path);
    expect(JSON.parse(pending.body.toString()).tx_status).toBe('pending');
    expect(pending.headers.get('x-cache-class')).toBe('mempool');
    expect((await fetchRaw(p.url + path)).headers.get('x-cache')).toBe('HIT');

    upstream.confirmTx(id);
    await p.tracker.pollOnce();
    const confirmed = await fetchRaw(p.url + path);
    expect(JSON.parse(confirmed.body.toString()).tx_status).toBe('success');
    expect(confirmed.headers.get('x-cache-class')).toBe('tip');
  });
});

describe('mempool class', () => {
  it('revalidates an expired entry with If-None-Match: a 304 refreshes it without a body', async () => {
    let clock = Date.now();
    // The fee estimate's lag window off: this is about the mempool class as such.
    const p = await start({ cache: { ttl: { mempoolFeesMaxAgeMs: 0 } } }, () => clock);
    const path = '/extended/v2/mempool/fees';
    const first = await fetchRaw(p.url + path);
    expect((await fetchRaw(p.url + path)).headers.get('x-cache')).toBe('HIT');

    clock += 4_500; // past the 2 s mempool TTL and the 2 s stale-while-revalidate window
    upstream.resetCounts();
    const revalidated = await fetchRaw(p.url + path);
    expect(revalidated.headers.get('x-cache')).toBe('REVALIDATED');
    expect(revalidated.body.equals(first.body)).toBe(true);
    expect(upstream.count(path)).toBe(1);
    const sent = upstream.requests.find((r) => r.path === path);
    expect(sent?.headers['if-none-match']).toBe(first.headers.get('etag'));
    expect(await metricValue(p, 'stacks_proxy_revalidations_total', { result: 'not_modified' })).toBe(1);

    upstream.setMempoolChanged();
    clock += 4_500;
    const changed = await fetchRaw(p.url + path);
    expect(changed.headers.get('x-cache')).toBe('MISS');
    expect(changed.headers.get('etag')).toBe((await fetchRaw(upstream.url + path)).headers.get('etag'));
    expect(changed.headers.get('etag')).not.toBe(first.headers.get('etag'));
  });
});

describe('the mempool fee estimate may lag', () => {
  it('is served for mempoolFeesMaxAgeMs whatever the mempool and tip do, then asked again', async () => {
    let clock = Date.now();
    const p = await start({ cache: { ttl: { mempoolFeesMaxAgeMs: 5_000 } } }, () => clock);
    const path = '/extended/v2/mempool/fees';
    const first = await fetchRaw(p.url + path);
    expect(first.headers.get('x-cache')).toBe('MISS');

    // The mempool changes and a block comes: any other mempool entry would be asked again.
    upstream.setMempoolChanged();
    upstream.advanceTip();
    await p.tracker.pollOnce();
    clock += 4_999;
    upstream.resetCounts();
    const lagging = await fetchRaw(p.url + path);
    expect(lagging.headers.get('x-cache')).toBe('HIT');
    expect(lagging.body.equals(first.body)).toBe(true);
    expect(upstream.count(path)).toBe(0);

    // Past the window: an ordinary mempool entry from an older tip, asked again (the upstream's answer now).
    clock += 1;
    const asked = await fetchRaw(p.url + path);
    expect(asked.headers.get('x-cache')).not.toBe('HIT');
    expect(upstream.count(path)).toBe(1);
    expect(asked.body.equals((await fetchRaw(upstream.url + path)).body)).toBe(true);
  });
});

describe('stale-while-revalidate', () => {
  it('serves a just-expired mempool entry at once and refreshes it in the background, once', async () => {
    let clock = Date.now();
    const p = await start({}, () => clock);
    const path = '/extended/v1/tx/mempool/stats';
    const first = await fetchRaw(p.url + path);
    upstream.setMempoolChanged();
    clock += 2_500; // past the TTL, within the stale-while-revalidate window
    upstream.resetCounts();
    upstream.setDelay(300, /mempool\/stats/);

    const served = await Promise.all(Array.from({ length: 5 }, () => fetchRaw(p.url + path)));
    for (const response of served) {
      expect(response.headers.get('x-cache')).toBe('STALE');
      expect(response.body.equals(first.body)).toBe(true);
    }
    // Until the one background refresh lands, every request is still served stale (and joins it).
    const polled: string[] = [];
    let refreshed = served[0]!;
    await expect
      .poll(
        async () => {
          refreshed = await fetchRaw(p.url + path);
          polled.push(refreshed.headers.get('x-cache') ?? '');
          return polled.at(-1);
        },
        { timeout: 5_000, interval: 50 },
      )
      .toBe('HIT');
    const staleWhilePolling = polled.length - 1;
    expect(polled.slice(0, -1)).toEqual(Array(staleWhilePolling).fill('STALE'));
    expect(upstream.count(path)).toBe(1);
    upstream.setDelay(0);
    expect(refreshed.headers.get('etag')).toBe((await fetchRaw(upstream.url + path)).headers.get('etag'));
    expect(refreshed.headers.get('etag')).not.toBe(first.headers.get('etag'));
    expect(await metricValue(p, 'stacks_proxy_stale_served_total', { reason: 'revalidating' })).toBe(5 + staleWhilePolling);
  });

  it('does not serve mempool entries from an older tip while refreshing', async () => {
    const p = await start();
    const id = upstream.addPendingTx();
    await fetchRaw(`${p.url}/extended/v1/tx/${id}`);
    upstream.confirmTx(id);
    await p.tracker.pollOnce();
    const after = await fetchRaw(`${p.url}/extended/v1/tx/${id}`);
    // Mined, the tx has a new ETag: the revalidation gets the full answer.
    expect(after.headers.get('x-cache')).toBe('MISS');
    expect(JSON.parse(after.body.toString()).tx_status).toBe('success');
  });
});

describe('tx/multiple', () => {
  it('asks the upstream only for the ids it does not hold, and answers the upstream bytes', async () => {
    const p = await start();
    const pending = RECORDED.pendingTxId;
    const missing = RECORDED.unknownTxId;
    await fetchRaw(`${p.url}/extended/v1/tx/multiple?tx_id=${TX}`);
    upstream.resetCounts();

    const path = `/extended/v1/tx/multiple?tx_id=${missing},${TX},${pending}`;
    const composed = await fetchRaw(p.url + path);
    const sent = upstream.requests.filter((r) => r.path === '/extended/v1/tx/multiple');
    expect(sent).toHaveLength(1);
    expect(sent[0]?.url).not.toContain(TX);
    expect(sent[0]?.url).toContain(pending);
    expect(composed.body.toString()).toBe((await fetchRaw(upstream.url + path)).body.toString());
    expect(composed.headers.get('x-cache-class')).toBe('mempool');

    upstream.resetCounts();
    const again = await fetchRaw(`${p.url}/extended/v1/tx/multiple?tx_id=${pending}&tx_id=${TX}&tx_id=${missing}`);
    expect(again.headers.get('x-cache')).toBe('HIT');
    expect(upstream.count()).toBe(0);
  });
});

describe('single-flight', () => {
  it('sends one upstream request for many concurrent identical misses', async () => {
    const p = await start();
    const path = '/extended/v2/blocks/7';
    upstream.setDelay(200, /blocks\/7/);
    const responses = await Promise.all(Array.from({ length: 50 }, () => fetchRaw(p.url + path)));
    expect(new Set(responses.map((r) => r.status))).toEqual(new Set([200]));
    expect(upstream.count(path)).toBe(1);
    expect(await metricValue(p, 'stacks_proxy_singleflight_joined_total', { route: 'block' })).toBe(49);
  });
});

describe('input the upstream would reject', () => {
  const routePatterns = ROUTES.map((r) => new RegExp(`^${r.path.replace(/:[a-z_]+/g, '[^/]+')}/?$`));
  const rejected = loadRecordings().filter((r) => r.status === 400 && routePatterns.some((re) => re.test(pathOf(r.path))));

  it(`answers all ${rejected.length} recorded 400s itself, byte for byte, with no upstream request`, async () => {
    const p = await start();
    upstream.resetCounts();
    for (const recording of rejected) {
      const response = await fetchRaw(p.url + recording.path);
      expect(response.status, recording.path).toBe(400);
      expect(response.body.toString(), recording.path).toBe(recording.body);
    }
    expect(upstream.count()).toBe(0);
  });

  it('redirects a tx id without 0x like the upstream, keeping the query', async () => {
    const p = await start();
    upstream.resetCounts();
    const bare = TX.slice(2);
    const response = await fetchRaw(`${p.url}/extended/v1/tx/${bare}?event_limit=5`);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe(`/extended/v1/tx/${TX}?event_limit=5`);
    expect(upstream.count()).toBe(0);
  });

  it('never turns a path parameter into another upstream path', async () => {
    const p = await start();
    upstream.resetCounts();
    const tricky = ['..%2F..%2Fv2%2Finfo', 'a%3Fb%23c', '%E2%80%AE%F0%9F%98%80', '%2E%2E%2Fx'];
    for (const segment of tricky) {
      await getLiteralPath(p.url, `/extended/v1/contract/${segment}/events`);
    }
    const paths = upstream.requests.map((r) => r.path);
    expect(paths).toHaveLength(tricky.length);
    for (const path of paths) expect(path).toMatch(/^\/extended\/v1\/contract\/[^/]+\/events$/);

    // A whole-segment "." or ".." (also encoded) is no parameter but a dot segment, resolved once
    // before routing (a URL normaliser on the way would resolve it too): what reaches the upstream
    // is the resolved path, never the dot segment.
    for (const [segment, decided] of [
      ['..', '/extended/v1/events'],
      ['%2E%2E', '/extended/v1/events'],
      ['.', '/extended/v1/contract/events'],
    ]) {
      upstream.resetCounts();
      await getLiteralPath(p.url, `/extended/v1/contract/${segment}/events`);
      expect(
        upstream.requests.map((r) => r.path),
        segment,
      ).toEqual([decided]);
    }
  });

  it('answers other methods on a read route with 405', async () => {
    const p = await start();
    const response = await fetchRaw(`${p.url}/extended/v2/mempool/fees`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect(JSON.parse(response.body.toString())).toMatchObject({ statusCode: 405, error: 'Method Not Allowed' });
  });
});

describe('promotion to final', () => {
  it('turns a confirmed tx into a final entry once enough burn blocks are on top (after a 304)', async () => {
    const p = await start();
    const id = upstream.addPendingTx();
    upstream.confirmTx(id);
    await p.tracker.pollOnce();
    const path = `/extended/v1/tx/${id}`;
    expect((await fetchRaw(p.url + path)).headers.get('x-cache-class')).toBe('tip');

    upstream.advanceTip(6); // six more burn blocks: the tx's block is now final
    await p.tracker.pollOnce();
    const promoted = await fetchRaw(p.url + path);
    expect(promoted.headers.get('x-cache')).toBe('REVALIDATED');
    expect(promoted.headers.get('x-cache-class')).toBe('final');

    upstream.advanceTip();
    await p.tracker.pollOnce();
    upstream.resetCounts();
    expect((await fetchRaw(p.url + path)).headers.get('x-cache')).toBe('HIT');
    expect(upstream.count(path)).toBe(0);
  });
});
