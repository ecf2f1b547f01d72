/**
 * Worker mode (server.workers > 1) as an operator meets it: `node dist/src/main.js` with WORKERS=2
 * and Redis, real processes (and without Redis: single-flight through the primary). A stampede on one key costs the upstream one request whatever worker
 * each client lands on; both workers serve; the admin port's /metrics adds the workers up; a
 * killed worker is replaced; SIGTERM drains every worker and the primary exits 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { startFakeUpstream, startRedis, type FakeUpstream, type TestRedis } from '../../testkit/index.js';
import { exitOf, getOnNewConnection, startCluster, type RunningCluster } from '../support/cluster-proxy.js';

const root = projectRoot();
const main = join(root, 'dist', 'src', 'main.js');
let upstream: FakeUpstream;
let redis: TestRedis;
let configDir: string;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  redis = await startRedis();
  configDir = mkdtempSync(join(tmpdir(), 'scp-workers-'));
});
afterAll(async () => {
  await upstream.close();
  await redis.stop();
  rmSync(configDir, { recursive: true, force: true });
});

const started: ChildProcess[] = [];
afterEach(() => {
  // A failed test must not leave a proxy running (the workers exit when their primary's channel closes).
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

type Running = RunningCluster;

/** Starts the proxy with `env`, every hit logged; resolves on the primary's "listening" line. */
const run = (env: Record<string, string>, config: object = {}): Promise<Running> =>
  startCluster({ upstreamUrl: upstream.url, configDir, env, config, started });

const workerPids = (running: Running) =>
  running
    .lines()
    .filter((line) => line.msg === 'worker listening')
    .map((line) => line.pid as number);

describe('worker mode (server.workers)', () => {
  it('refuses more than one worker with single-flight switched off: exit 2, naming the setting', async () => {
    const file = join(configDir, 'single-flight-off.json');
    writeFileSync(file, JSON.stringify({ cache: { sharedSingleFlight: { enabled: false } } }));
    const child = spawn(process.execPath, [main], {
      env: { PATH: process.env.PATH ?? '', UPSTREAM_URLS: upstream.url, WORKERS: '2', CONFIG_FILE: file },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(child);
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    expect(await exitOf(child)).toBe(2);
    expect(err).toContain('server.workers (WORKERS): 2 workers need the single-flight across processes');
    expect(err).toContain('cache.sharedSingleFlight.enabled is false');
  });

  it('a stampede of 24 identical misses across 2 workers costs the upstream 1 request, and both workers serve', async () => {
    const proxy = await run({ WORKERS: '2', REDIS_URL: redis.url });
    await expect.poll(() => workerPids(proxy).length).toBe(2);
    const path = '/extended/v2/blocks/25';
    upstream.setDelay(500, /blocks\/25$/);
    const answers = await Promise.all(Array.from({ length: 24 }, () => getOnNewConnection(`${proxy.url}${path}`)));
    upstream.setDelay(0);
    expect(answers.map((a) => a.status)).toEqual(Array(24).fill(200));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(upstream.count(/\/extended\/v2\/blocks\/25$/)).toBe(1);
    // Each answer's access-log line carries the pid of the worker that served it.
    const blockLines = () => proxy.lines().filter((line) => line.route === 'block' && line.status === 200);
    await expect.poll(() => blockLines().length).toBe(24);
    const servedBy = new Set(blockLines().map((line) => line.pid));
    expect([...servedBy].sort()).toEqual([...workerPids(proxy)].sort());

    // The admin port's /metrics adds the workers' counters up; the tip height is not doubled.
    const metrics = await (await fetch(`${proxy.adminUrl.replace('0.0.0.0', '127.0.0.1')}/metrics`)).text();
    const sampleOf = (name: string, labels = '') => Number(new RegExp(`^${name}${labels}[^ ]* (\\S+)$`, 'm').exec(metrics)?.[1]);
    expect(sampleOf('stacks_proxy_chain_tip_height')).toBe(upstream.tip().height);
    const served = [...metrics.matchAll(/^stacks_proxy_http_requests_total\{[^}]*route="block"[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(served).toBe(24);
    // Anything else on the admin port is a worker's: /ready with details.
    expect((await fetch(`${proxy.adminUrl}/ready`)).status).toBe(200);

    const exit = exitOf(proxy.child);
    proxy.child.kill('SIGTERM');
    expect(await exit).toBe(0);
  });

  it('replaces a killed worker, and on SIGTERM lets every worker finish its in-flight requests, then exits 0', async () => {
    const proxy = await run({ WORKERS: '2', REDIS_URL: redis.url });
    await expect.poll(() => workerPids(proxy).length).toBe(2);
    const [victim] = workerPids(proxy);
    process.kill(victim as number, 'SIGKILL');
    await expect.poll(() => proxy.lines().some((line) => line.msg === 'worker died: starting another' && line.pid === victim)).toBe(true);
    await expect.poll(() => workerPids(proxy).length, { timeout: 15_000 }).toBe(3);
    await expect.poll(() => proxy.lines().filter((line) => line.msg === 'worker ready').length, { timeout: 15_000 }).toBe(3);

    upstream.setDelay(700, /blocks\/(3[0-9])$/);
    const inFlight = Array.from({ length: 10 }, (_, i) => getOnNewConnection(`${proxy.url}/extended/v2/blocks/${30 + i}`));
    await expect.poll(() => upstream.count(/\/extended\/v2\/blocks\/3[0-9]$/)).toBe(10);
    const exit = exitOf(proxy.child);
    proxy.child.kill('SIGTERM');
    const answers = await Promise.all(inFlight);
    upstream.setDelay(0);
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(await exit).toBe(0);
    // Both live workers took part (each logs its own stop), and every worker process is gone.
    const stoppingPids = proxy
      .lines()
      .filter((line) => line.msg === 'stopping' && typeof line.pid === 'number')
      .map((line) => line.pid as number);
    expect(new Set(stoppingPids).size).toBe(2);
    for (const pid of workerPids(proxy)) expect(() => process.kill(pid, 0)).toThrow();
  });
});

/**
 * Without Redis the workers' single-flight goes through the primary (src/cluster/flight-coordinator.ts,
 * worker-flight.ts). The primary logs each ask at debug level ('single-flight asked': the key, the
 * worker's pid, lead or wait) and each end ('single-flight done': waiters filled or released), which
 * is how these tests know a stampede has reached every worker before the upstream answers (the
 * fake upstream holds the answer until then: events, not timings).
 */
describe('worker mode without Redis: single-flight through the primary', () => {
  const asks = (proxy: Running, key: RegExp) => proxy.lines().filter((line) => line.msg === 'single-flight asked' && key.test(String(line.key)));
  const askedBy = (proxy: Running, key: RegExp, outcome: string) =>
    new Set(
      asks(proxy, key)
        .filter((line) => line.outcome === outcome)
        .map((line) => line.pid),
    );
  const metricsOf = async (proxy: Running) => (await fetch(`${proxy.adminUrl.replace('0.0.0.0', '127.0.0.1')}/metrics`)).text();
  const sum = (metrics: string, name: string, label: string) =>
    [...metrics.matchAll(new RegExp(`^${name}\\{[^}]*${label}[^}]*\\} (\\d+)$`, 'gm'))].reduce((total, m) => total + Number(m[1]), 0);

  // Waiters wait for as long as the test takes (the default 3 s is a timing on a loaded machine).
  const patient = { cache: { sharedSingleFlight: { waitMs: 600_000 } } };

  it('starts with 3 workers and no Redis; a stampede of 30 identical misses over 30 connections costs the upstream 1 request', async () => {
    const proxy = await run({ WORKERS: '3', LOG_LEVEL: 'debug' }, patient);
    await expect.poll(() => workerPids(proxy).length).toBe(3);
    const key = /\/extended\/v2\/blocks\/26$/;
    const held = upstream.hold(key);
    const answers = Promise.all(Array.from({ length: 30 }, () => getOnNewConnection(`${proxy.url}/extended/v2/blocks/26`)));
    // One worker leads; the two others wait at the primary (each worker's own requests join its one ask).
    await expect.poll(() => askedBy(proxy, key, 'lead').size).toBe(1);
    await expect.poll(() => askedBy(proxy, key, 'wait').size).toBe(2);
    await expect.poll(() => held.waiting).toBe(1);
    held.release();
    const got = await answers;
    expect(got.map((a) => a.status)).toEqual(Array(30).fill(200));
    expect(new Set(got.map((a) => a.body)).size).toBe(1);
    expect(JSON.parse(got[0]?.body ?? '{}')).toMatchObject({ height: 26 });
    expect(upstream.count(key)).toBe(1);
    const blockLines = () => proxy.lines().filter((line) => line.route === 'block' && line.status === 200);
    await expect.poll(() => blockLines().length).toBe(30);
    expect([...new Set(blockLines().map((line) => line.pid))].sort()).toEqual([...workerPids(proxy)].sort());

    // The primary relayed the leader's entry to every ask that waited (its 'single-flight done' line, debug): the two
    // other workers, and any later ask of a worker whose own flight had ended or moved on (a new tip meanwhile).
    // Polled: logs go out in batches, up to 250 ms after the line (src/logger.ts).
    const doneLines = () => proxy.lines().filter((line) => line.msg === 'single-flight done' && key.test(String(line.key)));
    await expect.poll(() => doneLines().length).toBeGreaterThanOrEqual(1);
    const done = doneLines();
    const waits = asks(proxy, key).filter((line) => line.outcome === 'wait').length;
    expect(waits).toBeGreaterThanOrEqual(2);
    expect(done, JSON.stringify(asks(proxy, key))).toEqual([expect.objectContaining({ filled: waits, released: 0 })]);
    // Counted by the workers (the warm-up's reads of new blocks go through the primary too: at least).
    expect(sum(await metricsOf(proxy), 'stacks_proxy_primary_singleflight_total', 'outcome="filled"')).toBeGreaterThanOrEqual(2);

    const exit = exitOf(proxy.child);
    proxy.child.kill('SIGTERM');
    expect(await exit).toBe(0);
  });

  it('a leader killed mid-fetch releases its waiters at once (waitMs and the hold are far longer): they fetch themselves', async () => {
    const proxy = await run({ WORKERS: '3', LOG_LEVEL: 'debug' }, { cache: { sharedSingleFlight: { waitMs: 600_000, lockTtlMs: 600_000 } } });
    await expect.poll(() => workerPids(proxy).length).toBe(3);
    const key = /\/extended\/v2\/blocks\/27$/;
    const held = upstream.hold(key);
    const answers = Promise.allSettled(Array.from({ length: 12 }, () => getOnNewConnection(`${proxy.url}/extended/v2/blocks/27`)));
    await expect.poll(() => askedBy(proxy, key, 'lead').size).toBe(1);
    await expect.poll(() => askedBy(proxy, key, 'wait').size).toBe(2);
    const [leader] = askedBy(proxy, key, 'lead');
    process.kill(leader as number, 'SIGKILL');
    // The waiters fetch for themselves: two more requests reach the upstream.
    await expect.poll(() => upstream.count(key), { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    held.release();
    const settled = await answers;
    // The killed leader's own clients lose their connection; every other client gets the block.
    const fulfilled = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    expect(fulfilled.length).toBeGreaterThanOrEqual(2);
    expect(fulfilled.map((a) => a.status)).toEqual(Array(fulfilled.length).fill(200));
    expect(new Set(fulfilled.map((a) => a.body)).size).toBe(1);
    // No leader ever said it was done with the key: its death released the waiters.
    expect(proxy.lines().filter((line) => line.msg === 'single-flight done' && key.test(String(line.key)))).toEqual([]);
    expect(sum(await metricsOf(proxy), 'stacks_proxy_primary_singleflight_total', 'outcome="released"')).toBeGreaterThanOrEqual(2);

    const exit = exitOf(proxy.child);
    proxy.child.kill('SIGTERM');
    expect(await exit).toBe(0);
  });

  it('on SIGTERM a stampede in flight through the primary is answered (1 upstream request), then the primary exits 0', async () => {
    const proxy = await run({ WORKERS: '3', LOG_LEVEL: 'debug' }, patient);
    await expect.poll(() => workerPids(proxy).length).toBe(3);
    const key = /\/extended\/v2\/blocks\/28$/;
    const held = upstream.hold(key);
    const answers = Promise.all(Array.from({ length: 12 }, () => getOnNewConnection(`${proxy.url}/extended/v2/blocks/28`)));
    await expect.poll(() => askedBy(proxy, key, 'wait').size).toBe(2);
    // Every request is in a worker: 3 asks, 9 joined their worker's own flight.
    await expect.poll(async () => sum(await metricsOf(proxy), 'stacks_proxy_singleflight_joined_total', 'route="block"')).toBe(9);
    const exit = exitOf(proxy.child);
    proxy.child.kill('SIGTERM');
    await expect.poll(() => proxy.lines().filter((line) => line.msg === 'stopping' && typeof line.pid === 'number').length).toBe(3);
    held.release();
    const got = await answers;
    expect(got.map((a) => a.status)).toEqual(Array(12).fill(200));
    expect(new Set(got.map((a) => a.body)).size).toBe(1);
    expect(upstream.count(key)).toBe(1);
    expect(await exit).toBe(0);
    for (const pid of workerPids(proxy)) expect(() => process.kill(pid, 0)).toThrow();
  });
});

/**
 * The admin port in worker mode speaks for every worker (src/cluster/primary-admin.ts). Without
 * Redis each worker has only its own memory tier, so a purge must reach each one: the tests
 * below fill every worker's tier with the same block, purge it through the primary's admin port,
 * and then see each worker's first answer for it come from the upstream again. Which worker
 * served a request is read from its access-log line (the pid), found by the X-Request-Id sent.
 */
describe('worker mode: the admin port answers for every worker', () => {
  const token = 'worker-admin-token';
  let sent = 0;

  /** A GET of `path` on a connection of its own: its X-Cache and the pid of the worker that answered. */
  async function served(proxy: Running, path: string): Promise<{ cache: string; pid: number }> {
    const id = `admin-fanout-${sent++}`;
    const cache = await new Promise<string>((resolve, reject) => {
      request(`${proxy.url}${path}`, { agent: false, headers: { 'x-request-id': id } }, (res) => {
        res.resume();
        res.on('end', () => resolve(String(res.headers['x-cache'])));
      })
        .on('error', reject)
        .end();
    });
    await expect.poll(() => proxy.lines().some((line) => line.reqId === id)).toBe(true);
    const line = proxy.lines().find((l) => l.reqId === id) as Record<string, unknown>;
    return { cache, pid: line.pid as number };
  }

  /** Requests `path` until every worker has answered it once: each worker's first answer, by pid. */
  async function untilEveryWorkerServed(proxy: Running, path: string, pids: number[]): Promise<Map<number, string>> {
    const first = new Map<number, string>();
    // The primary hands connections to the workers in turn: a few rounds reach all of them.
    for (let i = 0; i < pids.length * 20 && first.size < pids.length; i++) {
      const { cache, pid } = await served(proxy, path);
      if (!first.has(pid)) first.set(pid, cache);
    }
    expect([...first.keys()].sort()).toEqual([...pids].sort());
    return first;
  }

  const admin = (proxy: Running) => proxy.adminUrl.replace('0.0.0.0', '127.0.0.1');
  const purge = (proxy: Running, body: unknown, authorization = `Bearer ${token}`) =>
    fetch(`${admin(proxy)}/admin/purge`, { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body: JSON.stringify(body) });

  it('without Redis a purge empties every worker’s memory tier; /status.json, /admin/cache and /ready count every worker', async () => {
    sent = 0;
    const proxy = await run({ WORKERS: '3', ADMIN_TOKEN: token });
    await expect.poll(() => workerPids(proxy).length).toBe(3);
    const pids = workerPids(proxy);
    const path = '/extended/v2/blocks/21';

    // Every worker holds the block: after its first answer each worker answers HIT.
    await untilEveryWorkerServed(proxy, path, pids);
    const before = await untilEveryWorkerServed(proxy, path, pids);
    expect([...before.values()]).toEqual(['HIT', 'HIT', 'HIT']);

    // The token is checked by the workers: a wrong one is refused by all of them alike, as one 401.
    const refused = await purge(proxy, { url: path }, 'Bearer wrong');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    expect(await refused.json()).toMatchObject({ statusCode: 401, error: 'Unauthorized' });

    const purged = await purge(proxy, { url: path });
    expect(purged.status).toBe(200);
    // The single-process shape, the three workers' memory entries added up: one each.
    expect(await purged.json()).toEqual({ purged: { memory: 3, redis: null }, matched: { kind: 'keys', keys: [expect.any(String)] }, coalesced: false });

    // No worker answers HIT any more: each one's first answer after the purge is a miss.
    const after = await untilEveryWorkerServed(proxy, path, pids);
    expect([...after.values()]).not.toContain('HIT');

    // The status report is the host's: every worker listed, the requests of all of them counted.
    const status = await fetch(`${admin(proxy)}/status.json`);
    expect(status.status).toBe(200);
    expect(status.headers.get('content-security-policy')).toContain("default-src 'none'");
    const report = (await status.json()) as {
      traffic: { requests: number };
      cache: { memory: { entries: number } };
      purges: { local: number };
      workers: Array<{ pid: number; error: string | null; requests: number; memoryEntries: number }>;
    };
    expect(report.workers.map((w) => w.pid).sort()).toEqual([...pids].sort());
    expect(report.workers.map((w) => w.error)).toEqual([null, null, null]);
    expect(report.traffic.requests).toBe(sent);
    expect(report.traffic.requests).toBe(report.workers.reduce((total, w) => total + w.requests, 0));
    expect(report.cache.memory.entries).toBe(report.workers.reduce((total, w) => total + w.memoryEntries, 0));
    expect(report.purges.local).toBe(3);

    // GET /admin/cache is the host's too: every worker's tier, lookups and purges added up, a line each.
    const stats = await fetch(`${admin(proxy)}/admin/cache`, { headers: { authorization: `Bearer ${token}` } });
    expect(stats.status).toBe(200);
    const cache = (await stats.json()) as {
      tiers: { memory: { entries: number } };
      lookups: { all: { total: number } };
      purges: { local: number };
      workers: Array<{ pid: number; memory: { entries: number }; lookups: number }>;
    };
    expect(cache.workers.map((w) => w.pid).sort()).toEqual([...pids].sort());
    expect(cache.tiers.memory.entries).toBe(cache.workers.reduce((total, w) => total + w.memory.entries, 0));
    expect(cache.lookups.all.total).toBe(sent);
    expect(cache.lookups.all.total).toBe(cache.workers.reduce((total, w) => total + w.lookups, 0));
    expect(cache.purges.local).toBe(3);
    expect((await fetch(`${admin(proxy)}/admin/cache`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);

    // Ready: every worker is.
    const ready = await fetch(`${admin(proxy)}/ready`);
    expect(ready.status).toBe(200);
    const readiness = (await ready.json()) as { ready: boolean; workers: Array<{ pid: number; ready: boolean }> };
    expect(readiness.ready).toBe(true);
    expect(readiness.workers.map((w) => w.pid).sort()).toEqual([...pids].sort());

    const exit = exitOf(proxy.child);
    proxy.child.kill('SIGTERM');
    expect(await exit).toBe(0);
  });

  it('a purge that fails on the workers (their Redis is gone) is answered 503 in the admin API’s error shape', async () => {
    const ownRedis = await startRedis();
    try {
      const proxy = await run({ WORKERS: '2', ADMIN_TOKEN: token, REDIS_URL: ownRedis.url });
      await expect.poll(() => workerPids(proxy).length).toBe(2);
      await ownRedis.stop();
      const failed = await purge(proxy, { all: true });
      expect(failed.status).toBe(503);
      const body = (await failed.json()) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(['statusCode', 'error', 'message']);
      expect(body).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
      expect(body.message).toMatch(/Redis failed/);

      const exit = exitOf(proxy.child);
      proxy.child.kill('SIGTERM');
      await exit;
    } finally {
      await ownRedis.stop();
    }
  });
});
