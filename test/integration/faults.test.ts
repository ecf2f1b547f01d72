/**
 * Fault injection through real processes and sockets: upstream errors, resets, hangs and
 * garbage; one of two upstreams down; all down; a lagging upstream; Redis killed and
 * restarted; a thousand concurrent misses on one and on two instances. Assertions are on
 * client results, upstream request counts and metrics, never on timings.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RECORDED, startRedis, type FakeUpstream, type TestRedis } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import { routeKey } from '../../src/cache/key.js';

/** Short timeouts so that hangs and cool-downs resolve quickly. */
const FAST = {
  upstream: { headersTimeoutMs: 300, bodyTimeoutMs: 300, requestDeadlineMs: 2_000, retryBackoffMs: 5, cooldownMs: 200 },
};

const { defer, fakeUpstream: upstreamFake } = useCleanups();

async function proxyFor(upstreams: FakeUpstream[], extra: { overrides?: Record<string, unknown>; redisUrl?: string; now?: () => number } = {}) {
  const proxy = await startTestProxy({
    upstreamUrls: upstreams.map((u) => u.url),
    redisUrl: extra.redisUrl,
    now: extra.now,
    overrides: { ...FAST, ...extra.overrides, upstream: { ...FAST.upstream, ...(extra.overrides?.upstream as object) } },
  });
  defer(() => proxy.close());
  return proxy;
}

const BLOCK = '/extended/v2/blocks/3';
const TX = `/extended/v1/tx/${RECORDED.confirmedTxId}`;

describe('a failing request is retried', () => {
  it.each([
    ['a 500 that is not in the upstream error shape', { status: 500, body: '<html>oops</html>', headers: { 'content-type': 'text/html' } }],
    ['a 503', { status: 503, body: '{"error":"The database service is unavailable"}' }],
    ['a connection reset', 'reset' as const],
    ['a hang past the timeout', 'hang' as const],
    ['a body that is not JSON', 'garbage' as const],
  ])('answers 200 after %s, with one retry', async (_name, how) => {
    const upstream = await upstreamFake();
    const proxy = await proxyFor([upstream]);
    upstream.failNext(1, how, /blocks\/3/);
    const response = await fetchRaw(proxy.url + BLOCK);
    expect(response.status).toBe(200);
    expect(response.body.equals((await fetchRaw(upstream.url + BLOCK)).body)).toBe(true);
    expect(upstream.count(BLOCK)).toBe(3); // failed attempt, retry, and the direct comparison
    expect(await metricValue(proxy, 'stacks_proxy_upstream_retries_total', { route: 'block' })).toBe(1);
  });

  it('never caches a failure: the next request after an outage gets the real answer', async () => {
    const upstream = await upstreamFake();
    const proxy = await proxyFor([upstream], { overrides: { upstream: { maxAttempts: 1 } } });
    upstream.failNext(1, { status: 500, body: '{"statusCode":500,"error":"Internal Server Error","message":"boom"}' });
    const failed = await fetchRaw(proxy.url + BLOCK);
    expect(failed.status).toBe(500);
    expect(failed.headers.get('x-cache')).toBe('BYPASS');
    const healed = await fetchRaw(proxy.url + BLOCK);
    expect(healed.status).toBe(200);
    expect(healed.headers.get('x-cache')).toBe('MISS');
  });

  it('refuses bodies over the size cap as invalid', async () => {
    const upstream = await upstreamFake();
    // Large enough for the chain-tip poll, too small for the 6 KB transaction.
    const proxy = await proxyFor([upstream], { overrides: { upstream: { maxBodyBytes: 3_000, maxAttempts: 1 } } });
    const before = await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { kind: 'invalid' });
    const response = await fetchRaw(proxy.url + TX);
    expect(response.status).toBe(502);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { kind: 'invalid' })).toBe(before + 1);
    expect((await fetchRaw(`${proxy.url}/extended/v2/blocks/1`)).status).toBe(200);
  });
});

describe('two upstreams', () => {
  it('keeps answering through the healthy one, opens the breaker of the dead one and closes it when it recovers', async () => {
    const [primary, secondary] = [await upstreamFake(), await upstreamFake()];
    const proxy = await proxyFor([primary, secondary]);
    primary.setFailing('reset');
    for (let height = 1; height <= 8; height++) {
      const response = await fetchRaw(`${proxy.url}/extended/v2/blocks/${height}`);
      expect(response.status).toBe(200);
    }
    expect(await metricValue(proxy, 'stacks_proxy_upstream_breaker_open', { upstream: primary.url })).toBe(1);
    const triedWhileOpen = primary.count(/blocks/);
    await fetchRaw(`${proxy.url}/extended/v2/blocks/9`);
    expect(primary.count(/blocks/)).toBe(triedWhileOpen); // open: not even tried

    primary.setFailing(null);
    // The tip poll is the health check; it closes the breaker once the 200 ms cool-down has run
    // (on the wall clock: the upstream client does not take the injected one).
    const breakerOpenAfterPoll = async () => {
      await proxy.tracker.pollOnce();
      return metricValue(proxy, 'stacks_proxy_upstream_breaker_open', { upstream: primary.url });
    };
    await expect.poll(breakerOpenAfterPoll, { timeout: 5_000, interval: 50 }).toBe(0);
    primary.resetCounts();
    expect((await fetchRaw(`${proxy.url}/extended/v2/blocks/10`)).status).toBe(200);
    expect(primary.count('/extended/v2/blocks/10')).toBe(1);
  });

  it('does not read from an upstream that lags the best tip, and uses it again once it catches up', async () => {
    const [lagging, current] = [await upstreamFake(), await upstreamFake()];
    const proxy = await proxyFor([lagging, current]);
    current.advanceTip(5);
    await proxy.tracker.pollOnce();
    expect(await metricValue(proxy, 'stacks_proxy_upstream_lag_blocks', { upstream: lagging.url })).toBe(5);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_up', { upstream: lagging.url })).toBe(0);

    const path = `/extended/v1/address/${RECORDED.principal}/transactions`;
    lagging.resetCounts();
    expect((await fetchRaw(proxy.url + path)).status).toBe(200);
    expect(lagging.count(path)).toBe(0);
    expect(current.count(path)).toBe(1);

    lagging.advanceTip(5);
    await proxy.tracker.pollOnce();
    expect(await metricValue(proxy, 'stacks_proxy_upstream_up', { upstream: lagging.url })).toBe(1);
    expect((await fetchRaw(`${proxy.url}/extended/v2/blocks/4`)).status).toBe(200);
    expect(lagging.count('/extended/v2/blocks/4')).toBe(1);
  });
});

describe("the breaker's log line", () => {
  it('names the failures that opened it: each kind, route and message, in the order they came', async () => {
    const upstream = await upstreamFake();
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    // One attempt per request, so each request is one failure; no block learning, whose reads
    // could succeed in between (a success starts the count again).
    const proxy = await startTestProxy({
      upstreamUrls: [upstream.url],
      logger,
      overrides: { ...FAST, upstream: { ...FAST.upstream, failureThreshold: 3, maxAttempts: 1 }, activity: { learnBlocks: false } },
    });
    defer(() => proxy.close());
    upstream.failNext(1, { status: 503, body: '{"error":"The database service is unavailable"}' }, /blocks\/3$/);
    upstream.failNext(1, 'reset', new RegExp(RECORDED.confirmedTxId));
    upstream.failNext(1, 'garbage', /blocks\/5$/);
    for (const path of [BLOCK, TX, '/extended/v2/blocks/5']) expect((await fetchRaw(proxy.url + path)).status).toBeGreaterThanOrEqual(500);

    const opened = lines.filter((line) => String(line.msg).startsWith('upstream circuit breaker opened'));
    expect(opened).toHaveLength(1);
    expect(opened[0]).toMatchObject({
      level: 40,
      upstream: new URL(upstream.url).origin,
      state: 'open',
      msg: 'upstream circuit breaker opened after 3 failures in a row: 5xx on block, reset on tx_by_id, invalid on block',
    });
    const failures = opened[0]?.failures as Array<{ kind: string; route: string; message: string; ageMs: number }>;
    expect(failures.map((f) => [f.kind, f.route])).toEqual([
      ['5xx', 'block'],
      ['reset', 'tx_by_id'],
      ['invalid', 'block'],
    ]);
    expect(failures[0]?.message).toContain('503');
    for (const failure of failures) {
      expect(failure.message).toContain(new URL(upstream.url).origin);
      expect(failure.ageMs).toBeGreaterThanOrEqual(0);
    }
  });
});

describe('every upstream down', () => {
  it('serves an expired copy with X-Cache STALE and a Warning, else 502 for connection failures', async () => {
    let clock = Date.now();
    const upstream = await upstreamFake();
    const proxy = await proxyFor([upstream], { now: () => clock });
    const fees = '/extended/v2/mempool/fees';
    const first = await fetchRaw(proxy.url + fees);
    clock += 60_000; // long expired, within the 5 min stale-if-error window
    upstream.setFailing('reset');

    const stale = await fetchRaw(proxy.url + fees);
    expect(stale.status).toBe(200);
    expect(stale.headers.get('x-cache')).toBe('STALE');
    expect(stale.headers.get('warning')).toContain('110');
    expect(stale.body.equals(first.body)).toBe(true);
    expect(await metricValue(proxy, 'stacks_proxy_stale_served_total', { route: 'mempool_fees', reason: 'reset' })).toBe(1);

    const never = await fetchRaw(proxy.url + BLOCK);
    expect(never.status).toBe(502);
    expect(JSON.parse(never.body.toString())).toEqual({ statusCode: 502, error: 'Bad Gateway', message: 'The upstream API is unavailable' });

    clock += 10 * 60_000; // past the window: no longer served
    expect((await fetchRaw(proxy.url + fees)).status).toBe(502);
  });

  it('answers 504 when every upstream times out', async () => {
    const upstream = await upstreamFake();
    const proxy = await proxyFor([upstream]);
    upstream.setFailing('hang', /blocks\/3/);
    const response = await fetchRaw(proxy.url + BLOCK);
    expect(response.status).toBe(504);
    expect(JSON.parse(response.body.toString())).toMatchObject({ statusCode: 504, error: 'Gateway Timeout' });
  });

  it('passes the upstream 5xx through when there is no copy to serve', async () => {
    const upstream = await upstreamFake();
    const proxy = await proxyFor([upstream]);
    const body = '{"error":"The database service is unavailable"}';
    upstream.setFailing({ status: 503, body }, /blocks\/3/);
    const response = await fetchRaw(proxy.url + BLOCK);
    expect(response.status).toBe(503);
    expect(response.body.toString()).toBe(body);
  });
});

describe('overload', () => {
  it('answers 503 with Retry-After once the upstream queue is full', async () => {
    const upstream = await upstreamFake();
    const proxy = await proxyFor([upstream], { overrides: { upstream: { maxConcurrent: 1, maxQueue: 1, maxAttempts: 1 } } });
    upstream.setDelay(300, /blocks/);
    const responses = await Promise.all([1, 2, 3, 4].map((h) => fetchRaw(`${proxy.url}/extended/v2/blocks/${h}`)));
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 503, 503]);
    const refused = responses.find((r) => r.status === 503);
    expect(refused?.headers.get('retry-after')).toBe('1');
    expect(await metricValue(proxy, 'stacks_proxy_overload_rejections_total', { route: 'block' })).toBe(2);
  });
});

describe('Redis outages', () => {
  let redis: TestRedis;

  it('keeps answering every request while Redis is killed and restarted, and reports it', async () => {
    redis = await startRedis();
    defer(() => redis.stop());
    const upstream = await upstreamFake();
    const proxy = await proxyFor([upstream], { redisUrl: redis.url });
    // The client notices a lost or regained connection on its own schedule.
    const redisUp = (want: number) => expect.poll(() => metricValue(proxy, 'stacks_proxy_redis_up'), { timeout: 5_000, interval: 50 }).toBe(want);
    await redisUp(1);

    const statuses: number[] = [];
    const sweep = async (from: number) => {
      for (let height = from; height < from + 10; height++) statuses.push((await fetchRaw(`${proxy.url}/extended/v2/blocks/${height}`)).status);
    };
    await sweep(1);
    await redis.kill();
    await sweep(1); // cached in memory
    await sweep(11); // misses go to the upstream; Redis writes fail quietly
    await redisUp(0);
    await redis.restart();
    await redisUp(1);
    await sweep(21);
    expect(statuses).toHaveLength(40);
    expect(new Set(statuses)).toEqual(new Set([200]));
  });
});

describe('a thousand concurrent misses for one key', () => {
  const burst = (url: string, n: number) => Promise.all(Array.from({ length: n }, () => fetchRaw(url)));

  it('makes exactly one upstream request on one instance', async () => {
    const upstream = await upstreamFake();
    const proxy = await proxyFor([upstream]);
    upstream.setDelay(300, /blocks\/5/);
    const responses = await burst(`${proxy.url}/extended/v2/blocks/5`, 1_000);
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(upstream.count('/extended/v2/blocks/5')).toBe(1);
  });

  it('makes exactly one upstream request across two instances sharing Redis', async () => {
    const redis = await startRedis();
    defer(() => redis.stop());
    const upstream = await upstreamFake();
    // 1,000 requests at once can hold a loaded CI machine's Redis replies past the default 250 ms
    // command timeout, and a lock that cannot be taken in time means fetching without one (by
    // design: Redis trouble must not stall reads). This test is about coordination, not that.
    const patient = { redisUrl: redis.url, overrides: { redis: { commandTimeoutMs: 5_000 } } };
    const [a, b] = [await proxyFor([upstream], patient), await proxyFor([upstream], patient)];
    upstream.setDelay(300, /blocks\/6/);
    const [fromA, fromB] = await Promise.all([burst(`${a.url}/extended/v2/blocks/6`, 500), burst(`${b.url}/extended/v2/blocks/6`, 500)]);
    expect([...fromA, ...fromB].every((r) => r.status === 200)).toBe(true);
    expect(upstream.count('/extended/v2/blocks/6')).toBe(1);
    const waits =
      (await metricValue(a, 'stacks_proxy_shared_singleflight_waits_total', { result: 'filled' })) +
      (await metricValue(b, 'stacks_proxy_shared_singleflight_waits_total', { result: 'filled' }));
    expect(waits).toBe(1);
  });
});

describe('more faults', () => {
  it('treats a truncated body as a failure: retried, never cached', async () => {
    const { createServer } = await import('node:http');
    let calls = 0;
    // Declares more bytes than it sends, then closes: a body cut short on the wire.
    const truncating = createServer((req, res) => {
      calls++;
      if (req.url === '/extended') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"chain_tip":{"block_height":1,"index_block_hash":"0x01","burn_block_height":1}}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': '1000' });
      res.write('{"canonical":true,"height":3');
      setTimeout(() => res.destroy(), 10);
    });
    await new Promise<void>((resolve) => truncating.listen(0, '127.0.0.1', () => resolve()));
    defer(() => new Promise((resolve) => truncating.close(resolve)));
    const address = truncating.address() as { port: number };
    // A high breaker threshold, so the second request reaches the upstream too.
    const proxy = await startTestProxy({
      upstreamUrls: [`http://127.0.0.1:${address.port}`],
      overrides: { ...FAST, upstream: { ...FAST.upstream, failureThreshold: 100 } },
    });
    defer(() => proxy.close());
    calls = 0;
    const response = await fetchRaw(proxy.url + BLOCK);
    expect(response.status).toBe(502);
    expect(calls).toBe(2); // both attempts of the retry budget, none cached
    const again = await fetchRaw(proxy.url + BLOCK);
    expect(again.status).toBe(502);
    expect(again.headers.get('x-cache')).toBe('MISS');
    expect(calls).toBe(4); // tried again in full: nothing was cached
  });

  it('waits for a lock left by a crashed instance only until it expires, then fetches', async () => {
    const { execFileSync } = await import('node:child_process');
    const redis = await startRedis();
    defer(() => redis.stop());
    const upstream = await upstreamFake();
    const proxy = await proxyFor([upstream], { redisUrl: redis.url, overrides: { cache: { sharedSingleFlight: { waitMs: 5_000 } } } });
    // The key the proxy uses for this request, and a lock nobody will release. It lives long
    // enough (1.5 s) to still be there when the request arrives on a loaded CI machine: a lock
    // that expired first would be taken, not waited for, and the test would prove nothing.
    const key = routeKey('scp', 'block', '/extended/v2/blocks/8');
    execFileSync('redis-cli', ['-p', String(redis.port), 'SET', `${key}:lock`, 'crashed-holder', 'PX', '1500']);
    upstream.resetCounts();
    const response = await fetchRaw(`${proxy.url}/extended/v2/blocks/8`);
    expect(response.status).toBe(200);
    expect(upstream.count('/extended/v2/blocks/8')).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_shared_singleflight_waits_total', { result: 'timeout' })).toBe(1);
  });
});
