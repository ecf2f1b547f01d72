/**
 * The tip safety revalidation behind the answer (issue 18): a `tip` entry past
 * `cache.ttl.tipSafetyMs`, validated at the tip the proxy believes now, is served at once while
 * one revalidation runs behind it; what must still wait for the upstream still does. The fake
 * upstream holds its answers until the test releases them, so "nobody waited" is shown by
 * answers that arrived while the one upstream request was still unanswered (events, not timings).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, type FakeUpstream, type RecordedRequest } from '../../testkit/index.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

const LATEST = '/extended/v2/blocks/latest';
const TIP_SAFETY_MS = 60_000;
const DEADLINE_MS = 15_000; // upstream.requestDeadlineMs: the window past tipSafetyMs

let upstream: FakeUpstream;
let proxy: ProxyServer | undefined;
let clock = Date.now();

beforeEach(async () => {
  upstream = await startFakeUpstream();
  clock = Date.now();
});
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
  await upstream.close();
});

const start = async (overrides: Record<string, unknown> = {}) => {
  proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides, now: () => clock });
  return proxy;
};

const revalidationOf =
  (path: string) =>
  (r: RecordedRequest): boolean =>
    r.path === path && r.headers['if-none-match'] !== undefined;

const background = (p: ProxyServer, outcome: string) => metricValue(p, 'stacks_proxy_background_refreshes_total', { outcome });

describe('a tip entry past tipSafetyMs at the believed tip', () => {
  it('is served at once to concurrent clients while exactly one If-None-Match revalidation runs behind them', async () => {
    const p = await start();
    const first = await fetchRaw(p.url + LATEST);
    expect(first.headers.get('x-cache-class')).toBe('tip');

    clock += TIP_SAFETY_MS + 1;
    upstream.resetCounts();
    const held = upstream.hold(revalidationOf(LATEST));
    // Every answer arrives while the one revalidation is held unanswered: nobody waited for it.
    const served = await Promise.all(Array.from({ length: 20 }, () => fetchRaw(p.url + LATEST)));
    await expect.poll(() => held.waiting, { timeout: 5_000 }).toBe(1);
    for (const response of served) {
      expect(response.headers.get('x-cache')).toBe('HIT');
      expect(response.body.equals(first.body)).toBe(true);
      expect(Number(response.headers.get('age'))).toBeGreaterThanOrEqual(TIP_SAFETY_MS / 1000);
    }
    expect(upstream.count(LATEST)).toBe(1);
    expect(upstream.requests[0]?.headers['if-none-match']).toBe(first.headers.get('etag'));

    held.release();
    await expect.poll(() => background(p, 'confirmed'), { timeout: 5_000 }).toBe(1);
    expect(await metricValue(p, 'stacks_proxy_revalidations_total', { result: 'not_modified' })).toBe(1);
    // Confirmed: fresh again, validated when the revalidation was asked.
    const after = await fetchRaw(p.url + LATEST);
    expect(after.headers.get('x-cache')).toBe('HIT');
    expect(after.headers.get('age')).toBe('0');
    expect(upstream.count(LATEST)).toBe(1);
    expect(await metricValue(p, 'stacks_proxy_http_requests_total', { route: 'block', cache: 'REVALIDATED' })).toBe(0);
  });

  it('is replaced by a 200 with a new body (a block the tip poll has not seen yet)', async () => {
    const p = await start();
    const first = await fetchRaw(p.url + LATEST);
    upstream.advanceTip(); // the upstream moves on; the proxy polls no tip in this test

    clock += TIP_SAFETY_MS + 1;
    const held = upstream.hold(revalidationOf(LATEST));
    const served = await fetchRaw(p.url + LATEST);
    expect(served.headers.get('x-cache')).toBe('HIT');
    expect(served.body.equals(first.body)).toBe(true);
    // The answer may reach the client before the request behind it reaches the fake.
    await expect.poll(() => held.waiting, { timeout: 5_000 }).toBe(1);

    held.release();
    await expect.poll(() => background(p, 'replaced'), { timeout: 5_000 }).toBe(1);
    const replaced = await fetchRaw(p.url + LATEST);
    expect(replaced.headers.get('x-cache')).toBe('HIT');
    expect(replaced.body.equals((await fetchRaw(upstream.url + LATEST)).body)).toBe(true);
    expect(replaced.body.equals(first.body)).toBe(false);
  });

  it('stays as it was when the revalidation fails (counted), and the next request tries again', async () => {
    const p = await start();
    const first = await fetchRaw(p.url + LATEST);
    clock += TIP_SAFETY_MS + 1;
    upstream.resetCounts();
    upstream.setFailing({ status: 503 }, /blocks\/latest/);

    expect((await fetchRaw(p.url + LATEST)).headers.get('x-cache')).toBe('HIT');
    await expect.poll(() => background(p, 'failed'), { timeout: 5_000 }).toBe(1);
    upstream.setFailing(null);
    const sentWhileFailing = upstream.count(LATEST);
    expect(sentWhileFailing).toBeGreaterThanOrEqual(1);

    const again = await fetchRaw(p.url + LATEST);
    expect(again.headers.get('x-cache')).toBe('HIT');
    expect(again.body.equals(first.body)).toBe(true);
    await expect.poll(() => background(p, 'confirmed'), { timeout: 5_000 }).toBe(1);
    expect(upstream.count(LATEST)).toBe(sentWhileFailing + 1);
  });

  it('skips a revalidation at the cap (served all the same), and the next request starts it', async () => {
    // upstream.maxConcurrent 4: at most one refresh behind answers at once.
    const p = await start({ upstream: { maxConcurrent: 4 } });
    const history = `/extended/v1/address/${RECORDED.principal}/transactions`;
    await fetchRaw(p.url + LATEST);
    const historyFirst = await fetchRaw(p.url + history);
    expect(historyFirst.headers.get('x-cache-class')).toBe('tip');
    clock += TIP_SAFETY_MS + 1;
    upstream.resetCounts();
    const held = upstream.hold(revalidationOf(LATEST));

    expect((await fetchRaw(p.url + LATEST)).headers.get('x-cache')).toBe('HIT');
    await expect.poll(() => held.waiting, { timeout: 5_000 }).toBe(1);
    const skipped = await fetchRaw(p.url + history);
    expect(skipped.headers.get('x-cache')).toBe('HIT');
    expect(skipped.body.equals(historyFirst.body)).toBe(true);
    expect(await background(p, 'skipped')).toBe(1);
    expect(upstream.count(history)).toBe(0);

    held.release();
    await expect.poll(() => background(p, 'confirmed'), { timeout: 5_000 }).toBe(1);
    expect((await fetchRaw(p.url + history)).headers.get('x-cache')).toBe('HIT');
    await expect.poll(() => background(p, 'confirmed'), { timeout: 5_000 }).toBe(2);
    expect(upstream.count(revalidationOf(history))).toBe(1);
  });
});

describe('what still waits for the upstream', () => {
  it('an entry from an older tip', async () => {
    const p = await start();
    const first = await fetchRaw(p.url + LATEST);
    upstream.advanceTip();
    await p.tracker.pollOnce();
    clock += TIP_SAFETY_MS + 1;
    const held = upstream.hold(revalidationOf(LATEST));
    let settled = false;
    const answer = fetchRaw(p.url + LATEST).finally(() => (settled = true));
    await expect.poll(() => held.waiting, { timeout: 5_000 }).toBe(1);
    expect(settled).toBe(false);
    held.release();
    const after = await answer;
    // The answer is the upstream's new one: it could only be written once the upstream answered.
    expect(after.headers.get('x-cache')).toBe('MISS');
    expect(after.body.equals(first.body)).toBe(false);
    expect(after.body.equals((await fetchRaw(upstream.url + LATEST)).body)).toBe(true);
  });

  it('an entry past tipSafetyMs by more than one upstream request may take', async () => {
    const p = await start();
    await fetchRaw(p.url + LATEST);
    clock += TIP_SAFETY_MS + DEADLINE_MS;
    const held = upstream.hold(revalidationOf(LATEST));
    let settled = false;
    const answer = fetchRaw(p.url + LATEST).finally(() => (settled = true));
    await expect.poll(() => held.waiting, { timeout: 5_000 }).toBe(1);
    expect(settled).toBe(false);
    held.release();
    expect((await answer).headers.get('x-cache')).toBe('REVALIDATED');
    expect(await background(p, 'confirmed')).toBe(0);
  });

  it('a mempool entry past its TTL and the stale-while-revalidate window', async () => {
    const p = await start();
    const path = '/extended/v2/mempool/fees';
    await fetchRaw(p.url + path);
    clock += TIP_SAFETY_MS + 1;
    const held = upstream.hold(revalidationOf(path));
    let settled = false;
    const answer = fetchRaw(p.url + path).finally(() => (settled = true));
    await expect.poll(() => held.waiting, { timeout: 5_000 }).toBe(1);
    expect(settled).toBe(false);
    held.release();
    expect((await answer).headers.get('x-cache')).toBe('REVALIDATED');
  });
});
