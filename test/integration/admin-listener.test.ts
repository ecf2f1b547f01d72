/**
 * The admin listener over real HTTP: its token, its stats, every purge kind (the next request
 * for a purged entry is a MISS, unrelated entries stay HITs), a purge through one instance
 * seen in the memory tier of another sharing Redis, and what the public port no longer serves.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, startRedis, testConfig, type FakeUpstream, type TestRedis } from '../../testkit/index.js';
import { startProxy, type ProxyServer } from '../../src/composition-root.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw, type RawResponse } from '../support/http.js';

const TOKEN = 'admin-test-token-0123456789abcdef';
const UNAUTHORIZED = '{"statusCode":401,"error":"Unauthorized","message":"the admin API needs Authorization: Bearer <ADMIN_TOKEN>"}';

let upstream: FakeUpstream;
let redis: TestRedis;
/** Two instances sharing Redis, with the admin API on. */
let first: ProxyServer;
let second: ProxyServer;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  redis = await startRedis();
  const overrides = { admin: { token: TOKEN } };
  first = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url, overrides });
  second = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url, overrides });
  await Promise.all([first.purgeChannelSubscribed, second.purgeChannelSubscribed]);
});
afterAll(async () => {
  await first?.close();
  await second?.close();
  await upstream?.close();
  await redis?.stop();
});

const xCache = async (proxy: ProxyServer, path: string): Promise<string | null> => {
  const answer = await fetchRaw(proxy.url + path);
  expect(answer.status, path).toBe(200);
  return answer.headers.get('x-cache');
};

function admin(proxy: ProxyServer, method: string, path: string, options: { token?: string | null; body?: string } = {}): Promise<RawResponse> {
  const token = options.token === undefined ? TOKEN : options.token;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  return fetchRaw(proxy.adminUrl + path, { method, headers, body: options.body });
}

async function purge(proxy: ProxyServer, body: unknown): Promise<{ purged: { memory: number; redis: number | null }; matched: unknown }> {
  const answer = await admin(proxy, 'POST', '/admin/purge', { body: JSON.stringify(body) });
  expect(answer.status, answer.body.toString()).toBe(200);
  return JSON.parse(answer.body.toString()) as { purged: { memory: number; redis: number | null }; matched: unknown };
}

/** Every path cached in both instances' memory tiers (and Redis): a HIT on each. */
async function warm(paths: string[]): Promise<void> {
  for (const path of paths) {
    await xCache(first, path);
    await xCache(second, path);
  }
  for (const path of paths) {
    expect(await xCache(first, path), path).toBe('HIT');
    expect(await xCache(second, path), path).toBe('HIT');
  }
}

const memoryHits = (proxy: ProxyServer) => metricValue(proxy, 'stacks_proxy_cache_lookups_total', { tier: 'memory', result: 'hit' });

/**
 * Purges through the first instance; waits until the second has applied the announcement.
 * Then every target is a MISS on the second (its memory tier and Redis are purged), and not
 * a memory hit on the first (its own memory tier is purged: the entries the second just
 * fetched come from Redis); every unrelated path stays a HIT on both.
 */
async function expectPurged(body: unknown, targets: string[], unrelated: string[]): Promise<void> {
  const heard = second.purger.counts.fromPeers;
  // The metric's kind is the selector's: a URL purges its keys, tx_id purges a tx.
  const field = Object.keys(body as object)[0] as string;
  const kind = ({ url: 'keys', tx_id: 'tx' } as Record<string, string>)[field] ?? field;
  const purges = (proxy: ProxyServer, origin: string) => metricValue(proxy, 'stacks_proxy_cache_purges_total', { kind, origin });
  const [askedBefore, heardBefore] = [await purges(first, 'admin'), await purges(second, 'peer')];
  const answer = await purge(first, body);
  expect(await purges(first, 'admin')).toBe(askedBefore + 1);
  expect(answer.purged.memory).toBeGreaterThanOrEqual(targets.length > 0 ? 1 : 0);
  expect(answer.purged.redis).toBeGreaterThanOrEqual(1);
  await expect.poll(() => second.purger.counts.fromPeers, { timeout: 5_000 }).toBe(heard + 1);
  expect(await purges(second, 'peer')).toBe(heardBefore + 1);
  for (const path of targets) expect(await xCache(second, path), `second ${path}`).toBe('MISS');
  const before = await memoryHits(first);
  for (const path of targets) await xCache(first, path);
  expect(await memoryHits(first)).toBe(before);
  for (const path of unrelated) {
    expect(await xCache(first, path), `first ${path}`).toBe('HIT');
    expect(await xCache(second, path), `second ${path}`).toBe('HIT');
  }
}

const P = RECORDED.principal;
const TX = RECORDED.confirmedTxId;
const OTHER_BLOCK = '/extended/v2/blocks/2';
const OTHER_PRINCIPAL = `/extended/v1/address/${RECORDED.principalWithoutTxs}/stx`;

describe('the admin API', () => {
  it('refuses every operation without the token and with a wrong one (401 in the upstream shape); the right one works', async () => {
    const calls = [
      ['GET', '/admin/cache', undefined],
      ['POST', '/admin/purge', '{"all":true}'],
    ] as const;
    for (const [method, path, body] of calls) {
      for (const token of [null, 'wrong-token', `${TOKEN}x`, TOKEN.slice(0, -1)]) {
        const refused = await admin(first, method, path, { token, body });
        expect(refused.status, `${method} ${path} ${token}`).toBe(401);
        expect(refused.body.toString()).toBe(UNAUTHORIZED);
        expect(refused.headers.get('www-authenticate')).toBe('Bearer');
      }
      const basic = await fetchRaw(first.adminUrl + path, { method, headers: { authorization: `Basic ${TOKEN}` }, body });
      expect(basic.status).toBe(401);
      expect((await admin(first, method, path, { body })).status, `${method} ${path}`).toBe(200);
    }
  });

  it('GET /admin/cache: entries and bytes per tier, lookups per class with the hit ratio, the tip', async () => {
    await warm([OTHER_BLOCK]);
    const answer = await admin(first, 'GET', '/admin/cache');
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const stats = JSON.parse(answer.body.toString()) as {
      tiers: { memory: { entries: number; bytes: number }; redis: { keys: number; usedMemoryBytes: number } };
      lookups: Record<string, { hit: number; miss: number; total: number; hitRatio: number | null }>;
      tip: { height: number; indexBlockHash: string; burnHeight: number; finalBurnHeight: number };
    };
    expect(stats.tiers.memory.entries).toBe(first.store.memory.entryCount);
    expect(stats.tiers.memory.bytes).toBe(first.store.memory.byteCount);
    expect(stats.tiers.redis.keys).toBeGreaterThanOrEqual(1);
    expect(stats.tiers.redis.usedMemoryBytes).toBeGreaterThan(0);
    const all = stats.lookups.all!;
    expect(all.hit).toBe(await metricValue(first, 'stacks_proxy_cache_lookups_total', { result: 'hit' }));
    expect(all.total).toBe(await metricValue(first, 'stacks_proxy_cache_lookups_total'));
    expect(all.hitRatio).toBeCloseTo((all.hit + (all as unknown as { stale: number }).stale) / all.total, 10);
    expect(stats.lookups.final!.hit).toBeGreaterThanOrEqual(1);
    expect(stats.tip).toEqual({
      height: RECORDED.tipHeight,
      indexBlockHash: RECORDED.tipIndexHash,
      burnHeight: RECORDED.tipBurnHeight,
      finalBurnHeight: RECORDED.tipBurnHeight - 6,
      finalStacksHeight: expect.any(Number),
    });
  });

  it('refuses malformed purges with 400 and a clear message in the upstream shape', async () => {
    const cases: Array<[string, string]> = [
      ['not json', 'body must be a JSON object'],
      ['[]', 'body must be a JSON object'],
      ['{}', 'body must have exactly one of url, route, tx_id, principal, block, all'],
      ['{"all":true,"route":"block"}', 'body must have exactly one of url, route, tx_id, principal, block, all'],
      ['{"all":false}', 'all must be true'],
      ['{"route":"nope"}', 'route must be one of '],
      ['{"tx_id":"0x12"}', 'tx_id must be a transaction id: 64 hex digits, 0x optional'],
      ['{"principal":"nobody"}', 'principal must be a Stacks address or contract id'],
      ['{"block":"x"}', 'block must be a block height or a block hash (64 hex digits, 0x optional)'],
      ['{"url":"/v2/info"}', 'url /v2/info is not one of the cached routes'],
      ['{"url":"/extended/v2/blocks/xyz"}', 'url is not a valid request for block: '],
      [`{"url":"/extended/v1/tx/${TX.slice(2)}"}`, `url is redirected to /extended/v1/tx/${TX}: purge that url`],
    ];
    for (const [body, message] of cases) {
      const answer = await admin(first, 'POST', '/admin/purge', { body });
      expect(answer.status, body).toBe(400);
      const parsed = JSON.parse(answer.body.toString()) as { statusCode: number; error: string; message: string };
      expect(parsed.statusCode).toBe(400);
      expect(parsed.error).toBe('Bad Request');
      expect(parsed.message.startsWith(message), `${body}: ${parsed.message}`).toBe(true);
    }
    const huge = await admin(first, 'POST', '/admin/purge', { body: JSON.stringify({ url: `/${'a'.repeat(20_000)}` }) });
    expect(huge.status).toBe(400);
    expect(huge.body.toString()).toBe('{"statusCode":400,"error":"Bad Request","message":"body must not be larger than 16384 bytes"}');
    const form = await fetchRaw(`${first.adminUrl}/admin/purge`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'all=true',
    });
    expect(form.status).toBe(400);
    expect(form.body.toString()).toBe('{"statusCode":400,"error":"Bad Request","message":"content-type must be application/json"}');
    const wrongMethod = await admin(first, 'GET', '/admin/purge');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
  });
});

describe('purges, through one instance, seen in both memory tiers and Redis', () => {
  it('url: the canonical key of the request as a client sends it', async () => {
    const target = `/extended/v1/address/${P}/transactions?limit=5`;
    await warm([target, `/extended/v1/address/${P}/transactions?limit=6`, OTHER_BLOCK]);
    // Another spelling of the same request: offset=0 is the default, parameters in another order.
    await expectPurged(
      { url: `/extended/v1/address/${P}/transactions?offset=0&limit=5` },
      [target],
      [`/extended/v1/address/${P}/transactions?limit=6`, OTHER_BLOCK],
    );
  });

  it('url of a tx/multiple list: its members, which /tx/{id} shares', async () => {
    await warm([`/extended/v1/tx/${TX}`, `/extended/v1/tx/multiple?tx_id=${TX}`, OTHER_BLOCK]);
    // The list and /tx/{id} share the member's entry: whichever is asked first fetches it again for both.
    await expectPurged({ url: `/extended/v1/tx/multiple?tx_id=${TX}` }, [`/extended/v1/tx/${TX}`], [OTHER_BLOCK]);
  });

  it('route: every entry of that route', async () => {
    const burn = `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`;
    await warm(['/extended/v2/blocks/1', OTHER_BLOCK, burn, OTHER_PRINCIPAL]);
    await expectPurged({ route: 'block' }, ['/extended/v2/blocks/1', OTHER_BLOCK], [burn, OTHER_PRINCIPAL]);
  });

  it('tx_id: /tx/{id}, tx/multiple members (found or not) and events by tx id', async () => {
    // /tx/{id} and the list share the transaction's entry (the url case above asks /tx/{id}).
    const targets = [`/extended/v1/tx/multiple?tx_id=${TX}`, `/extended/v1/tx/events?tx_id=${TX}`];
    const unrelated = [`/extended/v1/tx/events?address=${P}`, OTHER_BLOCK];
    await warm([...targets, ...unrelated]);
    await expectPurged({ tx_id: TX.slice(2).toUpperCase() }, targets, unrelated);
    // A member the upstream does not know is kept apart (tx_list_member).
    const unknown = `/extended/v1/tx/multiple?tx_id=${RECORDED.unknownTxId}`;
    await warm([unknown, OTHER_BLOCK]);
    await expectPurged({ tx_id: RECORDED.unknownTxId }, [unknown], [OTHER_BLOCK]);
  });

  it('principal: every address route for it', async () => {
    const targets = [
      `/extended/v1/address/${P}/stx`,
      `/extended/v1/address/${P}/balances`,
      `/extended/v1/address/${P}/transactions?limit=5`,
      `/extended/v2/addresses/${P}/transactions`,
      `/extended/v1/tx/events?address=${P}`,
    ];
    const unrelated = [OTHER_PRINCIPAL, `/extended/v1/tx/events?tx_id=${TX}`, OTHER_BLOCK];
    await warm([...targets, ...unrelated]);
    await expectPurged({ principal: P }, targets, unrelated);
  });

  it('block: by height, hash and index block hash, and its burn block, from the cached entry', async () => {
    const block = JSON.parse((await fetchRaw(`${upstream.url}/extended/v2/blocks/1`)).body.toString()) as {
      hash: string;
      index_block_hash: string;
      burn_block_height: number;
    };
    const targets = [
      '/extended/v2/blocks/1',
      `/extended/v2/blocks/${block.hash}`,
      `/extended/v2/blocks/${block.index_block_hash}`,
      `/extended/v1/block/by_burn_block_height/${block.burn_block_height}`,
    ];
    const unrelated = [OTHER_BLOCK, `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`];
    await warm([...targets, ...unrelated]);
    // Named by its hash: the height, index block hash and burn height come from the cached entry.
    await expectPurged({ block: block.hash }, targets, unrelated);
  });

  it('all: every entry', async () => {
    const targets = ['/extended/v2/blocks/1', `/extended/v1/tx/${TX}`, `/extended/v1/address/${P}/stx`];
    await warm(targets);
    await expectPurged({ all: true }, targets, []);
  });
});

describe('the public port', () => {
  it('serves neither /admin nor /metrics by default, and /ready without details; the admin listener has them', async () => {
    upstream.resetCounts();
    for (const [method, path] of [
      ['GET', '/admin/cache'],
      ['POST', '/admin/purge'],
      ['GET', '/metrics'],
    ] as const) {
      const answer = await fetchRaw(first.url + path, {
        method,
        headers: { authorization: `Bearer ${TOKEN}` },
        body: method === 'POST' ? '{"all":true}' : undefined,
      });
      expect(answer.status, path).toBe(404);
      expect(answer.body.toString()).toBe(`{"message":"Route ${method}:${path} not found","error":"Not Found","statusCode":404}`);
    }
    expect(upstream.count()).toBe(0);
    const ready = await fetchRaw(`${first.url}/ready`);
    expect(ready.status).toBe(200);
    expect(ready.body.toString()).toBe('{"status":"ready"}');
    const detailed = JSON.parse((await fetchRaw(`${first.adminUrl}/ready`)).body.toString()) as {
      status: string;
      details: { tipHeight: number; upstreams: unknown[] };
    };
    expect(detailed.status).toBe('ready');
    expect(detailed.details.tipHeight).toBe(RECORDED.tipHeight);
    expect(detailed.details.upstreams).toHaveLength(1);
    const metrics = await fetchRaw(`${first.adminUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.body.toString()).toContain('stacks_proxy_http_requests_total');
  });

  it('serves /metrics when metrics.onPublicPort is set', async () => {
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { metrics: { onPublicPort: true } } });
    try {
      const metrics = await fetchRaw(`${proxy.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.body.toString()).toContain('stacks_proxy_http_requests_total');
    } finally {
      await proxy.close();
    }
  });
});

describe('without ADMIN_TOKEN', () => {
  it('the admin API is off (404 in the upstream shape), /metrics, /health and /ready still answer, and start-up says so once', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(
          ...chunk
            .toString()
            .split('\n')
            .filter((line) => line.length > 0),
        );
        done();
      },
    });
    const config = testConfig({ upstreamUrls: [upstream.url] });
    expect(config.admin.token).toBeNull();
    const proxy = await startProxy(config, { logger: pino({ level: 'info' }, sink), defaultMetrics: false });
    try {
      const off = lines.filter((line) => line.includes('admin API off'));
      expect(off).toHaveLength(1);
      expect(JSON.parse(off[0]!)).toMatchObject({ level: 40, msg: 'admin API off: admin.token (ADMIN_TOKEN) is not set (/admin/* answers 404)' });
      for (const [method, path] of [
        ['GET', '/admin/cache'],
        ['POST', '/admin/purge'],
      ] as const) {
        const answer = await fetchRaw(proxy.adminUrl + path, {
          method,
          headers: { authorization: `Bearer ${TOKEN}` },
          body: method === 'POST' ? '{"all":true}' : undefined,
        });
        expect(answer.status).toBe(404);
        expect(answer.body.toString()).toBe(`{"message":"Route ${method}:${path} not found","error":"Not Found","statusCode":404}`);
      }
      for (const path of ['/metrics', '/health', '/ready']) expect((await fetchRaw(proxy.adminUrl + path)).status, path).toBe(200);
    } finally {
      await proxy.close();
    }
  });
});

describe('without Redis', () => {
  it('a memory-only instance purges its memory tier; the next request is a MISS, others stay HITs', async () => {
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { admin: { token: TOKEN } } });
    try {
      for (const path of ['/extended/v2/blocks/1', OTHER_BLOCK]) await xCache(proxy, path);
      const answer = await admin(proxy, 'POST', '/admin/purge', { body: '{"block":1}' });
      expect(JSON.parse(answer.body.toString())).toMatchObject({ purged: { memory: 1, redis: null } });
      expect(await xCache(proxy, '/extended/v2/blocks/1')).toBe('MISS');
      expect(await xCache(proxy, OTHER_BLOCK)).toBe('HIT');
    } finally {
      await proxy.close();
    }
  });
});

describe('a purge storm', () => {
  const BLOCK = '/extended/v2/blocks/1';
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const startCoalescing = (coalesceMs: number) =>
    startTestProxy({ upstreamUrls: [upstream.url], overrides: { admin: { token: TOKEN }, cache: { purge: { coalesceMs } } } });

  it('under steady traffic costs the upstream at most one refetch per coalescing window, and every purge is answered 200', async () => {
    const WINDOW_MS = 200;
    const proxy = await startCoalescing(WINDOW_MS);
    try {
      await xCache(proxy, BLOCK);
      const fetchedBefore = upstream.count(BLOCK);
      // A client reading the block without pause, and a purge of everything every 20 ms, not waiting for answers.
      let stormOver = false;
      const traffic = (async () => {
        while (!stormOver) await xCache(proxy, BLOCK);
      })();
      const started = performance.now();
      const purges: Array<Promise<RawResponse>> = [];
      for (let i = 0; i < 50; i++) {
        purges.push(admin(proxy, 'POST', '/admin/purge', { body: '{"all":true}' }));
        await sleep(20);
      }
      const answers = await Promise.all(purges);
      const elapsedMs = performance.now() - started;
      stormOver = true;
      await traffic;
      expect(answers.map((answer) => answer.status)).toEqual(new Array(50).fill(200));

      // The first purge at once, then at most one per window: a bound that grows with the time the storm really took.
      const mostPurges = Math.ceil(elapsedMs / WINDOW_MS) + 1;
      const carriedOut = await metricValue(proxy, 'stacks_proxy_cache_purges_total', { kind: 'all', origin: 'admin' });
      expect(carriedOut).toBeLessThanOrEqual(mostPurges);
      expect(upstream.count(BLOCK) - fetchedBefore).toBeLessThanOrEqual(carriedOut);
      // What an alert sees: 50 asked, the rest coalesced into the ones carried out.
      expect(await metricValue(proxy, 'stacks_proxy_cache_purge_requests_total', { kind: 'all' })).toBe(50);
      expect(await metricValue(proxy, 'stacks_proxy_cache_purges_coalesced_total')).toBe(50 - carriedOut);
    } finally {
      await proxy.close();
    }
  });

  it('answers a purge that waited for the next batch only after that batch purged its entry', async () => {
    const proxy = await startCoalescing(2_000);
    try {
      await xCache(proxy, BLOCK);
      expect((await purge(proxy, { all: true })) as unknown).toMatchObject({ coalesced: false, matched: { kind: 'all' } });
      // Refilled within the window that purge opened.
      expect(await xCache(proxy, BLOCK)).toBe('MISS');
      expect(await xCache(proxy, BLOCK)).toBe('HIT');
      // Two purges of the URL in that window: they wait for the next batch and share one purge.
      const answers = await Promise.all([purge(proxy, { url: BLOCK }), purge(proxy, { url: BLOCK })]);
      expect(answers.map((answer) => (answer as unknown as { coalesced: boolean }).coalesced)).toEqual([true, true]);
      expect(answers.map((answer) => answer.purged.memory)).toEqual([1, 1]);
      expect(await xCache(proxy, BLOCK)).toBe('MISS');
      expect(await metricValue(proxy, 'stacks_proxy_cache_purges_total', { origin: 'admin' })).toBe(2);
      expect(await metricValue(proxy, 'stacks_proxy_cache_purges_coalesced_total')).toBe(1);
    } finally {
      await proxy.close();
    }
  });
});
