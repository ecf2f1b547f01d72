/**
 * Worker mode keeps one chain tip poll and one push feed per host (src/cluster/tip-leader.ts,
 * worker-tip-share.ts): real processes (`node dist/src/main.js`, WORKERS=3, no Redis) against the
 * counting fake upstream. The primary names the tip leader in its log ('tip leader', with its pid);
 * each access-log line carries the pid of the worker that served it and the request id the answer
 * carries, which is how a test knows which worker answered.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyToAddress, randomPrivateKey } from '@stacks/transactions';
import { startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { startActivityUpstream, type ActivityUpstream } from '../support/activity-upstream.js';
import { exitOf, getOnNewConnection, startCluster, type RunningCluster } from '../support/cluster-proxy.js';

let configDir: string;
const upstreams: Array<FakeUpstream | ActivityUpstream> = [];

beforeAll(() => {
  configDir = mkdtempSync(join(tmpdir(), 'scp-tip-leader-'));
});
afterAll(async () => {
  await Promise.all(upstreams.map((u) => u.close()));
  rmSync(configDir, { recursive: true, force: true });
});

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

type Running = RunningCluster;

/** Three workers against `upstream`, every hit logged. */
const run = (upstream: FakeUpstream, config: object): Promise<Running> =>
  startCluster({ upstreamUrl: upstream.url, configDir, env: { WORKERS: '3' }, config, started });

const workerPids = (proxy: Running) =>
  proxy
    .lines()
    .filter((line) => line.msg === 'worker ready')
    .map((line) => line.pid as number);
const leaderPids = (proxy: Running) =>
  proxy
    .lines()
    .filter((line) => line.msg === 'tip leader')
    .map((line) => line.pid as number);
const metricsOf = async (proxy: Running) => (await fetch(`${proxy.adminUrl}/metrics`)).text();
/** The sum of a metric's samples whose labels contain `label` (all of them without). */
const sampleSum = (metrics: string, name: string, label = '') =>
  [...metrics.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))]
    .filter((m) => (m[1] ?? '').includes(label))
    .reduce((sum, m) => sum + Number(m[2]), 0);
const tipPolls = async (proxy: Running) => {
  const metrics = await metricsOf(proxy);
  return {
    leader: sampleSum(metrics, 'stacks_proxy_tip_polls_total', 'role="leader"'),
    follower: sampleSum(metrics, 'stacks_proxy_tip_polls_total', 'role="follower"'),
  };
};

const LATEST = '/extended/v2/blocks/latest';

/**
 * Asks for the latest block (a tip-class answer, cached per worker until a new tip or tipSafetyMs)
 * over new connections until every live worker has answered at least once; resolves with the
 * heights each worker's answers named.
 */
async function latestFromEveryWorker(proxy: Running, pids: number[]): Promise<Map<number, Set<number>>> {
  const heights = new Map<number, Set<number>>();
  for (let round = 0; round < 50 && !pids.every((pid) => heights.has(pid)); round++) {
    const answers = await Promise.all(Array.from({ length: 6 }, () => getOnNewConnection(proxy.url + LATEST)));
    await expect.poll(() => answers.every((a) => proxy.lines().some((line) => line.reqId === a.requestId))).toBe(true);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      const pid = proxy.lines().find((line) => line.reqId === answer.requestId)?.pid as number;
      const height = (JSON.parse(answer.body) as { height: number }).height;
      heights.set(pid, (heights.get(pid) ?? new Set()).add(height));
    }
  }
  expect([...heights.keys()].sort()).toEqual([...pids].sort());
  return heights;
}

/** Every worker answers the latest block at `height` (a worker that did not poll would answer its cached one). */
async function everyWorkerServes(proxy: Running, pids: number[], height: number): Promise<void> {
  await expect
    .poll(async () => [...(await latestFromEveryWorker(proxy, pids)).values()].every((heights) => heights.size === 1 && heights.has(height)), {
      timeout: 20_000,
    })
    .toBe(true);
}

describe('worker mode: one tip poll per host', () => {
  it('3 workers poll the tip about as often as one process; a new block reaches every worker; a killed leader is succeeded', async () => {
    const upstream = await startFakeUpstream();
    upstreams.push(upstream);
    // Polled every 100 ms on the interval; a follower's own fallback poll (crossCheckIntervalMs) never comes in this test.
    const proxy = await run(upstream, { chainTip: { pollIntervalMs: 100 }, live: { push: { enabled: false, crossCheckIntervalMs: 600_000 } } });
    await expect.poll(() => workerPids(proxy).length).toBe(3);
    await expect.poll(() => leaderPids(proxy).length).toBe(1);
    const [leader] = leaderPids(proxy);
    expect(sampleSum(await metricsOf(proxy), 'stacks_proxy_tip_leader')).toBe(1);

    // Over a window of at least 30 leader polls, the upstream sees hardly more: the followers poll
    // only on news, and the chain does not move (3 workers polling each would be about 3x).
    const before = await tipPolls(proxy);
    const upstreamBefore = upstream.count('/extended');
    await expect.poll(async () => (await tipPolls(proxy)).leader - before.leader, { timeout: 20_000 }).toBeGreaterThanOrEqual(30);
    const after = await tipPolls(proxy);
    const upstreamPolls = upstream.count('/extended') - upstreamBefore;
    const leaderPolls = after.leader - before.leader;
    expect(after.follower - before.follower).toBeLessThan(3);
    expect(upstreamPolls).toBeLessThan(1.5 * leaderPolls);
    expect(upstreamPolls).toBeGreaterThanOrEqual(leaderPolls - 2);

    // Every worker has the latest block cached; a new block: every worker answers it (each polled on the leader's news).
    const pids = workerPids(proxy);
    await latestFromEveryWorker(proxy, pids);
    upstream.advanceTip();
    await everyWorkerServes(proxy, pids, upstream.tip().height);
    const news = await tipPolls(proxy);
    expect(news.follower - after.follower).toBeGreaterThanOrEqual(2);

    // The leader killed: a surviving worker leads, polls on the interval, and a new block reaches every worker again.
    process.kill(leader as number, 'SIGKILL');
    await expect.poll(() => leaderPids(proxy).length, { timeout: 15_000 }).toBe(2);
    const successor = leaderPids(proxy)[1] as number;
    expect(successor).not.toBe(leader);
    expect(pids).toContain(successor);
    await expect.poll(() => proxy.lines().filter((line) => line.msg === 'worker ready').length, { timeout: 15_000 }).toBe(4);
    const live = workerPids(proxy).filter((pid) => pid !== leader);
    await expect.poll(async () => sampleSum(await metricsOf(proxy), 'stacks_proxy_tip_leader')).toBe(1);
    const succeeded = await tipPolls(proxy);
    await expect.poll(async () => (await tipPolls(proxy)).leader - succeeded.leader, { timeout: 20_000 }).toBeGreaterThanOrEqual(10);
    await latestFromEveryWorker(proxy, live);
    upstream.advanceTip();
    await everyWorkerServes(proxy, live, upstream.tip().height);

    const exit = exitOf(proxy.child);
    proxy.child.kill('SIGTERM');
    expect(await exit).toBe(0);
  }, 120_000);

  it('holds one push feed connection for 3 workers, and a pushed block reaches every worker', async () => {
    const upstream = await startFakeUpstream({ rpcChannel: true });
    upstreams.push(upstream);
    // No poll on an interval within the test: only the push feed makes anyone poll.
    const proxy = await run(upstream, { chainTip: { pollIntervalMs: 600_000 }, live: { push: { crossCheckIntervalMs: 600_000 } } });
    await expect.poll(() => workerPids(proxy).length).toBe(3);
    await expect.poll(() => leaderPids(proxy).length).toBe(1);
    await expect.poll(async () => sampleSum(await metricsOf(proxy), 'stacks_proxy_push_feed_believed'), { timeout: 10_000 }).toBe(1);
    const metrics = await metricsOf(proxy);
    expect(sampleSum(metrics, 'stacks_proxy_upstream_ws_connections', 'channel="rpc"')).toBe(1);
    expect(upstream.openWebSockets).toBe(1);
    expect(upstream.count((r) => r.method === 'UPGRADE')).toBe(1);

    const pids = workerPids(proxy);
    await latestFromEveryWorker(proxy, pids);
    upstream.advanceTip();
    await everyWorkerServes(proxy, pids, upstream.tip().height);
    expect(upstream.count((r) => r.method === 'UPGRADE')).toBe(1);

    const exit = exitOf(proxy.child);
    proxy.child.kill('SIGTERM');
    expect(await exit).toBe(0);
  }, 120_000);

  it("reports the tip leader's poll mode for an upstream that refuses the push feed's upgrade, warned once for the host", async () => {
    const upstream = await startFakeUpstream({ rpcChannel: true });
    upstreams.push(upstream);
    upstream.setFailing({ status: 404 }, /^\/extended\/v1\/ws/);
    const proxy = await run(upstream, { chainTip: { pollIntervalMs: 500 } });
    await expect.poll(() => leaderPids(proxy).length).toBe(1);
    const [leader] = leaderPids(proxy);
    const warning = 'upstream WebSocket unavailable: tried again with backoff; the chain tip is polled meanwhile';
    await expect.poll(() => proxy.lines().filter((line) => line.msg === warning).length, { timeout: 10_000 }).toBe(1);
    expect(proxy.lines().find((line) => line.msg === warning)?.pid).toBe(leader);
    // Only the leader follows the tip: one sample at 1, mode poll.
    await expect.poll(async () => sampleSum(await metricsOf(proxy), 'stacks_proxy_upstream_push_mode', 'mode="poll"'), { timeout: 10_000 }).toBe(1);
    expect(sampleSum(await metricsOf(proxy), 'stacks_proxy_upstream_push_mode', 'mode="push"')).toBe(0);
    const report = (await (await fetch(`${proxy.adminUrl}/status.json`)).json()) as { upstreams: Array<{ origin: string; push: unknown }> };
    expect(report.upstreams.find((u) => u.origin === upstream.url)?.push).toMatchObject({ mode: 'poll', reason: 'upgrade refused 404' });
    // One link for the host, backing off: a few attempts, however many workers.
    expect(upstream.count((r) => r.method === 'UPGRADE')).toBeLessThanOrEqual(4);

    const exit = exitOf(proxy.child);
    proxy.child.kill('SIGTERM');
    expect(await exit).toBe(0);
  }, 120_000);
});

/** The X-Cache of each worker's first answer to `path` (asked over new connections until every worker has answered). */
async function firstCacheOfEveryWorker(proxy: Running, path: string, pids: number[]): Promise<Map<number, string>> {
  const first = new Map<number, string>();
  for (let round = 0; round < 50 && first.size < pids.length; round++) {
    const answers = await Promise.all(Array.from({ length: 6 }, () => getOnNewConnection(proxy.url + path)));
    await expect.poll(() => answers.every((a) => proxy.lines().some((line) => line.reqId === a.requestId))).toBe(true);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      const line = proxy.lines().find((l) => l.reqId === answer.requestId) as { pid: number; cache: string };
      if (!first.has(line.pid)) first.set(line.pid, line.cache);
    }
  }
  expect([...first.keys()].sort()).toEqual([...pids].sort());
  return first;
}

describe('worker mode: one mempool watcher and one block learner per host', () => {
  it("only the tip leader polls the mempool and learns blocks; every follower takes its word, so a principal's entries stay fresh past their TTL and across a block on every worker", async () => {
    const upstream = await startActivityUpstream();
    upstreams.push(upstream);
    const proxy = await startCluster({
      upstreamUrl: upstream.url,
      configDir,
      env: { WORKERS: '3' },
      // No warm-up: a worker that fetched the balance again on a new block would answer HIT without having learned it.
      config: { chainTip: { pollIntervalMs: 200 }, live: { push: { enabled: false }, warm: { enabled: false } } },
      started,
    });
    await expect.poll(() => workerPids(proxy).length).toBe(3);
    await expect.poll(() => leaderPids(proxy).length).toBe(1);
    const pids = workerPids(proxy);

    // About one poll of the mempool per interval for the host: 2 s at 200 ms is about 10 (three watchers would be about 30).
    const before = upstream.count(/\/tx\/mempool\?/);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const polls = upstream.count(/\/tx\/mempool\?/) - before;
    expect(polls).toBeGreaterThanOrEqual(4);
    expect(polls).toBeLessThanOrEqual(15);

    // Every worker holds a balance (a principal's mempool-class entry, 2 s TTL and 2 s of stale-while-revalidate) ...
    const erin = privateKeyToAddress(randomPrivateKey(), 'testnet');
    const path = `/extended/v1/address/${erin}/stx`;
    await firstCacheOfEveryWorker(proxy, path, pids);
    const asked = new RegExp(`${path}$`);
    const fetched = upstream.count(asked);
    // ... and past TTL and stale window, each still answers HIT: the leader's polls (304s: the mempool
    // did not change) vouch for it on the followers too, and nobody asked the upstream again.
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    const after = await firstCacheOfEveryWorker(proxy, path, pids);
    expect([...after.values()]).toEqual(['HIT', 'HIT', 'HIT']);
    expect(upstream.count(asked)).toBe(fetched);

    // A block that does not touch Erin: the leader alone asks for its transactions, and every worker
    // learns from its word that Erin's balance did not change (HIT across the block, not asked again).
    const block = upstream.mine([upstream.transfer(privateKeyToAddress(randomPrivateKey(), 'testnet'), privateKeyToAddress(randomPrivateKey(), 'testnet'))]);
    const learnerAsked = new RegExp(`/extended/v2/blocks/${block.indexBlockHash}/transactions`);
    await expect.poll(() => upstream.count(learnerAsked), { timeout: 5_000 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const acrossTheBlock = await firstCacheOfEveryWorker(proxy, path, pids);
    expect([...acrossTheBlock.values()]).toEqual(['HIT', 'HIT', 'HIT']);
    expect(upstream.count(learnerAsked)).toBe(1);
    expect(upstream.count(asked)).toBe(fetched);

    const exit = exitOf(proxy.child);
    proxy.child.kill('SIGTERM');
    expect(await exit).toBe(0);
  }, 60_000);
});
