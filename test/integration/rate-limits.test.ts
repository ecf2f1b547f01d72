/**
 * Client rate limits and API keys (issue 9), through real HTTP: a fake upstream that counts its
 * requests, real Redis for the shared budget, the injected clock for window resets.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, startRedis, waitFor, type FakeUpstream, type TestRedis } from '../../testkit/index.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw, type RawResponse } from '../support/http.js';
import { exchangeRaw, parseResponses, rawGet, type ParsedResponse } from '../support/raw-socket.js';
import WebSocket from 'ws';
import type { ProxyServer } from '../../src/composition-root.js';
import { sha256Hex } from '../../src/limits/api-keys.js';
import { pino, type Logger } from 'pino';

const WINDOW_MS = 60_000;
// A window boundary, so that the window's reset is START + WINDOW_MS.
const START = 1_800_000_000_000;
const RESET = String((START + WINDOW_MS) / 1000);
const TX = `/extended/v1/tx/${RECORDED.confirmedTxId}`;
const block = (height: number) => `/extended/v2/blocks/${height}`;

let upstream: FakeUpstream;
const proxies: ProxyServer[] = [];

beforeAll(async () => {
  upstream = await startFakeUpstream();
});
afterEach(async () => {
  for (const proxy of proxies.splice(0)) await proxy.close();
});
afterAll(async () => {
  await upstream.close();
});

interface Limits {
  anonymous?: number;
  keyed?: number;
  trustedProxies?: string[];
  hitCost?: number;
  missCost?: number;
  apiKeys?: Array<{ name: string; sha256: string; limit?: number }>;
  maxTrackedClients?: number;
  redisUrl?: string;
  clock?: { now: number };
  accessLog?: { enabled: boolean; hitsEvery: number; refusalsEvery: number };
  logger?: Logger;
}

async function start(limits: Limits = {}): Promise<ProxyServer> {
  const clock = limits.clock ?? { now: START };
  const proxy = await startTestProxy({
    upstreamUrls: [upstream.url],
    redisUrl: limits.redisUrl,
    now: () => clock.now,
    logger: limits.logger,
    overrides: {
      ...(limits.accessLog ? { accessLog: limits.accessLog } : {}),
      // /v2/info stands for a passthrough request here; the wider read surface has its own rate-limit test.
      surface: { enabled: false },
      // Upgrades here are the passthrough's tunnels; the fan-out's admission is tested in ws-fanout.test.ts.
      live: { fanout: { enabled: false } },
      rateLimit: {
        enabled: true,
        windowMs: WINDOW_MS,
        anonymous: { limit: limits.anonymous ?? 3 },
        keyed: { limit: limits.keyed ?? 10 },
        trustedProxies: limits.trustedProxies ?? [],
        hitCost: limits.hitCost ?? 1,
        missCost: limits.missCost ?? 1,
        maxTrackedClients: limits.maxTrackedClients ?? 100_000,
      },
      apiKeys: limits.apiKeys ?? [],
    },
  });
  proxies.push(proxy);
  upstream.resetCounts();
  return proxy;
}

const get = (proxy: ProxyServer, path: string, headers: Record<string, string> = {}) => fetchRaw(proxy.url + path, { headers });
/** Upstream requests made for clients: those with a request id (the tracker's tip polls and block checks carry none). */
const upstreamReads = () => upstream.count((r) => r.headers['x-request-id'] !== undefined);
const limitHeaders = (response: RawResponse) => ({
  limit: response.headers.get('ratelimit-limit'),
  remaining: response.headers.get('ratelimit-remaining'),
  reset: response.headers.get('ratelimit-reset'),
});

function expectRefused(response: RawResponse, limit: number, retryAfter = '60'): void {
  expect(response.status).toBe(429);
  expect(JSON.parse(response.body.toString())).toEqual({
    statusCode: 429,
    error: 'Too Many Requests',
    message: `Rate limit exceeded: ${limit} per 60 s for this client; retry after the time in Retry-After`,
  });
  expect(response.headers.get('retry-after')).toBe(retryAfter);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('x-request-id')).not.toBeNull();
  expect(limitHeaders(response)).toEqual({ limit: String(limit), remaining: '0', reset: RESET });
  expect(response.headers.get('access-control-expose-headers')).toContain('RateLimit-Limit');
}

describe('rate limiting off (the default)', () => {
  it('limits nothing and sends no ratelimit-* headers', async () => {
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    proxies.push(proxy);
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await get(proxy, TX, { 'x-api-key': 'anything' }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.map((r) => r.headers.get('ratelimit-limit'))).toEqual([null, null, null, null, null]);
  });
});

describe('anonymous clients, one process', () => {
  it('answers within the budget with ratelimit-* headers, refuses a burst over it without asking the upstream, and resets with the window', async () => {
    const clock = { now: START };
    const proxy = await start({ anonymous: 3, clock });

    const answers = [await get(proxy, TX), await get(proxy, TX), await get(proxy, TX)];
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(answers.map((r) => r.headers.get('x-cache'))).toEqual(['MISS', 'HIT', 'HIT']);
    expect(answers.map(limitHeaders)).toEqual(['2', '1', '0'].map((remaining) => ({ limit: '3', remaining, reset: RESET })));
    expect(upstreamReads()).toBe(1);
    // Browsers may read them.
    expect(answers[0]?.headers.get('access-control-expose-headers')).toContain('RateLimit-Remaining, RateLimit-Reset, Retry-After');

    // Over the budget: a cached route, an uncached one and the passthrough, none reaching the upstream.
    for (const path of [TX, block(7), '/v2/info', '/extended/v1/nope']) expectRefused(await get(proxy, path), 3);
    expect(upstreamReads()).toBe(1);

    // Own endpoints are never limited and carry no ratelimit-* headers.
    for (const path of ['/health', '/ready']) {
      const own = await get(proxy, path);
      expect(own.status).toBe(200);
      expect(own.headers.get('ratelimit-limit')).toBeNull();
    }

    // 59 s in: still the same window, Retry-After says what is left.
    clock.now = START + 59_000;
    expectRefused(await get(proxy, TX), 3, '1');

    clock.now = START + WINDOW_MS;
    const next = await get(proxy, block(7));
    expect(next.status).toBe(200);
    expect(limitHeaders(next)).toEqual({ limit: '3', remaining: '2', reset: String((START + 2 * WINDOW_MS) / 1000) });
    expect(upstreamReads()).toBe(2);

    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'anonymous', result: 'allowed' })).toBe(4);
    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'anonymous', result: 'refused' })).toBe(5);
    // Tiers and results only: never an address.
    const samples = (await proxy.telemetry.scrape()).split('\n').filter((line) => line.startsWith('stacks_proxy_rate_limit_requests_total'));
    expect(samples).toEqual([
      'stacks_proxy_rate_limit_requests_total{tier="anonymous",result="allowed"} 4',
      'stacks_proxy_rate_limit_requests_total{tier="anonymous",result="refused"} 5',
    ]);
  });

  it('puts ratelimit-* headers on passthrough answers too', async () => {
    const proxy = await start({ anonymous: 3 });
    const passed = await get(proxy, '/v2/info');
    expect(passed.status).toBe(200);
    expect(passed.headers.get('x-cache')).toBe('BYPASS');
    expect(limitHeaders(passed)).toEqual({ limit: '3', remaining: '2', reset: RESET });
    expect(upstream.count('/v2/info')).toBe(1);
  });

  it('charges a miss its missCost: the hit cost first, the rest before the upstream is asked', async () => {
    const proxy = await start({ anonymous: 6, hitCost: 1, missCost: 3 });
    const miss = await get(proxy, TX);
    expect(miss.headers.get('x-cache')).toBe('MISS');
    expect(limitHeaders(miss).remaining).toBe('3');
    const hit = await get(proxy, TX);
    expect(hit.headers.get('x-cache')).toBe('HIT');
    expect(limitHeaders(hit).remaining).toBe('2');
    // The hit cost fits (1 left), the miss's rest (2) does not: refused before the upstream.
    const refused = await get(proxy, block(9));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(limitHeaders(refused)).toEqual({ limit: '6', remaining: '1', reset: RESET });
    expect(upstreamReads()).toBe(1);
    // What the refused miss did not take is still there for a hit.
    const lastHit = await get(proxy, TX);
    expect(lastHit.status).toBe(200);
    expect(limitHeaders(lastHit).remaining).toBe('0');
    expectRefused(await get(proxy, '/v2/info'), 6);
    expect(upstreamReads()).toBe(1);
  });

  it("puts what a passthrough request's missCost left on its answer", async () => {
    const proxy = await start({ anonymous: 6, hitCost: 1, missCost: 3 });
    const passed = await get(proxy, '/v2/info');
    expect(passed.status).toBe(200);
    expect(limitHeaders(passed)).toEqual({ limit: '6', remaining: '3', reset: RESET });
    expect(upstream.count('/v2/info')).toBe(1);
  });

  it('refuses a passthrough request (always a miss) whose budget cannot cover missCost', async () => {
    const proxy = await start({ anonymous: 2, hitCost: 1, missCost: 3 });
    const refused = await get(proxy, '/v2/info');
    expect(refused.status).toBe(429);
    expect(limitHeaders(refused)).toEqual({ limit: '2', remaining: '1', reset: RESET });
    expect(upstream.count('/v2/info')).toBe(0);
  });
});

describe('client addresses', () => {
  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    const proxy = await start({ anonymous: 1 });
    expect((await get(proxy, TX, { 'x-forwarded-for': '198.51.100.1' })).status).toBe(200);
    expectRefused(await get(proxy, TX, { 'x-forwarded-for': '198.51.100.2' }), 1);
    expectRefused(await get(proxy, TX), 1);
  });

  it('believes X-Forwarded-For from a trusted proxy: the right-most address that is not one', async () => {
    const proxy = await start({ anonymous: 1, trustedProxies: ['127.0.0.1/32'] });
    expect((await get(proxy, TX, { 'x-forwarded-for': '198.51.100.1' })).status).toBe(200);
    expectRefused(await get(proxy, TX, { 'x-forwarded-for': '198.51.100.1' }), 1);
    // A client that prepends addresses of its own is still the address the proxy appended.
    expectRefused(await get(proxy, TX, { 'x-forwarded-for': '203.0.113.50, 198.51.100.1' }), 1);
    expect((await get(proxy, TX, { 'x-forwarded-for': '198.51.100.2' })).status).toBe(200);
    expect((await get(proxy, TX, { 'x-forwarded-for': '198.51.100.1, 127.0.0.1' })).status).toBe(429);
  });
});

describe('refused request targets', () => {
  const BAD_TARGET = '/extended/v1/tx/0x#x';
  const badTargetBody = { statusCode: 400, code: 'FST_ERR_BAD_URL', error: 'Bad Request', message: "'/extended/v1/tx/0x#x' is not a valid url component" };
  const pipelined = (count: number): string =>
    Array.from({ length: count }, (_, i) => `GET ${BAD_TARGET} HTTP/1.1\r\nHost: x\r\n${i === count - 1 ? 'Connection: close\r\n' : ''}\r\n`).join('');

  it('are charged like any local answer: within the budget the 400 with ratelimit-*, over it the 429; their log lines are sampled', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const proxy = await start({ anonymous: 20, logger, accessLog: { enabled: true, hitsEvery: 100, refusalsEvery: 100 } });
    const answers = parseResponses(await exchangeRaw(proxy.port, pipelined(300)));
    expect(answers).toHaveLength(300);
    const within = answers.slice(0, 20);
    const over = answers.slice(20);
    expect(within.map((r) => r.status)).toEqual(new Array(20).fill(400));
    expect(JSON.parse(within[0]?.body ?? '')).toEqual(badTargetBody);
    expect(within.map((r) => r.headers['ratelimit-remaining'])).toEqual(Array.from({ length: 20 }, (_, i) => String(19 - i)));
    expect(within[0]?.headers['ratelimit-reset']).toBe(RESET);
    expect(over.map((r) => r.status)).toEqual(new Array(280).fill(429));
    expect(over.map((r) => [r.headers['retry-after'], r.headers['ratelimit-limit'], r.headers['ratelimit-remaining'], r.headers['ratelimit-reset']])).toEqual(
      new Array(280).fill(['60', '20', '0', RESET]),
    );
    // The budget they spent is the client's: its next good request is refused too.
    expectRefused(await get(proxy, TX), 20);
    expect(upstreamReads()).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'anonymous', result: 'allowed' })).toBe(20);
    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'anonymous', result: 'refused' })).toBe(281);
    // 301 refusals, one access-log line per 100 of them; the counters count each.
    await waitFor(async () => lines.filter((line) => line.reqId !== undefined).length >= 3, { timeoutMs: 5_000, what: 'the sampled access-log lines' });
    const accessLines = lines.filter((line) => line.reqId !== undefined);
    expect(accessLines.map((line) => line.sampled)).toEqual([100, 100, 100]);
    expect(await metricValue(proxy, 'stacks_proxy_http_requests_total', { status: '400' })).toBe(20);
    expect(await metricValue(proxy, 'stacks_proxy_http_requests_total', { status: '429' })).toBe(281);
  });

  it('on WebSocket upgrades are charged too: the 400 with ratelimit-* within the budget, the 429 over it, never the upstream', async () => {
    const proxy = await start({ anonymous: 2 });
    const upgrade = (target: string) => upgradeHead().replace('GET /extended/v1/ws ', `GET ${target} `);
    const answers: ParsedResponse[] = [];
    for (let i = 0; i < 3; i++) answers.push(...parseResponses(await exchangeRaw(proxy.port, upgrade(BAD_TARGET))));
    expect(answers.map((r) => r.status)).toEqual([400, 400, 429]);
    expect(JSON.parse(answers[0]?.body ?? '')).toEqual(badTargetBody);
    expect(answers.map((r) => r.headers['ratelimit-remaining'])).toEqual(['1', '0', '0']);
    expect(answers[2]?.headers['retry-after']).toBe('60');
    // An upgrade on a path without WebSockets is a local answer as well: over the budget, the 429.
    expect(parseResponses(await exchangeRaw(proxy.port, upgrade('/extended/v1/nope')))[0]?.status).toBe(429);
    expect(upstreamUpgrades()).toBe(0);
    expect((await get(proxy, TX)).status).toBe(429);
  });

  it('still get the plain 400, without ratelimit-*, with rate limiting off', async () => {
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    proxies.push(proxy);
    const [answer] = parseResponses(await rawGet(proxy.port, BAD_TARGET));
    expect(answer?.status).toBe(400);
    expect(answer?.headers['ratelimit-limit']).toBeUndefined();
  });
});

describe('a full client table (no Redis)', () => {
  it("admits a new client's first request after more clients than the table holds have spent their budgets", async () => {
    const proxy = await start({ anonymous: 1, trustedProxies: ['127.0.0.1/32'], maxTrackedClients: 20 });
    const crowd = (i: number) => `198.51.100.${i}`;
    // Twice as many clients as the table holds, each spending its whole budget.
    for (let i = 1; i <= 40; i++) expect((await get(proxy, TX, { 'x-forwarded-for': crowd(i) })).status).toBe(200);
    const newcomer = await get(proxy, TX, { 'x-forwarded-for': '203.0.113.7' });
    expect(newcomer.status).toBe(200);
    expect(limitHeaders(newcomer)).toEqual({ limit: '1', remaining: '0', reset: RESET });
    // Clients still in the table keep their counts: the most recent ones are refused.
    expectRefused(await get(proxy, TX, { 'x-forwarded-for': crowd(40) }), 1);
    expectRefused(await get(proxy, TX, { 'x-forwarded-for': '203.0.113.7' }), 1);
  });
});

describe('API keys', () => {
  const partner = 'partner-key-0123456789';
  const plain = 'plain-key-0123456789';
  const apiKeys = [
    { name: 'partner', sha256: sha256Hex(partner), limit: 5 },
    { name: 'plain', sha256: sha256Hex(plain) },
  ];

  it('gives a key its own budget: its limit, else rateLimit.keyed.limit, apart from the anonymous one', async () => {
    const proxy = await start({ anonymous: 1, keyed: 2, apiKeys });
    const partnerAnswers = [];
    for (let i = 0; i < 6; i++) partnerAnswers.push(await get(proxy, TX, { 'x-api-key': partner }));
    expect(partnerAnswers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(partnerAnswers.map((r) => limitHeaders(r).remaining)).toEqual(['4', '3', '2', '1', '0', '0']);
    expectRefused(partnerAnswers[5] as RawResponse, 5);

    expect(limitHeaders(await get(proxy, TX, { 'x-api-key': plain }))).toEqual({ limit: '2', remaining: '1', reset: RESET });
    expect(limitHeaders(await get(proxy, TX))).toEqual({ limit: '1', remaining: '0', reset: RESET });
    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'keyed', result: 'allowed' })).toBe(6);
    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'keyed', result: 'refused' })).toBe(1);
    const exported = await proxy.telemetry.scrape();
    expect(exported).not.toContain('partner');
  });

  it('answers an unknown key 401 in the upstream shape, without asking the upstream', async () => {
    const proxy = await start({ apiKeys });
    for (const key of ['not-a-key', sha256Hex(partner), '']) {
      const refused = await get(proxy, block(3), { 'x-api-key': key });
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body.toString())).toEqual({
        statusCode: 401,
        error: 'Unauthorized',
        message: 'Unknown API key: the X-API-Key header does not name a key this proxy knows',
      });
    }
    expect(upstreamReads()).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'keyed', result: 'unknown_key' })).toBe(3);
    expect((await get(proxy, '/health', { 'x-api-key': 'not-a-key' })).status).toBe(200);
  });
});

/** An upgrade request on the upstream's WebSocket path, as raw bytes. */
const upgradeHead = (headers: Record<string, string> = {}): string =>
  `GET /extended/v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${Object.entries(
    headers,
  )
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;

/** Opens a WebSocket through the proxy, checks the tunnel echoes, and closes it. */
async function openTunnel(proxy: ProxyServer, headers: Record<string, string> = {}): Promise<void> {
  const socket = new WebSocket(`${proxy.url.replace('http', 'ws')}/extended/v1/ws`, { headers });
  const echoed = new Promise<string>((resolve, reject) => {
    socket.once('message', (data: Buffer) => resolve(data.toString()));
    socket.once('error', reject);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  socket.send('ping');
  expect(await echoed).toBe('echo:ping');
  socket.close();
}

async function refusedUpgrade(proxy: ProxyServer, headers: Record<string, string> = {}): Promise<ParsedResponse> {
  const answers = parseResponses(await exchangeRaw(proxy.port, upgradeHead(headers)));
  expect(answers).toHaveLength(1);
  return answers[0] as ParsedResponse;
}

const upstreamUpgrades = () => upstream.count((r) => r.method === 'UPGRADE');

describe('WebSocket upgrades', () => {
  it('pay from the same budget as requests (a miss each); over it, a 429 with the ratelimit-* headers and no tunnel', async () => {
    const proxy = await start({ anonymous: 4, hitCost: 1, missCost: 2 });
    expect((await get(proxy, TX)).status).toBe(200); // a miss: 2 of 4
    await openTunnel(proxy); // 2 more: 4 of 4
    const refused = await refusedUpgrade(proxy);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message: 'Rate limit exceeded: 4 per 60 s for this client; retry after the time in Retry-After',
    });
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.headers['ratelimit-limit']).toBe('4');
    expect(refused.headers['ratelimit-remaining']).toBe('0');
    expect(refused.headers['ratelimit-reset']).toBe(RESET);
    expect(refused.headers.connection).toBe('close');
    expect(upstreamUpgrades()).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'anonymous', result: 'refused' })).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'anonymous', result: 'allowed' })).toBe(2);
  });

  it('refuses an upgrade the budget covers only as a hit: the miss charge decides, before the upstream', async () => {
    const proxy = await start({ anonymous: 3, hitCost: 1, missCost: 3 });
    await openTunnel(proxy); // 3 of 3
    expect((await refusedUpgrade(proxy)).status).toBe(429);
    expect(upstreamUpgrades()).toBe(1);
  });

  it('answers an unknown API key with 401 and a known one from its own budget', async () => {
    const proxy = await start({ anonymous: 1, apiKeys: [{ name: 'wallet', sha256: sha256Hex('secret-key'), limit: 5 }] });
    const unknown = await refusedUpgrade(proxy, { 'x-api-key': 'nope' });
    expect(unknown.status).toBe(401);
    expect(JSON.parse(unknown.body).error).toBe('Unauthorized');
    await openTunnel(proxy); // the anonymous budget: 1 of 1
    expect((await refusedUpgrade(proxy)).status).toBe(429);
    await openTunnel(proxy, { 'x-api-key': 'secret-key' });
    expect(upstreamUpgrades()).toBe(2);
    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'keyed', result: 'unknown_key' })).toBe(1);
  });
});

describe('with Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('enforces one budget across instances sharing Redis', async () => {
    const clock = { now: START };
    const first = await start({ anonymous: 3, redisUrl: redis.url, clock });
    const second = await start({ anonymous: 3, redisUrl: redis.url, clock });
    const answers = [await get(first, TX), await get(second, TX), await get(first, TX)];
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(answers.map((r) => limitHeaders(r).remaining)).toEqual(['2', '1', '0']);
    expectRefused(await get(second, TX), 3);
    expectRefused(await get(first, block(11)), 3);
    clock.now = START + WINDOW_MS;
    expect((await get(second, TX)).status).toBe(200);
  });

  it('charges WebSocket upgrades to the shared budget too', async () => {
    const clock = { now: START + 20 * WINDOW_MS };
    const first = await start({ anonymous: 2, redisUrl: redis.url, clock });
    const second = await start({ anonymous: 2, redisUrl: redis.url, clock });
    expect((await get(first, TX)).status).toBe(200);
    await openTunnel(second);
    expect((await refusedUpgrade(first)).status).toBe(429);
    expect((await get(second, TX)).status).toBe(429);
    expect(upstreamUpgrades()).toBe(1);
  });

  it('fails open when Redis goes away: requests pass and the fail-open count says so', async () => {
    const own = await startRedis();
    try {
      const clock = { now: START + 10 * WINDOW_MS };
      const probeKey = 'probe-key-0123456789';
      const proxy = await start({ anonymous: 1, redisUrl: own.url, clock, apiKeys: [{ name: 'probe', sha256: sha256Hex(probeKey), limit: 1000 }] });
      // The budget's Redis connection comes up after start-up (until then limits fail open): wait
      // for it with a key of its own, so that the anonymous budget below is untouched.
      const probe = async () => (await get(proxy, TX, { 'x-api-key': probeKey })).headers.get('ratelimit-limit') !== null;
      await waitFor(probe, { timeoutMs: 10_000, what: 'the shared budget to connect' });
      const failedOpenBefore = await metricValue(proxy, 'stacks_proxy_rate_limit_fail_open_total');
      expect((await get(proxy, TX)).status).toBe(200);
      expect((await get(proxy, TX)).status).toBe(429);
      await own.stop();
      const answers = [await get(proxy, TX), await get(proxy, TX), await get(proxy, TX)];
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(answers.map((r) => r.headers.get('ratelimit-limit'))).toEqual([null, null, null]);
      expect(await metricValue(proxy, 'stacks_proxy_rate_limit_fail_open_total')).toBe(failedOpenBefore + 3);
      expect((await get(proxy, '/health')).status).toBe(200);

      // Redis back (ioredis reconnects within a second): the shared budget applies again.
      await own.restart();
      await waitFor(async () => (await get(proxy, block(5))).headers.get('ratelimit-limit') === '1', { timeoutMs: 10_000, what: 'limits to apply again' });
      expect((await get(proxy, block(5))).status).toBe(429);
    } finally {
      await own.stop().catch(() => undefined);
    }
  });
});
