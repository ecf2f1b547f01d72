/**
 * The operator's status page over real HTTP to the admin listener: / and /status.json need no
 * token while the admin API still does; the page's files carry a strict Content-Security-Policy
 * and no inline script, style or event handler; the JSON follows the fake upstream's tip as it
 * moves, shows an upstream's last error (its own words included) after a failure, counts
 * requests per route and class with rates sampled in the process, lists purges, and reports the
 * Redis tier when there is one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, startRedis, waitFor, type FakeUpstream, type TestRedis } from '../../testkit/index.js';
import type { ProxyServer } from '../../src/composition-root.js';
import { startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';

const TOKEN = 'status-test-token-0123456789abcdef';
const HOSTILE = '<img src=x onerror=alert(1)> key "refused" & more';

let upstream: FakeUpstream;
let proxy: ProxyServer;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  // A fast tip poll: the page must follow the chain within seconds; a short breaker cool-down,
  // so the upstream is back within a second of a test's failures ending.
  proxy = await startTestProxy({
    upstreamUrls: [upstream.url],
    overrides: { admin: { token: TOKEN }, chainTip: { pollIntervalMs: 100 }, upstream: { cooldownMs: 500 } },
  });
});
afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
});

interface Status {
  generatedAt: string;
  chain: {
    tip: { height: number; indexBlockHash: string; burnHeight: number; anchorBurnHeight: number | null; ageSeconds: number } | null;
    finality: { stacksHeight: number; burnHeight: number } | null;
    lastPollError: { message: string; upstream: string | null } | null;
    reorgs: { total: number; recent: Array<{ forkHeight: number; from: { height: number }; to: { height: number } }> };
  };
  upstreams: Array<{
    origin: string;
    usable: boolean;
    breaker: string;
    tipHeight: number | null;
    lagBlocks: number | null;
    lastError: { kind: string; message: string; route: string } | null;
    recentFailures: Array<{ kind: string; message: string; route: string; ageSeconds: number }>;
  }>;
  traffic: { requests: number; requestsPerSecond: number | null; upstreamRequests: number; upstreamRequestsPerSecond: number | null };
  hitRatio: { overall: Results; byClass: Record<string, Results>; byRoute: Record<string, Results> };
  cache: {
    memory: { entries: number; bytes: number; maxBytes: number };
    redis: { keys: number; usedMemoryBytes: number | null; maxBytes: number | null } | null;
  };
  purges: { local: number; recent: Array<{ kind: string; origin: string }> };
  live: { pushFeed: boolean; fanout: boolean };
}
interface Results {
  hit: number;
  miss: number;
  hitRatio: number | null;
}

async function status(of: ProxyServer = proxy): Promise<Status> {
  const answer = await fetchRaw(`${of.adminUrl}/status.json`);
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
  return JSON.parse(answer.body.toString()) as Status;
}

async function statusWhen(test: (s: Status) => boolean, what: string): Promise<Status> {
  let last: Status | undefined;
  await waitFor(async () => test((last = await status())), { timeoutMs: 10_000, what });
  return last as Status;
}

describe('access', () => {
  it('serves the page and its JSON without a token, while the admin API still needs one', async () => {
    for (const path of ['/', '/status.json', '/status.js', '/status.css']) {
      const answer = await fetchRaw(proxy.adminUrl + path);
      expect(answer.status, path).toBe(200);
    }
    expect((await fetchRaw(`${proxy.adminUrl}/admin/cache`)).status).toBe(401);
    expect((await fetchRaw(`${proxy.adminUrl}/admin/cache`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    // Not on the public port.
    expect((await fetchRaw(`${proxy.url}/status.json`)).status).toBe(404);
  });

  it('refuses other methods as the admin listener does for unknown requests', async () => {
    expect((await fetchRaw(`${proxy.adminUrl}/status.json`, { method: 'POST', body: '{}' })).status).toBe(404);
  });
});

describe('the page', () => {
  it('is HTML with a strict Content-Security-Policy and nothing inline', async () => {
    const answer = await fetchRaw(`${proxy.adminUrl}/`);
    expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = answer.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    const html = answer.body.toString();
    expect(html).toMatch(/^<!doctype html>/);
    // No inline event handler, no inline script or style, no javascript: URL.
    expect(html).not.toMatch(/\son[a-z]+\s*=/i);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(html).not.toMatch(/<style|\sstyle\s*=/i);
    expect(html).not.toMatch(/javascript:/i);
    expect(html).toContain('<script src="status.js" defer></script>');
  });

  it('serves its script and stylesheet with their types, and the script never parses markup', async () => {
    const script = await fetchRaw(`${proxy.adminUrl}/status.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('content-security-policy')).toContain("script-src 'self'");
    const code = script.body.toString();
    expect(code).toContain("fetch('status.json'");
    expect(code).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
    const css = await fetchRaw(`${proxy.adminUrl}/status.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
  });
});

describe('the JSON', () => {
  it('follows the fake upstream tip as it moves', async () => {
    const first = await statusWhen((s) => s.chain.tip?.height === upstream.tip().height, 'the first tip');
    expect(first.chain.tip?.indexBlockHash).toBe(upstream.tip().index_block_hash);
    expect(first.chain.tip?.burnHeight).toBe(upstream.tip().burn_block_height);
    // The tip block's own anchor, once the chain model has read it (null until then).
    const tipBlock = JSON.parse((await fetchRaw(`${upstream.url}/extended/v2/blocks/${upstream.tip().index_block_hash}`)).body.toString()) as {
      burn_block_height: number;
    };
    expect([null, tipBlock.burn_block_height]).toContain(first.chain.tip?.anchorBurnHeight);
    expect(first.upstreams).toHaveLength(1);
    expect(first.upstreams[0]).toMatchObject({
      origin: new URL(upstream.url).origin,
      usable: true,
      breaker: 'closed',
      tipHeight: upstream.tip().height,
      lagBlocks: 0,
      lastError: null,
      recentFailures: [],
    });

    upstream.advanceTip(2);
    const moved = await statusWhen((s) => s.chain.tip?.height === upstream.tip().height, 'the tip two blocks on');
    expect(moved.chain.tip?.indexBlockHash).toBe(upstream.tip().index_block_hash);
    expect(moved.chain.tip?.ageSeconds).toBeLessThan(10);
    expect(moved.upstreams[0]?.tipHeight).toBe(upstream.tip().height);
  });

  it('counts requests per route with a hit ratio, and rates from samples taken in the process', async () => {
    const path = '/extended/v2/blocks/2';
    for (let i = 0; i < 3; i++) expect((await fetchRaw(proxy.url + path)).status).toBe(200);
    await status(); // a sample to measure from
    for (let i = 0; i < 20; i++) await fetchRaw(proxy.url + path);
    const later = await statusWhen((s) => (s.traffic.requestsPerSecond ?? 0) > 0, 'a request rate');
    const block = later.hitRatio.byRoute.block;
    expect(block?.miss).toBeGreaterThanOrEqual(1);
    expect(block?.hit).toBeGreaterThanOrEqual(22);
    expect(block?.hitRatio).toBeGreaterThan(0.9);
    expect(later.traffic.requests).toBeGreaterThanOrEqual(23);
    expect(later.traffic.upstreamRequests).toBeGreaterThan(0);
    expect(Object.keys(later.hitRatio.byClass).length).toBeGreaterThan(0);
    expect(later.cache.memory.entries).toBeGreaterThan(0);
    expect(later.cache.memory.maxBytes).toBeGreaterThan(later.cache.memory.bytes);
    expect(later.cache.redis).toBeNull();
    expect(later.live).toEqual(expect.objectContaining({ pushFeed: false }));
  });

  it("shows an upstream's last error, with the upstream's own words, after a failure", async () => {
    upstream.setFailing({ status: 401, body: JSON.stringify({ error: 'Unauthorized', message: HOSTILE }) }, /^\/extended(\?|$)/);
    try {
      const failed = await statusWhen((s) => s.upstreams[0]?.lastError !== null, 'the upstream error');
      const error = failed.upstreams[0]?.lastError;
      expect(error?.route).toBe('chain_tip');
      expect(error?.kind).toBe('invalid');
      // The text as the upstream sent it: escaping is the page's job, never the data's.
      expect(error?.message).toContain(`answered 401 without a chain_tip: ${HOSTILE}`);
      expect(failed.chain.lastPollError?.upstream).toBe(new URL(upstream.url).origin);
      // The refused polls are its failures since its last success (waited for: any other read
      // that succeeds in between, such as the block learner's, starts the list over).
      const listed = await statusWhen((s) => (s.upstreams[0]?.recentFailures.length ?? 0) > 0, 'the refused poll among the recent failures');
      expect(listed.upstreams[0]?.recentFailures[0]).toMatchObject({
        kind: 'invalid',
        route: 'chain_tip',
        message: expect.stringContaining('answered 401 to chain_tip'),
      });
    } finally {
      upstream.setFailing(null);
    }
    upstream.setFailing({ status: 502 }, /^\/extended(\?|$)/);
    try {
      const failed = await statusWhen((s) => s.upstreams[0]?.lastError?.kind === '5xx', 'a gateway error');
      expect(failed.upstreams[0]?.lastError?.message).toContain('status 502');
    } finally {
      upstream.setFailing(null);
    }
    // A good poll is a success: the list starts over.
    await statusWhen((s) => s.upstreams[0]?.recentFailures.length === 0, 'the failures cleared by a good poll');
  });

  it('lists purges carried out here', async () => {
    const purge = await fetchRaw(`${proxy.adminUrl}/admin/purge`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ route: 'block' }),
    });
    expect(purge.status).toBe(200);
    const after = await status();
    expect(after.purges.local).toBeGreaterThanOrEqual(1);
    expect(after.purges.recent[0]).toMatchObject({ kind: 'route', origin: 'admin' });
  });
});

describe('with Redis', () => {
  let redis: TestRedis;
  let shared: ProxyServer;
  beforeAll(async () => {
    redis = await startRedis();
    shared = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url });
  });
  afterAll(async () => {
    await shared?.close();
    await redis?.stop();
  });

  it('reports the Redis tier: keys, bytes and its bound', async () => {
    expect((await fetchRaw(`${shared.url}/extended/v2/blocks/3`)).status).toBe(200);
    let seen: Status | undefined;
    await waitFor(async () => ((seen = await status(shared)).cache.redis?.keys ?? 0) > 0, { timeoutMs: 10_000, what: 'a key in Redis' });
    expect(seen?.cache.redis?.usedMemoryBytes).toBeGreaterThan(0);
    expect(typeof seen?.cache.redis?.maxBytes).toBe('number');
  });
});
