/**
 * The status page's pure parts: counter rates sampled over a window (status-rates.ts), the
 * report's hit ratios and fields (status-report.ts), the page's words for the tip block's anchor
 * (status-page.ts), and the bounded record of last failures, purges and reorgs
 * (telemetry/status-record.ts).
 */
import { describe, expect, it } from 'vitest';
import { CounterRates, MIN_GAP_MS } from '../../src/http/admin/status-rates.js';
import { STATUS_HTML, STATUS_JS, tipAnchorText } from '../../src/http/admin/status-page.js';
import { statusReport } from '../../src/http/admin/status-report.js';
import { RECENT_KEPT, StatusRecord } from '../../src/telemetry/status-record.js';
import { statusCounts, statusSources } from '../support/status-sources.js';

describe('CounterRates', () => {
  it('has no rate from one sample, then the growth per second since the oldest sample in the window', () => {
    const rates = new CounterRates({ windowMs: 10_000 });
    expect(rates.sample(0, { a: 100 })).toEqual({ a: null });
    expect(rates.sample(1_000, { a: 150 })).toEqual({ a: 50 });
    expect(rates.sample(2_000, { a: 350 })).toEqual({ a: 125 });
  });

  it('forgets samples older than the window', () => {
    const rates = new CounterRates({ windowMs: 5_000 });
    rates.sample(0, { a: 0 });
    rates.sample(4_000, { a: 4_000 });
    // At 10 s both earlier samples are older than the window: no rate from them (a quiet spell).
    expect(rates.sample(10_000, { a: 4_600 })).toEqual({ a: null });
    expect(rates.sample(11_000, { a: 4_700 })).toEqual({ a: 100 });
  });

  it('keeps a bounded number of samples however often it is read', () => {
    const rates = new CounterRates({ windowMs: 10_000 });
    let last: Record<string, number | null> = {};
    for (let t = 0; t <= 20_000; t += 1) last = rates.sample(t, { a: t * 2 });
    expect(last.a).toBeCloseTo(2_000, 0);
    expect((rates as unknown as { samples: unknown[] }).samples.length).toBeLessThanOrEqual(10_000 / MIN_GAP_MS + 2);
  });

  it('starts over when a counter goes down, and when the clock goes back', () => {
    const rates = new CounterRates({ windowMs: 10_000 });
    rates.sample(0, { a: 500 });
    expect(rates.sample(1_000, { a: 10 })).toEqual({ a: null });
    expect(rates.sample(2_000, { a: 30 })).toEqual({ a: 20 });
    expect(rates.sample(1_500, { a: 40 })).toEqual({ a: null });
  });

  it('rates a counter that appears later from its own first sample', () => {
    const rates = new CounterRates({ windowMs: 10_000 });
    rates.sample(0, { a: 0 });
    expect(rates.sample(1_000, { a: 10, b: 5 })).toEqual({ a: 10, b: null });
    expect(rates.sample(2_000, { a: 20, b: 15 })).toEqual({ a: 10, b: 10 });
  });
});

const counts = statusCounts;
const sources = statusSources;

type Report = {
  chain: { tip: { height: number; burnHeight: number; anchorBurnHeight: number | null; ageSeconds: number } | null; finality: unknown; lastPollError: unknown };
  upstreams: Array<Record<string, unknown>>;
  traffic: Record<string, unknown>;
  hitRatio: { overall: Record<string, unknown>; byClass: Record<string, Record<string, unknown>>; byRoute: Record<string, Record<string, unknown>> };
  cache: { redis: unknown };
  live: Record<string, unknown>;
};

describe('statusReport', () => {
  it('gives hit ratios per route and class as (hit + stale) over cacheable answers, busiest first', () => {
    const report = statusReport(
      sources({
        counts: counts({
          requests: [
            { route: 'block', cache: 'HIT', count: 6 },
            { route: 'block', cache: 'STALE', count: 1 },
            { route: 'block', cache: 'REVALIDATED', count: 1 },
            { route: 'block', cache: 'MISS', count: 2 },
            { route: 'passthrough', cache: 'NONE', count: 20 },
            { route: 'tx_by_id', cache: 'BYPASS', count: 1 },
          ],
          classes: [
            { cls: 'final', cache: 'HIT', count: 3 },
            { cls: 'final', cache: 'MISS', count: 1 },
            { cls: 'none', cache: 'NONE', count: 20 },
          ],
        }),
      }),
    ) as unknown as Report;
    expect(Object.keys(report.hitRatio.byRoute)).toEqual(['passthrough', 'block', 'tx_by_id']);
    expect(report.hitRatio.byRoute.block).toEqual({ hit: 6, stale: 1, revalidated: 1, miss: 2, uncached: 0, total: 10, hitRatio: 0.7 });
    expect(report.hitRatio.byRoute.passthrough?.hitRatio).toBeNull();
    expect(report.hitRatio.byClass.final?.hitRatio).toBe(0.75);
    expect(report.hitRatio.overall).toMatchObject({ total: 31, hitRatio: 0.7 });
    expect(report.traffic).toMatchObject({ requests: 31, requestsPerSecond: 3, upstreamRequestsPerSecond: 1, rateWindowSeconds: 10 });
  });

  it("names each upstream's last error and push-feed belief, and says plainly what is not known", () => {
    const report = statusReport(
      sources({
        tip: undefined,
        chain: { reorgs: [] },
        counts: counts({
          lastFailures: { 'http://a': { kind: '5xx', message: '<b>x</b>', route: 'chain_tip', at: 997_000 } },
          pushFeedBelieved: { 'http://a': false },
          wsClients: { rpc: 2 },
        }),
        redis: { keys: 5, bytes: Number.NaN, evictedKeys: 0, maxBytes: 0 },
      }),
    ) as unknown as Report;
    expect(report.chain.tip).toBeNull();
    expect(report.chain.finality).toBeNull();
    expect(report.upstreams[0]).toMatchObject({
      origin: 'http://a',
      pushFeedBelieved: false,
      rateLimitedMs: null,
      lastError: { kind: '5xx', message: '<b>x</b>', route: 'chain_tip', ageSeconds: 3 },
    });
    expect(report.cache.redis).toEqual({ keys: 5, usedMemoryBytes: null, evictedKeys: 0, maxBytes: 0 });
    expect(report.live).toEqual({ pushFeed: true, fanout: true, fanoutClients: { rpc: 2, socketIo: 0 } });
  });
});

describe("statusReport: the burn tip and the tip block's anchor", () => {
  const tip = { height: 10, indexBlockHash: '0xabc', burnHeight: 666_146 };

  it('gives both, from the tip or from the chain view of that same tip', () => {
    const own = statusReport(sources({ tip: { ...tip, anchorBurnHeight: 666_122 } })) as unknown as Report;
    expect(own.chain.tip).toMatchObject({ burnHeight: 666_146, anchorBurnHeight: 666_122 });
    const viewed = statusReport(sources({ tip, chain: { reorgs: [], tipHash: '0xabc', tipAnchorBurnHeight: 666_140 } })) as unknown as Report;
    expect(viewed.chain.tip).toMatchObject({ burnHeight: 666_146, anchorBurnHeight: 666_140 });
  });

  it('says null while it is not read, and never takes the anchor of a view of another tip', () => {
    expect((statusReport(sources({ tip })) as unknown as Report).chain.tip?.anchorBurnHeight).toBeNull();
    const other = statusReport(sources({ tip, chain: { reorgs: [], tipHash: '0xdef', tipAnchorBurnHeight: 666_140 } })) as unknown as Report;
    expect(other.chain.tip?.anchorBurnHeight).toBeNull();
  });
});

describe("the page's words for the tip block's anchor (tipAnchorText)", () => {
  it('names the anchor and how many burn blocks came without a Stacks block since', () => {
    expect(tipAnchorText(666_146, 666_122)).toBe('666,122 (24 burn blocks without a Stacks block yet)');
    expect(tipAnchorText(101, 100)).toBe('100 (1 burn block without a Stacks block yet)');
    expect(tipAnchorText(100, 100)).toBe('100 (the burn tip)');
  });

  it('says "unknown" before the anchor is read, and states an anchor above the burn tip read as it is', () => {
    expect(tipAnchorText(100, null)).toBe('unknown (not read yet)');
    expect(tipAnchorText(100, undefined)).toBe('unknown (not read yet)');
    expect(tipAnchorText(100, 102)).toBe('102 (2 above the burn tip last read)');
  });

  it('is what the page runs, next to the burn tip', () => {
    expect(STATUS_JS).toContain(tipAnchorText.toString());
    expect(STATUS_JS).toContain("setText('tip-anchor', tip ? tipAnchorText(tip.burnHeight, tip.anchorBurnHeight) : '–')");
    expect(STATUS_HTML).toContain('<dt>Burn tip</dt><dd id="tip-burn">–</dd>\n      <dt>Tip block anchored at</dt><dd id="tip-anchor">–</dd>');
    // Its source is plain script the browser parses with the rest.
    expect(() => new Function(STATUS_JS)).not.toThrow();
  });
});

describe("statusReport: an upstream's recent failures", () => {
  it('lists them newest first with their ages, next to the last error; none when the upstream reports none', () => {
    const recentFailures = [
      { kind: 'timeout', route: 'block', message: 'timeout from http://a', ageMs: 4_000 },
      { kind: '5xx', route: 'chain_tip', message: 'status 502 from http://a', ageMs: 1_500 },
    ];
    const report = statusReport(
      sources({
        upstreams: [
          { origin: 'http://a', usable: false, breaker: 'open', recentFailures },
          { origin: 'http://b', usable: true, breaker: 'closed' },
        ],
      }),
    ) as unknown as Report;
    expect(report.upstreams[0]?.recentFailures).toEqual([
      { kind: '5xx', route: 'chain_tip', message: 'status 502 from http://a', ageSeconds: 1.5 },
      { kind: 'timeout', route: 'block', message: 'timeout from http://a', ageSeconds: 4 },
    ]);
    expect(report.upstreams[1]?.recentFailures).toEqual([]);
  });
});

describe('statusReport push mode', () => {
  it('says per upstream push or poll, why, and in how long that may change; null where this process does not follow the tip', () => {
    const report = statusReport(
      sources({
        upstreams: ['http://a', 'http://b', 'http://c'].map((origin) => ({ origin, usable: true, breaker: 'closed' })),
        pushModes: {
          'http://a': { mode: 'push' },
          'http://b': { mode: 'poll', reason: 'upgrade refused 404', retryAt: 1_000_000 + 120_000 },
        },
      }),
    ) as unknown as Report;
    expect(report.upstreams.map((u) => u.push)).toEqual([
      { mode: 'push', reason: null, retryInSeconds: null },
      { mode: 'poll', reason: 'upgrade refused 404', retryInSeconds: 120 },
      null,
    ]);
  });

  it('never says a retry is overdue by a negative time', () => {
    const report = statusReport(sources({ pushModes: { 'http://a': { mode: 'poll', reason: 'connecting', retryAt: 999_000 } } })) as unknown as Report;
    expect(report.upstreams[0]?.push).toEqual({ mode: 'poll', reason: 'connecting', retryInSeconds: 0 });
  });
});

describe('StatusRecord', () => {
  it("keeps each upstream's last failure, texts cut, and attributes a tip poll error that names its upstream", () => {
    let now = 0;
    const record = new StatusRecord(() => now);
    record.upstreamFailed('http://a', 'block', { kind: 'timeout', message: 'x'.repeat(2_000) });
    now = 5;
    record.tipPollFailed(Object.assign(new Error('refused by b'), { upstream: 'http://b', kind: 'invalid' }));
    record.tipPollFailed(new Error('no upstream answered'));
    const failures = record.lastFailures();
    expect(failures['http://a']?.message.length).toBeLessThanOrEqual(500);
    expect(failures['http://b']).toEqual({ kind: 'invalid', message: 'refused by b', route: 'chain_tip', at: 5 });
    expect(record.lastTipPollFailure()).toEqual({ message: 'no upstream answered', at: 5, upstream: undefined });
  });

  it('keeps the latest purges and reorgs, newest first, bounded', () => {
    let now = 0;
    const record = new StatusRecord(() => now);
    for (let i = 0; i < RECENT_KEPT + 5; i++) {
      now = i;
      record.purged('route', 'admin', { memory: i, redis: null });
      record.reorgDetected(i, { height: i + 2, burnHeight: 1 }, { height: i + 3, burnHeight: 1 });
    }
    expect(record.recentPurges()).toHaveLength(RECENT_KEPT);
    expect(record.recentPurges()[0]?.removed.memory).toBe(RECENT_KEPT + 4);
    expect(record.recentReorgs()[0]?.forkHeight).toBe(RECENT_KEPT + 4);
  });
});
