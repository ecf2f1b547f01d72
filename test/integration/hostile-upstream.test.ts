/**
 * Answers from a hostile upstream, through real HTTP: a handler's JSON 500 for one input is
 * that request's answer and leaves the upstream's health alone; a 429 sends reads elsewhere
 * and keeps the limited upstream alone for its Retry-After; an unsolicited 304, a body over
 * the cap, a stalled body and a wrong content type are failures, retried within the budget of
 * two sends per client request and never stored; the operator's credentials go with every
 * upstream request. Time that matters is the injected clock; assertions are on answers,
 * upstream request counts and metrics.
 */
import { describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

/** Short timeouts so that stalls and cool-downs resolve quickly. */
const FAST = { headersTimeoutMs: 300, bodyTimeoutMs: 300, requestDeadlineMs: 2_000, retryBackoffMs: 5, cooldownMs: 200 };

const { defer, fakeUpstream } = useCleanups();

async function proxyFor(upstreams: FakeUpstream[], options: { upstream?: Record<string, unknown>; now?: () => number } = {}) {
  const proxy = await startTestProxy({
    upstreamUrls: upstreams.map((u) => u.url),
    now: options.now,
    overrides: { upstream: { ...FAST, ...options.upstream } },
  });
  defer(() => proxy.close());
  return proxy;
}

/** An injected clock that tests move by hand. */
function manualClock() {
  let now = Date.now();
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

const BLOCK = '/extended/v2/blocks/3';
const OTHER_BLOCK = '/extended/v2/blocks/4';
const FEES = '/extended/v2/mempool/fees';
const HANDLER_500 = JSON.stringify({ statusCode: 500, error: 'Internal Server Error', message: 'negative height is not a block' });

describe('the breaker judges the upstream, not the request', () => {
  it('passes a JSON 500 for one input on, once per request, without opening the only breaker or touching /ready', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream], { upstream: { failureThreshold: 3 } });
    upstream.setFailing({ status: 500, body: HANDLER_500 }, /blocks\/3$/);
    for (let i = 0; i < 10; i++) {
      const answer = await fetchRaw(proxy.url + BLOCK);
      expect(answer.status).toBe(500);
      expect(answer.headers.get('x-cache')).toBe('BYPASS');
      expect(answer.body.toString()).toBe(HANDLER_500);
    }
    expect(upstream.count(BLOCK)).toBe(10); // one upstream request per client request: no retry
    expect(await metricValue(proxy, 'stacks_proxy_upstream_breaker_open', { upstream: upstream.url })).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { upstream: upstream.url })).toBe(0);

    const normal = await fetchRaw(proxy.url + OTHER_BLOCK);
    expect(normal.status).toBe(200);
    expect(normal.headers.get('x-cache')).toBe('MISS');
    expect((await fetchRaw(`${proxy.url}/ready`)).status).toBe(200);
  });

  it('passes a JSON 400 for one input on uncached and does not retry it', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    const refusal = JSON.stringify({ statusCode: 400, error: 'Bad Request', message: 'no such block' });
    upstream.setFailing({ status: 400, body: refusal }, /blocks\/3$/);
    for (let i = 0; i < 2; i++) {
      const answer = await fetchRaw(proxy.url + BLOCK);
      expect(answer.status).toBe(400);
      expect(answer.headers.get('x-cache')).toBe('BYPASS');
      expect(answer.body.toString()).toBe(refusal);
    }
    expect(upstream.count(BLOCK)).toBe(2);
  });

  it('treats a 500 that is not in the upstream error shape (an HTML page) as a failure: retried, and it counts', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    upstream.failNext(1, { status: 500, body: '<html>oops</html>', headers: { 'content-type': 'text/html' } }, /blocks\/3$/);
    const answer = await fetchRaw(proxy.url + BLOCK);
    expect(answer.status).toBe(200);
    expect(upstream.count(BLOCK)).toBe(2);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { upstream: upstream.url, kind: '5xx' })).toBe(1);
  });
});

describe('the retry budget: at most two upstream requests per client request', () => {
  it('sends a failing read twice across three upstreams, not three times', async () => {
    const upstreams = [await fakeUpstream(), await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor(upstreams); // the default maxAttempts
    for (const u of upstreams) u.setFailing('reset', /blocks\/3$/);
    expect((await fetchRaw(proxy.url + BLOCK)).status).toBe(502);
    expect(upstreams.map((u) => u.count(BLOCK))).toEqual([1, 1, 0]); // the retry went to another upstream
  });

  it('counts a revalidation as the same request: a failing one is sent twice at most', async () => {
    const clock = manualClock();
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream], { now: clock.now });
    expect((await fetchRaw(proxy.url + FEES)).status).toBe(200);
    clock.advance(60_000);
    upstream.resetCounts();
    upstream.setFailing({ status: 503 }, /fees/);
    const stale = await fetchRaw(proxy.url + FEES);
    expect(stale.headers.get('x-cache')).toBe('STALE');
    expect(upstream.count(FEES)).toBe(2);
    expect(upstream.requests.filter((r) => r.path === FEES).every((r) => r.headers['if-none-match'] !== undefined)).toBe(true);
  });
});

describe('rate-limited upstreams', () => {
  it('tries the next upstream on a 429 and leaves the limited one alone, reads and tip polls, for its Retry-After', async () => {
    const clock = manualClock();
    const [limited, other] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([limited, other], { now: clock.now });
    limited.setFailing({ status: 429, headers: { 'retry-after': '7' } });
    limited.resetCounts();

    const first = await fetchRaw(proxy.url + BLOCK);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-cache')).toBe('MISS');
    expect([limited.count(BLOCK), other.count(BLOCK)]).toEqual([1, 1]);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { upstream: limited.url, kind: 'rate_limited' })).toBe(1);

    clock.advance(6_000);
    expect((await fetchRaw(proxy.url + OTHER_BLOCK)).status).toBe(200);
    await proxy.tracker.pollOnce();
    expect(limited.count()).toBe(1); // not one read nor poll inside its Retry-After
    expect(other.count(OTHER_BLOCK)).toBe(1);

    clock.advance(2_000);
    limited.setFailing(null);
    expect((await fetchRaw(`${proxy.url}/extended/v2/blocks/5`)).status).toBe(200);
    expect(limited.count('/extended/v2/blocks/5')).toBe(1); // the first in order again
  });

  it('takes a 429 to the tip poll as a limit for reads too', async () => {
    const clock = manualClock();
    const [limited, other] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([limited, other], { now: clock.now });
    limited.failNext(1, { status: 429, headers: { 'retry-after': '30' } }, /\/extended$/);
    await proxy.tracker.pollOnce();
    limited.resetCounts();
    expect((await fetchRaw(proxy.url + BLOCK)).status).toBe(200);
    expect([limited.count(), other.count(BLOCK)]).toEqual([0, 1]);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { upstream: limited.url, kind: 'rate_limited' })).toBe(1);
  });

  it('with every upstream limiting: the stale copy where one exists, else 503 with Retry-After in the upstream shape', async () => {
    const clock = manualClock();
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream], { now: clock.now });
    const cached = await fetchRaw(proxy.url + FEES);
    clock.advance(60_000); // long expired, within the stale-if-error window
    upstream.setFailing({ status: 429, headers: { 'retry-after': '7' } });
    upstream.resetCounts();

    const stale = await fetchRaw(proxy.url + FEES);
    expect(stale.status).toBe(200);
    expect(stale.headers.get('x-cache')).toBe('STALE');
    expect(stale.body.equals(cached.body)).toBe(true);
    expect(upstream.count()).toBe(1); // not retried on the upstream that limits
    expect(await metricValue(proxy, 'stacks_proxy_stale_served_total', { route: 'mempool_fees', reason: 'rate_limited' })).toBe(1);

    const refused = await fetchRaw(proxy.url + BLOCK);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('7');
    expect(refused.body.toString()).toBe(
      JSON.stringify({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'The upstream API is rate limiting this proxy; retry after the time in Retry-After',
      }),
    );
    expect(upstream.count()).toBe(1); // inside its Retry-After: not sent at all
    clock.advance(3_000);
    expect((await fetchRaw(proxy.url + BLOCK)).headers.get('retry-after')).toBe('4');
    expect((await fetchRaw(`${proxy.url}/ready`)).status).toBe(503);
  });

  it.each([
    ['caps a long Retry-After', '3600', '60'],
    ['uses the default without one', undefined, '5'],
    ['reads an HTTP date', 'HTTP-DATE+20', '20'],
  ])('%s', async (_name, retryAfter, expected) => {
    // A whole second, so that an HTTP date (second precision) is exact against the clock.
    const clock = { now: Math.floor(Date.now() / 1000) * 1000 };
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream], { now: () => clock.now });
    const value = retryAfter === 'HTTP-DATE+20' ? new Date(clock.now + 20_000).toUTCString() : retryAfter;
    upstream.failNext(1, { status: 429, headers: value === undefined ? {} : { 'retry-after': value } }, /blocks\/3$/);
    const refused = await fetchRaw(proxy.url + BLOCK);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe(expected);
  });
});

describe('answers that are not answers', () => {
  const tooBig = JSON.stringify({ filler: 'x'.repeat(5_000) });

  it.each([
    ['an unsolicited 304', { status: 304 }, 'invalid'],
    ['a body over the cap', { status: 200, body: tooBig }, 'invalid'],
    ['a 200 that is not JSON', { status: 200, body: '<html>ok</html>', headers: { 'content-type': 'text/html' } }, 'invalid'],
    ['a 404 that is not JSON', { status: 404, body: '<html>missing</html>', headers: { 'content-type': 'text/html' } }, 'invalid'],
    ['a stalled body', 'stall-body' as const, 'timeout'],
  ])('retries %s on the next upstream and stores only the real answer', async (_name, how, kind) => {
    const [hostile, honest] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([hostile, honest], { upstream: { maxBodyBytes: 4_000 } });
    hostile.setFailing(how, /blocks\/3$/);
    const real = await fetchRaw(honest.url + BLOCK);
    honest.resetCounts();

    const answer = await fetchRaw(proxy.url + BLOCK);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-cache')).toBe('MISS');
    expect(answer.body.equals(real.body)).toBe(true);
    expect([hostile.count(BLOCK), honest.count(BLOCK)]).toEqual([1, 1]);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { upstream: hostile.url, kind })).toBe(1);
    const again = await fetchRaw(proxy.url + BLOCK);
    expect(again.headers.get('x-cache')).toBe('HIT');
    expect(again.body.equals(real.body)).toBe(true);
  });

  it('never passes an unsolicited 304 on, nor stores anything, when it is all the upstream sends', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    upstream.setFailing({ status: 304 }, /blocks\/3$/);
    const failed = await fetchRaw(proxy.url + BLOCK);
    expect(failed.status).toBe(502);
    expect(upstream.count(BLOCK)).toBe(2);
    upstream.setFailing(null);
    const healed = await fetchRaw(proxy.url + BLOCK);
    expect(healed.status).toBe(200);
    expect(healed.headers.get('x-cache')).toBe('MISS');
  });
});

describe("the operator's credentials", () => {
  it('sends the API key as x-api-key and the configured headers on every read and tip poll, per-URL headers winning', async () => {
    const [first, second] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([first, second], {
      upstream: { apiKey: 'operator-key', headers: { 'X-Tenant': 'dapp-1' }, headersByUrl: { [second.url]: { 'x-api-key': 'second-key' } } },
    });
    first.setFailing('reset', /blocks\/3$/); // the read goes to both upstreams
    await fetchRaw(proxy.url + BLOCK);
    await proxy.tracker.pollOnce();
    const sent = (u: FakeUpstream) => u.requests.map((r) => [r.path, r.headers['x-api-key'], r.headers['x-tenant']]);
    expect(first.requests.length).toBeGreaterThanOrEqual(3);
    expect(new Set(sent(first).map(([, key, tenant]) => `${key} ${tenant}`))).toEqual(new Set(['operator-key dapp-1']));
    expect(new Set(sent(second).map(([, key, tenant]) => `${key} ${tenant}`))).toEqual(new Set(['second-key dapp-1']));
    expect(sent(first).map(([path]) => path)).toEqual(expect.arrayContaining(['/extended', BLOCK]));
    expect(sent(second).map(([path]) => path)).toEqual(expect.arrayContaining(['/extended', BLOCK]));
  });
});
