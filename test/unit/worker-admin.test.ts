/**
 * Worker mode's admin port, its pure parts: how the workers' answers to a purge combine into one
 * (combine-admin-answers.ts), how their /ready answers do (combine-readiness.ts), how their
 * status reports do (combine-status-reports.ts) and their cache stats (combine-cache-stats.ts).
 */
import { describe, expect, it } from 'vitest';
import { combineAdminAnswers, sumPurgeAnswers, type WorkerAnswer } from '../../src/cluster/combine-admin-answers.js';
import { combineCacheStats } from '../../src/cluster/combine-cache-stats.js';
import { combineReadiness } from '../../src/cluster/combine-readiness.js';
import { cacheStats } from '../../src/http/admin/cache-stats.js';
import { combineStatusReports } from '../../src/cluster/combine-status-reports.js';
import { statusReport, type StatusReport, type StatusSources } from '../../src/http/admin/status-report.js';
import { statusCounts, statusSources } from '../support/status-sources.js';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const answered = (id: number, status: number, body: unknown, headers: Record<string, string> = {}): WorkerAnswer => ({
  id,
  pid: 100 + id,
  answer: { status, headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': '999', ...headers }, body: json(body) },
});
const purged = (memory: number, redis: number | null, matched: unknown = { kind: 'all' }, coalesced = false) => ({
  purged: { memory, redis },
  matched,
  coalesced,
});
const headerOf = (headers: string[], name: string) => headers[headers.indexOf(name) + 1];
const bodyOf = (body: Buffer) => JSON.parse(body.toString('utf8')) as Record<string, unknown>;

describe('combineAdminAnswers', () => {
  it('every worker purged: 200 in the single-process shape, memory entries and Redis keys added up', () => {
    const combined = combineAdminAnswers(
      'POST /admin/purge',
      [answered(1, 200, purged(3, 5)), answered(2, 200, purged(4, 0)), answered(3, 200, purged(0, 0))],
      'rid',
    );
    expect(combined.status).toBe(200);
    expect(bodyOf(combined.body)).toEqual(purged(7, 5));
    expect(headerOf(combined.headers, 'content-length')).toBe(String(combined.body.length));
    expect(headerOf(combined.headers, 'content-type')).toBe('application/json; charset=utf-8');
  });

  it('without Redis the count of Redis keys stays null; a block purge unites the refs each worker widened to; coalesced if any was', () => {
    const block = (refs: string[], burn: number[]) => ({ kind: 'block', refs, burnHeights: burn });
    const combined = combineAdminAnswers(
      'POST /admin/purge',
      [answered(1, 200, purged(1, null, block(['25', '0xaa'], [7]))), answered(2, 200, purged(2, null, block(['25'], []), true))],
      'rid',
    );
    expect(bodyOf(combined.body)).toEqual(purged(3, null, block(['25', '0xaa'], [7]), true));
  });

  it('every worker refused alike (401): that answer as it is, headers and all', () => {
    const refusal = { statusCode: 401, error: 'Unauthorized', message: 'the admin API needs Authorization: Bearer <ADMIN_TOKEN>' };
    const combined = combineAdminAnswers('POST /admin/purge', [answered(1, 401, refusal, { 'www-authenticate': 'Bearer' }), answered(2, 401, refusal)], 'rid');
    expect(combined.status).toBe(401);
    expect(bodyOf(combined.body)).toEqual(refusal);
    expect(headerOf(combined.headers, 'www-authenticate')).toBe('Bearer');
    expect(combined.headers.filter((h) => h === 'content-length')).toHaveLength(1);
  });

  it('one worker failed: the worst status in the error shape, naming that worker and its reason', () => {
    const failure = { statusCode: 503, error: 'Service Unavailable', message: 'purged 2 memory entries, but Redis failed: timeout' };
    const combined = combineAdminAnswers(
      'POST /admin/purge',
      [answered(1, 200, purged(3, 5)), answered(2, 503, failure), answered(3, 200, purged(1, 0))],
      'rid',
    );
    expect(combined.status).toBe(503);
    const body = bodyOf(combined.body);
    expect(Object.keys(body)).toEqual(['statusCode', 'error', 'message']);
    expect(body).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
    expect(body.message).toBe(
      'POST /admin/purge succeeded on 2 of 3 workers; worker 2 (pid 102) answered 503: purged 2 memory entries, but Redis failed: timeout (the others carried it out: it may be sent again)',
    );
    expect(headerOf(combined.headers, 'x-request-id')).toBe('rid');
  });

  it('a worker that did not answer counts as a 502, named with why', () => {
    const combined = combineAdminAnswers('POST /admin/purge', [answered(1, 200, purged(3, null)), { id: 2, pid: 102, error: 'connect ECONNREFUSED' }], 'rid');
    expect(combined.status).toBe(502);
    expect(bodyOf(combined.body).message).toContain('worker 2 (pid 102) did not answer: connect ECONNREFUSED');
  });

  it('all failing, differently: the worst status, every worker named', () => {
    const combined = combineAdminAnswers(
      'POST /admin/purge',
      [answered(1, 400, { statusCode: 400, error: 'Bad Request', message: 'nope' }), { id: 2, pid: undefined, error: 'timeout' }],
      'rid',
    );
    expect(combined.status).toBe(502);
    expect(bodyOf(combined.body).message).toBe(
      'POST /admin/purge succeeded on 0 of 2 workers; worker 1 (pid 101) answered 400: nope; worker 2 did not answer: timeout',
    );
  });

  it('no worker ready: 503', () => {
    expect(combineAdminAnswers('POST /admin/purge', [], 'rid').status).toBe(503);
  });

  it('sumPurgeAnswers keeps the first selector when the workers carried out different ones (one coalesced into all)', () => {
    expect(sumPurgeAnswers([purged(1, null, { kind: 'tx', txId: '0x1' }) as never, purged(9, null, { kind: 'all' }, true) as never]).matched).toEqual({
      kind: 'tx',
      txId: '0x1',
    });
  });
});

describe('combineReadiness', () => {
  const ready = (id: number, tipHeight = 10) => answered(id, 200, { status: 'ready', ready: true, details: { tipHeight, upstreams: [] } });
  const notReady = (id: number, reason: string) => answered(id, 503, { status: 'not_ready', ready: false, reason, details: { upstreams: ['x'] } });

  it('ready when every worker is: the first worker body, plus the workers', () => {
    const { status, body } = combineReadiness([ready(1), ready(2)]);
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'ready', ready: true, details: { tipHeight: 10 } });
    expect(body.workers).toEqual([
      { id: 1, pid: 101, ready: true, reason: null },
      { id: 2, pid: 102, ready: true, reason: null },
    ]);
  });

  it('not ready when one worker is not, or does not answer: 503 naming each', () => {
    const { status, body } = combineReadiness([ready(1), notReady(2, 'shutting down'), { id: 3, pid: 103, error: 'timeout' }]);
    expect(status).toBe(503);
    expect(body).toMatchObject({ status: 'not_ready', ready: false, details: { upstreams: ['x'] } });
    expect(body.reason).toBe('2 of 3 workers not ready: worker 2 (pid 102): shutting down; worker 3 (pid 103): did not answer: timeout');
  });

  it('not ready without a worker', () => {
    expect(combineReadiness([])).toMatchObject({ status: 503, body: { ready: false, reason: 'no worker is ready' } });
  });
});

const counts = statusCounts;
const report = (over: Partial<StatusSources> = {}) => statusReport(statusSources(over));

describe('combineStatusReports', () => {
  const reorg = { forkHeight: 8, from: { height: 9, burnHeight: 4 }, to: { height: 9, burnHeight: 4 } };
  const one = report({
    counts: counts({
      requests: [
        { route: 'block', cache: 'HIT', count: 6 },
        { route: 'block', cache: 'MISS', count: 2 },
      ],
      classes: [{ cls: 'final', cache: 'HIT', count: 6 }],
      upstreamRequests: 5,
      recentReorgs: [{ at: 990_000, ...reorg }],
      reorgsTotal: 1,
      reorgPurgedEntries: 2,
      wsClients: { rpc: 1 },
    }),
  });
  const two = report({
    now: 1_001_000,
    tip: { height: 11, indexBlockHash: '0xdef', burnHeight: 5 },
    upstreams: [{ origin: 'http://a', usable: false, breaker: 'open', tipHeight: 11, lagBlocks: 1, inFlight: 2, queued: 3 }],
    counts: counts({
      requests: [
        { route: 'block', cache: 'MISS', count: 2 },
        { route: 'tx_by_id', cache: 'HIT', count: 20 },
      ],
      upstreamRequests: 7,
      tipAgeSeconds: 0.5,
      recentReorgs: [{ at: 995_000, ...reorg }],
      reorgsTotal: 1,
      reorgPurgedEntries: 3,
      wsClients: { rpc: 2, socket_io: 1 },
    }),
    rates: { requests: null, upstreamRequests: 2 },
    memory: { entries: 5, bytes: 700, maxBytes: 1000, maxEntryBytes: 100 },
    purges: { local: 1, fromPeers: 2 },
  });

  it('adds up what each worker counts, takes the highest tip and the worst upstream state, and lists the workers', () => {
    const combined = combineStatusReports([
      { id: 1, pid: 101, report: one },
      { id: 2, pid: 102, report: two },
      { id: 3, pid: 103, error: 'timeout' },
    ]);
    expect(combined).toBeDefined();
    const c = combined!;
    // The single-process fields, same meaning.
    expect(Object.keys(c)).toEqual([...Object.keys(one), 'workers']);
    expect(c.generatedAt).toBe(two.generatedAt);
    expect(c.chain.tip).toEqual({ height: 11, indexBlockHash: '0xdef', blockHash: null, burnHeight: 5, anchorBurnHeight: null, ageSeconds: 0.5 });
    expect(c.chain.reorgs).toEqual({ total: 1, purgedEntries: 5, recent: [{ ...reorg, ageSeconds: 6 }] });
    expect(c.traffic).toEqual({ requests: 30, requestsPerSecond: 3, upstreamRequests: 12, upstreamRequestsPerSecond: 3, rateWindowSeconds: 10 });
    expect(c.hitRatio.overall).toMatchObject({ hit: 26, miss: 4, total: 30, hitRatio: 26 / 30 });
    expect(Object.keys(c.hitRatio.byRoute)).toEqual(['tx_by_id', 'block']);
    expect(c.hitRatio.byRoute.block).toMatchObject({ hit: 6, miss: 4, total: 10, hitRatio: 0.6 });
    expect(c.hitRatio.byClass.final).toMatchObject({ hit: 6, total: 6 });
    expect(c.upstreams).toEqual([
      expect.objectContaining({ origin: 'http://a', usable: false, breaker: 'open', tipHeight: 11, lagBlocks: 1, inFlight: 3, queued: 3 }),
    ]);
    expect(c.cache.memory).toEqual({ entries: 7, bytes: 1000, maxBytes: 2000, maxEntryBytes: 100 });
    expect(c.purges).toMatchObject({ local: 1, fromPeers: 2 });
    expect(c.live.fanoutClients).toEqual({ rpc: 3, socketIo: 1 });
    expect(c.workers).toEqual([
      { id: 1, pid: 101, error: null, tipHeight: 10, requests: 8, requestsPerSecond: 3, memoryEntries: 2 },
      { id: 2, pid: 102, error: null, tipHeight: 11, requests: 22, requestsPerSecond: null, memoryEntries: 5 },
      { id: 3, pid: 103, error: 'timeout', tipHeight: null, requests: null, requestsPerSecond: null, memoryEntries: null },
    ]);
  });

  it('one worker is the single-process report plus its line; none is undefined', () => {
    const { workers, ...rest } = combineStatusReports([{ id: 1, pid: 101, report: one }])!;
    expect(rest).toEqual(one);
    expect(workers).toHaveLength(1);
    expect(combineStatusReports([{ id: 1, pid: 101, error: 'x' }])).toBeUndefined();
  });

  it("takes the tip block's anchor from any worker that read it for that block", () => {
    const tip = { height: 11, indexBlockHash: '0xdef', burnHeight: 7 };
    const unread = report({ tip });
    const read = report({ tip: { ...tip, anchorBurnHeight: 5 } });
    const older = report({ tip: { height: 10, indexBlockHash: '0xabc', burnHeight: 7, anchorBurnHeight: 6 } });
    const combine = (...reports: StatusReport[]) => combineStatusReports(reports.map((r, i) => ({ id: i + 1, pid: i + 1, report: r })))!.chain.tip;
    expect(combine(unread, read)).toMatchObject({ height: 11, burnHeight: 7, anchorBurnHeight: 5 });
    // Another block's anchor is not this one's.
    expect(combine(unread, older)).toMatchObject({ height: 11, anchorBurnHeight: null });
  });

  it("lists the newest of every worker's recent failures of an upstream, as many as one worker keeps", () => {
    const failing = (ages: number[]) =>
      report({
        upstreams: [
          {
            origin: 'http://a',
            usable: false,
            breaker: 'open',
            recentFailures: ages.map((ageMs) => ({ kind: 'timeout', route: `r${ageMs}`, message: 'm', ageMs })),
          },
        ],
      });
    const [upstream] = combineStatusReports([
      { id: 1, pid: 1, report: failing([3_000, 1_000]) },
      { id: 2, pid: 2, report: failing([2_000, 500]) },
    ])!.upstreams;
    expect(upstream?.recentFailures.map((f) => [f.route, f.ageSeconds])).toEqual([
      ['r500', 0.5],
      ['r1000', 1],
    ]);
  });

  it("gives each upstream's push mode as the tip leader reports it (the other workers follow no feed)", () => {
    const follower = report();
    const leader = report({ pushModes: { 'http://a': { mode: 'poll', reason: 'upgrade refused 404', retryAt: 1_060_000 } } });
    const c = combineStatusReports([
      { id: 1, pid: 1, report: follower },
      { id: 2, pid: 2, report: leader },
      { id: 3, pid: 3, report: follower },
    ])!;
    expect(c.upstreams[0]?.push).toEqual({ mode: 'poll', reason: 'upgrade refused 404', retryInSeconds: 60 });
    expect(combineStatusReports([{ id: 1, pid: 1, report: follower }])!.upstreams[0]?.push).toBeNull();
  });

  it('takes the shared Redis from a worker that reached it', () => {
    const down = report({ redis: 'unavailable' });
    const up = report({ redis: { keys: 4, bytes: 10, evictedKeys: 0, maxBytes: 100 } });
    const c = combineStatusReports([
      { id: 1, pid: 1, report: down },
      { id: 2, pid: 2, report: up },
    ])!;
    expect(c.cache.redis).toEqual({ keys: 4, usedMemoryBytes: 10, evictedKeys: 0, maxBytes: 100 });
  });
});

describe('combineCacheStats (GET /admin/cache)', () => {
  const chain = { finalBurnHeight: 90, finalStacksHeight: 80 } as never;
  const tipAt = (height: number) => ({ height, indexBlockHash: `0x${height}`, burnHeight: height + 1 }) as never;
  const statsOf = (
    memory: number,
    lookups: Array<[string, string, number]>,
    tip: number | undefined,
    redis?: 'unavailable' | { keys: number; bytes: number; evictedKeys: number },
  ) =>
    cacheStats({
      memory: { entries: memory, bytes: memory * 100 },
      redis,
      lookups: lookups.map(([cls, result, count]) => ({ tier: 'memory', cls, result, count })),
      tip: tip === undefined ? undefined : tipAt(tip),
      chain,
      purges: { local: 1, fromPeers: 2 },
    });
  const ask = (...stats: unknown[]) =>
    combineAdminAnswers(
      'GET /admin/cache',
      stats.map((body, i) => answered(i + 1, 200, body)),
      'rid',
      combineCacheStats,
    );

  it('adds up memory tiers, lookups (ratios recomputed) and purges; the highest tip; a line per worker', () => {
    const combined = ask(
      statsOf(
        2,
        [
          ['final', 'hit', 3],
          ['unknown', 'miss', 1],
        ],
        10,
      ),
      statsOf(
        5,
        [
          ['final', 'hit', 1],
          ['tip', 'stale', 1],
          ['unknown', 'miss', 3],
        ],
        12,
      ),
    );
    expect(combined.status).toBe(200);
    const body = bodyOf(combined.body);
    expect(body.tiers).toEqual({ memory: { entries: 7, bytes: 700 }, redis: null });
    expect(body.lookups).toMatchObject({
      final: { hit: 4, stale: 0, miss: 0, total: 4, hitRatio: 1 },
      tip: { stale: 1, total: 1, hitRatio: 1 },
      unknown: { miss: 4, total: 4, hitRatio: 0 },
      all: { hit: 4, stale: 1, miss: 4, error: 0, total: 9, hitRatio: 5 / 9 },
    });
    expect(body.tip).toMatchObject({ height: 12, indexBlockHash: '0x12' });
    expect(body.purges).toEqual({ local: 2, fromPeers: 4 });
    expect(body.workers).toEqual([
      { id: 1, pid: 101, memory: { entries: 2, bytes: 200 }, tipHeight: 10, lookups: 4 },
      { id: 2, pid: 102, memory: { entries: 5, bytes: 500 }, tipHeight: 12, lookups: 5 },
    ]);
    expect(headerOf(combined.headers, 'content-length')).toBe(String(combined.body.length));
  });

  it('takes the one Redis from a worker that reached it; no tip while no worker has one', () => {
    const reached = { keys: 9, bytes: 900, evictedKeys: 0 };
    const body = bodyOf(ask(statsOf(1, [], undefined, 'unavailable'), statsOf(1, [], undefined, reached)).body);
    expect(body.tiers).toMatchObject({ redis: { keys: 9, usedMemoryBytes: 900, evictedKeys: 0 } });
    expect(body.tip).toBeNull();
  });

  it('a body that is not stats is passed on as the first worker gave it; a refusal and a failure as for a purge', () => {
    expect(bodyOf(ask({ something: 'else' }, statsOf(1, [], 1)).body)).toEqual({ something: 'else' });
    const refused = combineAdminAnswers(
      'GET /admin/cache',
      [answered(1, 401, { statusCode: 401 }), answered(2, 401, { statusCode: 401 })],
      'rid',
      combineCacheStats,
    );
    expect(refused.status).toBe(401);
    const failed = combineAdminAnswers(
      'GET /admin/cache',
      [answered(1, 200, statsOf(1, [], 1)), { id: 2, pid: 102, error: 'timed out' }],
      'rid',
      combineCacheStats,
    );
    expect(failed.status).toBe(502);
    expect(bodyOf(failed.body).message).toContain('worker 2 (pid 102) did not answer: timed out');
  });
});
