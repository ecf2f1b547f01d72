/**
 * The telemetry module: each domain event moves its metric and writes its log line, state
 * gauges are read from their sources once per scrape, and the registry follows operator
 * conventions (standard default-metric names, build_info, no redis_up without Redis).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { register as globalRegistry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { METRICS, REDIS_METRICS, catalogueSpecs } from '../../src/telemetry/catalogue.js';
import { createTelemetry, type ProxyTelemetry, type TelemetryOptions } from '../../src/telemetry/prometheus-telemetry.js';
import type { CacheState, UpstreamState } from '../../src/telemetry/state-gauges.js';
import { noopTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';

type LogLine = Record<string, unknown> & { level: number; msg?: string };
const LEVEL = { debug: 20, info: 30, warn: 40 } as const;

/** A telemetry whose log lines are kept, parsed, in `lines`; default metrics off. */
function telemetryWithLog(options: Partial<TelemetryOptions> = {}) {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug', base: undefined, timestamp: false }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  const telemetry = createTelemetry({ logger, redis: false, defaultMetrics: false, ...options });
  const messages = () => lines.map((l) => [l.level, l.msg]);
  return { telemetry, lines, messages };
}

/** The value of the samples of `name` whose labels include `labels` (summed), undefined when none. */
async function sample(telemetry: ProxyTelemetry, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const family = name.replace(/_(count|sum)$/, '');
  const metric = telemetry.registry.getSingleMetric(family);
  if (!metric) throw new Error(`no metric ${family}`);
  const { values } = await metric.get();
  // Histogram samples carry their series name (_bucket, _sum, _count); prom-client's types omit it.
  const seriesOf = (v: (typeof values)[number]) => (v as { metricName?: string }).metricName ?? family;
  const matching = values.filter((v) => seriesOf(v) === name && Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want));
  return matching.length === 0 ? undefined : matching.reduce((sum, v) => sum + v.value, 0);
}

describe('domain events', () => {
  it('requestServed counts the request, times it and writes the access log line', async () => {
    const { telemetry, lines } = telemetryWithLog();
    const served = { requestId: 'r1', method: 'GET', route: 'block', status: 200, cache: 'HIT', cls: 'final', seconds: 0.0015 };
    telemetry.requestServed(served);
    telemetry.requestServed({ ...served, requestId: 'r2', seconds: 0.0025 });
    telemetry.requestServed({ ...served, requestId: 'r3', status: 404, cache: 'MISS', seconds: 0.25, upstreamSeconds: 0.2 });

    const labels = { route: 'block', method: 'GET', status: '200', cache: 'HIT' };
    expect(await sample(telemetry, 'stacks_proxy_http_requests_total', labels)).toBe(2);
    expect(await sample(telemetry, 'stacks_proxy_http_requests_total', { status: '404', cache: 'MISS' })).toBe(1);
    expect(await sample(telemetry, 'stacks_proxy_http_request_duration_seconds_count', { route: 'block', cache: 'HIT' })).toBe(2);
    expect(await sample(telemetry, 'stacks_proxy_http_request_duration_seconds_sum', { route: 'block', cache: 'HIT' })).toBeCloseTo(0.004, 9);
    expect(lines).toEqual([
      { level: LEVEL.info, reqId: 'r1', method: 'GET', route: 'block', status: 200, cache: 'HIT', class: 'final', ms: 1.5 },
      { level: LEVEL.info, reqId: 'r2', method: 'GET', route: 'block', status: 200, cache: 'HIT', class: 'final', ms: 2.5 },
      { level: LEVEL.info, reqId: 'r3', method: 'GET', route: 'block', status: 404, cache: 'MISS', class: 'final', ms: 250, upstreamMs: 200 },
    ]);
    expect(await sample(telemetry, 'stacks_proxy_overload_rejections_total')).toBeUndefined();
  });

  it('with hitsEvery N, logs one hit in N (saying so) and every other answer, while the counters count each', async () => {
    const { telemetry, lines } = telemetryWithLog({ accessLog: { enabled: true, hitsEvery: 3 } });
    const hit = { method: 'GET', route: 'block', status: 200, cache: 'HIT', cls: 'final', seconds: 0.001 };
    for (let i = 1; i <= 7; i++) telemetry.requestServed({ ...hit, requestId: `h${i}` });
    telemetry.requestServed({ ...hit, requestId: 'm1', cache: 'MISS' });
    telemetry.requestServed({ ...hit, requestId: 's1', cache: 'STALE' });
    telemetry.requestServed({ ...hit, requestId: 'b1', cache: 'BYPASS', status: 400 });
    expect(lines.map((l) => [l.reqId, l.sampled])).toEqual([
      ['h3', 3],
      ['h6', 3],
      ['m1', undefined],
      ['s1', undefined],
      ['b1', undefined],
    ]);
    expect(await sample(telemetry, 'stacks_proxy_http_requests_total', { cache: 'HIT' })).toBe(7);
  });

  it('with refusalsEvery N, logs one refusal in N (saying so), apart from the hits, while the counters count each', async () => {
    const { telemetry, lines } = telemetryWithLog({ accessLog: { enabled: true, hitsEvery: 2, refusalsEvery: 3 } });
    const refusal = { method: 'GET', route: 'passthrough', status: 429, cache: 'NONE', seconds: 0.001, refused: true };
    for (let i = 1; i <= 4; i++) telemetry.requestServed({ ...refusal, requestId: `r${i}` });
    telemetry.requestServed({ ...refusal, requestId: 'h1', status: 200, cache: 'HIT', refused: false });
    telemetry.requestServed({ ...refusal, requestId: 'h2', status: 200, cache: 'HIT', refused: false });
    telemetry.requestServed({ ...refusal, requestId: 'n1', status: 404, refused: false });
    for (let i = 5; i <= 6; i++) telemetry.requestServed({ ...refusal, requestId: `r${i}`, status: 400 });
    expect(lines.map((l) => [l.reqId, l.sampled])).toEqual([
      ['r3', 3],
      ['h2', 2],
      ['n1', undefined],
      ['r6', 3],
    ]);
    expect(await sample(telemetry, 'stacks_proxy_http_requests_total', { status: '429' })).toBe(4);
  });

  it('with the access log off, logs no request but still counts it', async () => {
    const { telemetry, lines } = telemetryWithLog({ accessLog: { enabled: false, hitsEvery: 1 } });
    telemetry.requestServed({ requestId: 'm', method: 'GET', route: 'block', status: 200, cache: 'MISS', seconds: 0.001 });
    expect(lines).toEqual([]);
    expect(await sample(telemetry, 'stacks_proxy_http_requests_total', { cache: 'MISS' })).toBe(1);
  });

  it('requestServed counts an overload rejection when the upstream queues were full', async () => {
    const { telemetry, lines } = telemetryWithLog();
    telemetry.requestServed({ requestId: 'r', method: 'GET', route: 'tx', status: 503, cache: 'MISS', seconds: 0.001, upstreamError: 'overloaded' });
    expect(await sample(telemetry, 'stacks_proxy_overload_rejections_total', { route: 'tx' })).toBe(1);
    expect(lines[0]).toMatchObject({ status: 503, upstreamError: 'overloaded' });
  });

  it.each<[string, (t: Telemetry) => void, string, Record<string, string>]>([
    ['cacheLookup', (t) => t.cacheLookup('redis', 'final', 'hit'), 'stacks_proxy_cache_lookups_total', { tier: 'redis', class: 'final', result: 'hit' }],
    ['cacheEvicted', (t) => t.cacheEvicted('memory'), 'stacks_proxy_cache_evictions_total', { tier: 'memory' }],
    ['redisCommand', (t) => t.redisCommand('get', 0.002), 'stacks_proxy_redis_command_duration_seconds_count', { command: 'get' }],
    ['singleflightJoined', (t) => t.singleflightJoined('block'), 'stacks_proxy_singleflight_joined_total', { route: 'block' }],
    [
      'sharedFlightWaited',
      (t) => t.sharedFlightWaited('block', 'timeout'),
      'stacks_proxy_shared_singleflight_waits_total',
      { route: 'block', result: 'timeout' },
    ],
    ['primaryFlight', (t) => t.primaryFlight('block', 'filled'), 'stacks_proxy_primary_singleflight_total', { route: 'block', outcome: 'filled' }],
    ['revalidated', (t) => t.revalidated('not_modified'), 'stacks_proxy_revalidations_total', { result: 'not_modified' }],
    ['staleServed', (t) => t.staleServed('block', 'timeout'), 'stacks_proxy_stale_served_total', { route: 'block', reason: 'timeout' }],
    ['reorgPurged', (t) => t.reorgPurged(), 'stacks_proxy_reorg_purged_entries_total', {}],
    ['upstreamRetried', (t) => t.upstreamRetried('http://a', 'block', 'reset'), 'stacks_proxy_upstream_retries_total', { route: 'block', reason: 'reset' }],
    ['reorgDetected', (t) => t.reorgDetected(7, { height: 9, burnHeight: 1 }, { height: 8, burnHeight: 1 }), 'stacks_proxy_reorgs_total', {}],
    ['purgeRequested', (t) => t.purgeRequested('all'), 'stacks_proxy_cache_purge_requests_total', { kind: 'all' }],
    ['purgesCoalesced', (t) => t.purgesCoalesced(1), 'stacks_proxy_cache_purges_coalesced_total', {}],
  ])('%s moves its counter by one per call', async (_event, fire, name, labels) => {
    const { telemetry } = telemetryWithLog();
    expect((await sample(telemetry, name, labels)) ?? 0).toBe(0);
    fire(telemetry);
    expect(await sample(telemetry, name, labels)).toBe(1);
    fire(telemetry);
    expect(await sample(telemetry, name, labels)).toBe(2);
  });

  it('counts tip polls under the role it last said, and the leader gauge follows it', async () => {
    const { telemetry } = telemetryWithLog();
    telemetry.tipPolled();
    telemetry.tipLeading(false);
    expect(await sample(telemetry, 'stacks_proxy_tip_leader', {})).toBe(0);
    telemetry.tipPolled();
    telemetry.tipPolled();
    telemetry.tipLeading(true);
    expect(await sample(telemetry, 'stacks_proxy_tip_leader', {})).toBe(1);
    telemetry.tipPolled();
    expect(await sample(telemetry, 'stacks_proxy_tip_polls_total', { role: 'leader' })).toBe(2);
    expect(await sample(telemetry, 'stacks_proxy_tip_polls_total', { role: 'follower' })).toBe(2);
  });

  it('keeps label sets apart (children are bound per combination of label values)', async () => {
    const { telemetry } = telemetryWithLog();
    telemetry.cacheLookup('memory', 'tip', 'hit');
    telemetry.cacheLookup('memory', 'tip', 'miss');
    telemetry.cacheLookup('redis', 'tip', 'hit');
    telemetry.cacheLookup('memory', 'tip', 'hit');
    expect(await sample(telemetry, 'stacks_proxy_cache_lookups_total', { tier: 'memory', class: 'tip', result: 'hit' })).toBe(2);
    expect(await sample(telemetry, 'stacks_proxy_cache_lookups_total', { tier: 'memory', class: 'tip', result: 'miss' })).toBe(1);
    expect(await sample(telemetry, 'stacks_proxy_cache_lookups_total', { tier: 'redis', class: 'tip', result: 'hit' })).toBe(1);
  });

  it('times Redis commands', async () => {
    const { telemetry } = telemetryWithLog();
    telemetry.redisCommand('get', 0.002);
    telemetry.redisCommand('get', 0.003);
    expect(await sample(telemetry, 'stacks_proxy_redis_command_duration_seconds_sum', { command: 'get' })).toBeCloseTo(0.005, 9);
  });

  it('upstreamAnswered counts and times the answer, and an answer that is a failure under its kind', async () => {
    const { telemetry } = telemetryWithLog();
    telemetry.upstreamAnswered('http://a', 'block', 200, 0.1);
    telemetry.upstreamAnswered('http://a', 'block', 503, 0.2, { kind: '5xx', message: 'a gateway or overload error' });
    // A handler's JSON 500 for one input is an answer: counted as a request, not as an error.
    telemetry.upstreamAnswered('http://a', 'block', 500, 0.1);
    telemetry.upstreamAnswered('http://a', 'block', 429, 0.1, { kind: 'rate_limited', message: 'rate limited' });
    expect(await sample(telemetry, 'stacks_proxy_upstream_errors_total', { upstream: 'http://a', kind: 'rate_limited' })).toBe(1);
    expect(await sample(telemetry, 'stacks_proxy_upstream_requests_total', { upstream: 'http://a', route: 'block', status: '200' })).toBe(1);
    expect(await sample(telemetry, 'stacks_proxy_upstream_requests_total', { upstream: 'http://a', route: 'block', status: '503' })).toBe(1);
    expect(await sample(telemetry, 'stacks_proxy_upstream_request_duration_seconds_count', { upstream: 'http://a', route: 'block' })).toBe(4);
    expect(await sample(telemetry, 'stacks_proxy_upstream_errors_total', { upstream: 'http://a', kind: '5xx' })).toBe(1);
  });

  it('upstreamFailed counts an errored request and its failure kind, at debug level', async () => {
    const { telemetry, lines } = telemetryWithLog();
    telemetry.upstreamFailed('http://a', 'block', { kind: 'timeout', message: 'timeout from http://a' });
    expect(await sample(telemetry, 'stacks_proxy_upstream_requests_total', { upstream: 'http://a', route: 'block', status: 'error' })).toBe(1);
    expect(await sample(telemetry, 'stacks_proxy_upstream_errors_total', { upstream: 'http://a', kind: 'timeout' })).toBe(1);
    expect(lines).toEqual([
      { level: LEVEL.debug, upstream: 'http://a', route: 'block', kind: 'timeout', err: 'timeout from http://a', msg: 'upstream request failed' },
    ]);
  });

  it('breakerChanged sets the breaker gauge and warns on each transition', async () => {
    const { telemetry, messages } = telemetryWithLog();
    telemetry.breakerChanged('http://a', 'open');
    expect(await sample(telemetry, 'stacks_proxy_upstream_breaker_open', { upstream: 'http://a' })).toBe(1);
    telemetry.breakerChanged('http://a', 'closed');
    expect(await sample(telemetry, 'stacks_proxy_upstream_breaker_open', { upstream: 'http://a' })).toBe(0);
    expect(messages()).toEqual([
      [LEVEL.warn, 'upstream circuit breaker opened'],
      [LEVEL.warn, 'upstream circuit breaker closed'],
    ]);
  });

  it('breakerChanged names the failures that opened the breaker in its line: kinds and routes in the message, their words in `failures`', () => {
    const { telemetry, lines } = telemetryWithLog();
    const failures = [
      { kind: 'timeout', route: 'block', message: 'timeout from http://a: request deadline passed', ageMs: 40 },
      { kind: '5xx', route: 'chain_tip', message: 'status 502 from http://a', ageMs: 0 },
    ];
    telemetry.breakerChanged('http://a', 'open', failures);
    expect(lines).toEqual([
      {
        level: LEVEL.warn,
        upstream: 'http://a',
        state: 'open',
        failures,
        msg: 'upstream circuit breaker opened after 2 failures in a row: timeout on block, 5xx on chain_tip',
      },
    ]);
  });

  it('lagChanged warns when an upstream falls behind and when it catches up', () => {
    const { telemetry, lines } = telemetryWithLog();
    telemetry.lagChanged('http://a', true, 4);
    telemetry.lagChanged('http://a', false, 0);
    expect(lines).toEqual([
      { level: LEVEL.warn, upstream: 'http://a', lagging: true, lagBlocks: 4, msg: 'upstream lags the best tip: not read from' },
      { level: LEVEL.warn, upstream: 'http://a', lagging: false, lagBlocks: 0, msg: 'upstream caught up' },
    ]);
  });

  it('tipChanged sets the tip heights and restarts the tip age', async () => {
    let now = 1_000;
    const { telemetry } = telemetryWithLog({ now: () => now });
    now = 4_000;
    expect(await sample(telemetry, 'stacks_proxy_chain_tip_age_seconds')).toBe(3);
    telemetry.tipChanged({ height: 120, burnHeight: 880 });
    now = 11_500;
    expect(await sample(telemetry, 'stacks_proxy_chain_tip_height')).toBe(120);
    expect(await sample(telemetry, 'stacks_proxy_chain_tip_burn_height')).toBe(880);
    expect(await sample(telemetry, 'stacks_proxy_chain_tip_age_seconds')).toBe(7.5);
  });

  it('logs tip-poll failures once when they start and once when they stop', () => {
    const { telemetry, messages } = telemetryWithLog();
    telemetry.tipPollSucceeded();
    telemetry.tipPollFailed(new Error('connect refused'));
    telemetry.tipPollFailed(new Error('connect refused'));
    telemetry.tipPollFailed('not an Error');
    telemetry.tipPollSucceeded();
    telemetry.tipPollSucceeded();
    telemetry.tipPollFailed(new Error('again'));
    telemetry.tipChanged({ height: 1, burnHeight: 1 });
    expect(messages()).toEqual([
      [LEVEL.warn, 'chain tip poll failing'],
      [LEVEL.debug, 'chain tip poll failed'],
      [LEVEL.debug, 'chain tip poll failed'],
      [LEVEL.info, 'chain tip poll recovered'],
      [LEVEL.warn, 'chain tip poll failing'],
      [LEVEL.info, 'chain tip poll recovered'],
    ]);
  });

  it('warns once per channel and upstream while its WebSocket attempts fail, and says once when it opens again', async () => {
    const { telemetry, messages, lines } = telemetryWithLog();
    telemetry.upstreamWsAvailable('rpc', 'http://a');
    telemetry.upstreamWsUnavailable('rpc', 'http://a', 'upgrade refused 404', 1_000);
    telemetry.upstreamWsUnavailable('rpc', 'http://a', 'upgrade refused 404', 2_000);
    // Another upstream, and the other channel to the same one, are outages of their own.
    telemetry.upstreamWsUnavailable('rpc', 'http://b', 'connection failed ECONNREFUSED', 1_000);
    telemetry.upstreamWsUnavailable('socket_io', 'http://a', 'upgrade refused 403', 1_000);
    telemetry.upstreamWsAvailable('rpc', 'http://a');
    telemetry.upstreamWsAvailable('rpc', 'http://a');
    telemetry.upstreamWsUnavailable('rpc', 'http://a', 'upgrade refused 404', 1_000);
    const warning = 'upstream WebSocket unavailable: tried again with backoff; the chain tip is polled meanwhile';
    expect(messages()).toEqual([
      [LEVEL.warn, warning],
      [LEVEL.debug, 'upstream WebSocket still unavailable'],
      [LEVEL.warn, warning],
      [LEVEL.warn, warning],
      [LEVEL.info, 'upstream WebSocket available again'],
      [LEVEL.warn, warning],
    ]);
    expect(lines[0]).toMatchObject({ channel: 'rpc', origin: 'http://a', reason: 'upgrade refused 404', retryInMs: 1_000 });
    // The mode gauge: one of push and poll at 1 per upstream.
    telemetry.upstreamPushMode('http://a', 'poll');
    telemetry.upstreamPushMode('http://a', 'push');
    expect(await sample(telemetry, 'stacks_proxy_upstream_push_mode', { upstream: 'http://a', mode: 'push' })).toBe(1);
    expect(await sample(telemetry, 'stacks_proxy_upstream_push_mode', { upstream: 'http://a', mode: 'poll' })).toBe(0);
  });

  it('reorgDetected warns with the fork height and both tips', () => {
    const { telemetry, lines } = telemetryWithLog();
    const from = { height: 10, burnHeight: 5, indexBlockHash: '0xaa' };
    const to = { height: 10, burnHeight: 5, indexBlockHash: '0xbb' };
    telemetry.reorgDetected(8, from, to);
    expect(lines).toEqual([{ level: LEVEL.warn, forkHeight: 8, from, to, msg: 'chain reorg detected' }]);
  });

  it('tipJumpHeld warns with the upstream and both tips', () => {
    const { telemetry, lines } = telemetryWithLog();
    const believed = { height: 10, burnHeight: 5, indexBlockHash: '0xaa' };
    const reported = { height: 1010, burnHeight: 1005, indexBlockHash: '0xbb' };
    telemetry.tipJumpHeld('http://a', believed, reported);
    expect(lines).toEqual([{ level: LEVEL.warn, upstream: 'http://a', believed, reported, msg: 'chain tip jump not believed until confirmed' }]);
  });

  it('passthrough answers and failures count as upstream requests of route passthrough', async () => {
    const { telemetry, lines } = telemetryWithLog();
    telemetry.passthroughAnswered('http://a', 201, 0.05);
    telemetry.passthroughFailed('http://a', { kind: 'connect', message: 'ECONNREFUSED' });
    expect(await sample(telemetry, 'stacks_proxy_upstream_requests_total', { route: 'passthrough', status: '201' })).toBe(1);
    expect(await sample(telemetry, 'stacks_proxy_upstream_requests_total', { route: 'passthrough', status: 'error' })).toBe(1);
    expect(await sample(telemetry, 'stacks_proxy_upstream_request_duration_seconds_count', { route: 'passthrough' })).toBe(1);
    expect(await sample(telemetry, 'stacks_proxy_upstream_errors_total', { upstream: 'http://a', kind: 'connect' })).toBe(1);
    expect(lines).toEqual([{ level: LEVEL.warn, upstream: 'http://a', kind: 'connect', err: 'ECONNREFUSED', msg: 'passthrough to upstream failed' }]);
  });

  it('storeError logs at debug level only', async () => {
    const { telemetry, lines } = telemetryWithLog();
    telemetry.storeError('redis', 'get', new Error('Command timed out'));
    expect(lines).toEqual([{ level: LEVEL.debug, tier: 'redis', operation: 'get', err: 'Command timed out', msg: 'cache tier error' }]);
  });

  it('redisStatusChanged sets redis_up on every report and logs only changes', async () => {
    const { telemetry, messages } = telemetryWithLog({ redis: true });
    expect(await sample(telemetry, 'stacks_proxy_redis_up')).toBe(0);
    telemetry.redisStatusChanged(true);
    telemetry.redisStatusChanged(true);
    expect(await sample(telemetry, 'stacks_proxy_redis_up')).toBe(1);
    telemetry.redisStatusChanged(false);
    telemetry.redisStatusChanged(false);
    expect(await sample(telemetry, 'stacks_proxy_redis_up')).toBe(0);
    telemetry.redisStatusChanged(true);
    expect(messages()).toEqual([
      [LEVEL.info, 'redis connected'],
      [LEVEL.warn, 'redis unavailable: serving from memory and upstream'],
      [LEVEL.info, 'redis connected'],
    ]);
  });

  it('counts every fail-open of the rate limiter but logs once per outage, and its end', async () => {
    const { telemetry, messages } = telemetryWithLog();
    telemetry.rateLimitFailedOpen(new Error('Connection is closed.'));
    telemetry.rateLimitFailedOpen(new Error('Command timed out'));
    telemetry.rateLimitRecovered();
    telemetry.rateLimitRecovered();
    telemetry.rateLimitFailedOpen(new Error('Connection is closed.'));
    expect(await sample(telemetry, 'stacks_proxy_rate_limit_fail_open_total')).toBe(3);
    expect(messages()).toEqual([
      [LEVEL.warn, 'rate-limit budget (redis) unavailable: requests pass unlimited'],
      [LEVEL.info, 'rate-limit budget (redis) available again: limits apply'],
      [LEVEL.warn, 'rate-limit budget (redis) unavailable: requests pass unlimited'],
    ]);
  });

  it('counts rate-limit decisions by tier and result', async () => {
    const { telemetry } = telemetryWithLog();
    telemetry.rateLimitDecided('anonymous', 'allowed');
    telemetry.rateLimitDecided('anonymous', 'allowed');
    telemetry.rateLimitDecided('keyed', 'unknown_key');
    expect(await sample(telemetry, 'stacks_proxy_rate_limit_requests_total', { tier: 'anonymous', result: 'allowed' })).toBe(2);
    expect(await sample(telemetry, 'stacks_proxy_rate_limit_requests_total', { tier: 'keyed', result: 'unknown_key' })).toBe(1);
  });
});

describe('state gauges', () => {
  const upstreams: UpstreamState[] = [
    { origin: 'http://a', usable: true, breaker: 'closed', lagBlocks: 0, inFlight: 3, queued: 0 },
    { origin: 'http://b', usable: false, breaker: 'open', inFlight: 0, queued: 2 },
  ];

  /** Sources that count how often they are read; `cacheState` may be changed between scrapes. */
  function countingSources(initial: CacheState) {
    const calls = { cache: 0, upstreams: 0 };
    let cacheState = initial;
    return {
      calls,
      setCache: (next: CacheState) => (cacheState = next),
      sources: {
        cache: async () => {
          calls.cache += 1;
          await new Promise((resolve) => setImmediate(resolve)); // Redis INFO is a round trip
          return cacheState;
        },
        upstreams: () => {
          calls.upstreams += 1;
          return upstreams;
        },
      },
    };
  }

  it('reads each source exactly once per scrape', async () => {
    const { telemetry } = telemetryWithLog({ redis: true });
    const { calls, sources } = countingSources({ memory: { entries: 1, bytes: 10 }, redis: { keys: 2, bytes: 20, evictedKeys: 0 } });
    telemetry.watch(sources);
    await telemetry.scrape();
    expect(calls).toEqual({ cache: 1, upstreams: 1 });
    await telemetry.scrape();
    expect(calls).toEqual({ cache: 2, upstreams: 2 });
    await telemetry.registry.getMetricsAsJSON();
    expect(calls).toEqual({ cache: 3, upstreams: 3 });
  });

  it('shows the state of the sources in the scrape that read them', async () => {
    const { telemetry } = telemetryWithLog({ redis: true });
    const { sources } = countingSources({ memory: { entries: 4, bytes: 400 }, redis: { keys: 9, bytes: 9_000, evictedKeys: 0 } });
    telemetry.watch(sources);
    const text = await telemetry.scrape();
    for (const line of [
      'stacks_proxy_cache_entries{tier="memory"} 4',
      'stacks_proxy_cache_entries{tier="redis"} 9',
      'stacks_proxy_cache_bytes{tier="memory"} 400',
      'stacks_proxy_cache_bytes{tier="redis"} 9000',
      'stacks_proxy_upstream_up{upstream="http://a"} 1',
      'stacks_proxy_upstream_up{upstream="http://b"} 0',
      'stacks_proxy_upstream_breaker_open{upstream="http://b"} 1',
      'stacks_proxy_upstream_lag_blocks{upstream="http://b"} 0',
      'stacks_proxy_upstream_in_flight{upstream="http://a",state="active"} 3',
      'stacks_proxy_upstream_in_flight{upstream="http://b",state="queued"} 2',
    ]) {
      expect(text.split('\n')).toContain(line);
    }
  });

  it("follows Redis' eviction total from a baseline, in the same scrape, and survives a Redis restart", async () => {
    const { telemetry } = telemetryWithLog({ redis: true });
    const redis = (evictedKeys: number) => ({ memory: { entries: 0, bytes: 0 }, redis: { keys: 0, bytes: 0, evictedKeys } });
    const { sources, setCache } = countingSources(redis(1_000));
    telemetry.watch(sources);
    const evicted = (text: string) => text.split('\n').find((l) => l.startsWith('stacks_proxy_cache_evictions_total{tier="redis"}'));
    expect(evicted(await telemetry.scrape())).toBe('stacks_proxy_cache_evictions_total{tier="redis"} 0');
    setCache(redis(1_005));
    expect(evicted(await telemetry.scrape())).toBe('stacks_proxy_cache_evictions_total{tier="redis"} 5');
    setCache(redis(2)); // restarted: its counter starts again
    expect(evicted(await telemetry.scrape())).toBe('stacks_proxy_cache_evictions_total{tier="redis"} 5');
    setCache(redis(4));
    expect(evicted(await telemetry.scrape())).toBe('stacks_proxy_cache_evictions_total{tier="redis"} 7');
  });

  it('leaves a gauge alone when Redis hides an INFO field', async () => {
    const { telemetry } = telemetryWithLog({ redis: true });
    const { sources, setCache } = countingSources({ memory: { entries: 0, bytes: 0 }, redis: { keys: 1, bytes: 500, evictedKeys: 0 } });
    telemetry.watch(sources);
    await telemetry.scrape();
    setCache({ memory: { entries: 0, bytes: 0 }, redis: { keys: 2, bytes: Number.NaN, evictedKeys: Number.NaN } });
    await telemetry.scrape();
    expect(await sample(telemetry, 'stacks_proxy_cache_bytes', { tier: 'redis' })).toBe(500);
    expect(await sample(telemetry, 'stacks_proxy_cache_entries', { tier: 'redis' })).toBe(2);
  });

  it('answers the scrape when a source fails, with the other sources read', async () => {
    const { telemetry, messages } = telemetryWithLog();
    telemetry.watch({
      cache: () => Promise.reject(new Error('redis gone')),
      upstreams: () => upstreams,
    });
    const text = await telemetry.scrape();
    expect(text).toContain('stacks_proxy_upstream_up{upstream="http://a"} 1');
    expect(messages()).toEqual([[LEVEL.debug, 'telemetry state source failed']]);
  });
});

describe('the registry', () => {
  it('has no stacks_proxy_redis_up without Redis, and one reading 0 until connected with Redis', async () => {
    const without = telemetryWithLog({ redis: false }).telemetry;
    expect(without.registry.getSingleMetric('stacks_proxy_redis_up')).toBeUndefined();
    expect(await without.scrape()).not.toContain('redis_up');
    without.redisStatusChanged(true); // harmless without the gauge
    expect(await without.scrape()).not.toContain('redis_up');

    const withRedis = telemetryWithLog({ redis: true }).telemetry;
    expect((await withRedis.scrape()).split('\n')).toContain('stacks_proxy_redis_up 0');
  });

  it('exports stacks_proxy_build_info = 1 with the package version and the Node version', async () => {
    const { version } = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string };
    const { telemetry } = telemetryWithLog();
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    expect((await telemetry.scrape()).split('\n')).toContain(`stacks_proxy_build_info{version="${version}",node="${process.version}"} 1`);
  });

  it('exports Node default metrics under their standard names when enabled', async () => {
    const names = async (defaultMetrics: boolean) => (await telemetryWithLog({ defaultMetrics }).telemetry.registry.getMetricsAsJSON()).map((m) => m.name);
    const withDefaults = await names(true);
    expect(withDefaults).toContain('process_cpu_seconds_total');
    expect(withDefaults).toContain('process_resident_memory_bytes');
    expect(withDefaults).toContain('nodejs_eventloop_lag_seconds');
    expect(withDefaults).toContain('nodejs_heap_size_used_bytes');
    expect(withDefaults.filter((n) => n.startsWith('stacks_proxy_process') || n.startsWith('stacks_proxy_nodejs'))).toEqual([]);
    const without = await names(false);
    expect(without.filter((n) => !n.startsWith('stacks_proxy_'))).toEqual([]);
  });

  it('registers exactly the catalogue', async () => {
    const names = async (redis: boolean) => (await telemetryWithLog({ redis }).telemetry.registry.getMetricsAsJSON()).map((m) => m.name).sort();
    expect(await names(false)).toEqual(
      catalogueSpecs({ redis: false })
        .map((s) => s.name)
        .sort(),
    );
    expect(await names(true)).toEqual(
      catalogueSpecs({ redis: true })
        .map((s) => s.name)
        .sort(),
    );
    expect(catalogueSpecs({ redis: true }).length).toBe(Object.keys(METRICS).length + Object.keys(REDIS_METRICS).length);
  });

  it('keeps proxies in one process apart (one registry each)', async () => {
    const first = telemetryWithLog().telemetry;
    const second = telemetryWithLog().telemetry;
    first.reorgPurged();
    expect(await sample(first, 'stacks_proxy_reorg_purged_entries_total')).toBe(1);
    expect(await sample(second, 'stacks_proxy_reorg_purged_entries_total')).toBe(0);
  });
});

describe('noopTelemetry', () => {
  it('has every event method of the real telemetry, and does nothing when called', async () => {
    const real = telemetryWithLog().telemetry;
    // Reads, not events: the scrape, the admin API's lookup counts and the status page's counts.
    const notEvents = new Set(['constructor', 'contentType', 'watch', 'scrape', 'lookupCounts', 'statusCounts']);
    const events = Object.getOwnPropertyNames(Object.getPrototypeOf(real)).filter((name) => !notEvents.has(name));
    expect(events.length).toBe(58); // 24 + the proxy's own upstream requests by purpose (issue 28) + disagreements with the chain model and the tip's burn heights (issue 27) + refreshes behind answers, single-flight through the primary, tip polls and the tip leader (issue 18) + the three rate-limit events (issue 9) + ETag-scope confirmations and purges (issue 10) + purge requests and coalescing (issue 14) + principal activity (issue 15: broadcasts, captures over budget, announcements, blocks learned, activity upstream requests) + surface reads (issue 15) + the live chain (issue 16: upstream WebSocket connections and reconnects, push notifications, feed believed, feed distrusted; issue 27: upstream WebSocket unavailable and available again, push mode; the WebSocket fan-out: clients connected and closed, subscriptions, messages, drops; warm reads)
    const before = await globalRegistry.metrics();
    const noop = noopTelemetry as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of events) {
      expect(typeof noop[name], name).toBe('function');
      // Whatever it is given, even nothing at all.
      expect(noop[name]?.()).toBeUndefined();
      expect(noop[name]?.(undefined, null, Number.NaN, {})).toBeUndefined();
    }
    expect(await globalRegistry.metrics()).toBe(before);
  });
});
