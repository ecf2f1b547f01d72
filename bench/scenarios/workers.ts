/**
 * Scenario 14 (issue 18): worker mode (`server.workers`, WORKERS).
 *
 * Throughput: the memory hit under wrk (threads = N, the same total connections for every
 * variant) on one proxy process pinned to CPU 0 (what one process gets from a core of its own:
 * the "N x one" the issue asks about), on one process free to use every core, and on WORKERS=N
 * for N = the machine's cores (what os.availableParallelism() gives a proxy free to use them all;
 * and N = 2 as well where there are more cores), free to use
 * every core: worker mode is never pinned to one CPU. CPU per request sums the primary and all
 * its workers (pids from /proc). The load generator runs on the bench's own CPU (CPU 1), so on a
 * 2-core machine it shares a core with a worker: the figure is what N workers give here, not how
 * worker mode scales on N free cores.
 *
 * Single-flight across workers without Redis (the primary relays, src/cluster/flight-coordinator.ts):
 * cold misses on distinct keys (upstream +20 ms) at a fixed rate that saturates nothing, WORKERS=1
 * and WORKERS=2, both free to use every core: what the IPC round trip before each upstream request
 * adds at p50 and p99; and a stampede: bursts of identical misses on 50 connections (spread over
 * the workers by the primary), one new key per burst: upstream requests per burst.
 */
import { Agent, get } from 'node:http';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type autocannon from 'autocannon';
import { isAnswering, stopChild, waitFor } from '../../testkit/index.js';
import { addedP50, addedP99, cpuRatio, ms, UNSATURATED } from '../lib/compare.js';
import { alternate, generatorsOf, type Target } from '../lib/load.js';
import { byLabel, scrape } from '../lib/metrics.js';
import { childPids, HAS_TASKSET, startProxy, type Server } from '../lib/proc.js';
import { ratio, type Section } from '../lib/report.js';
import { HIT_PATH, type Context } from './context.js';

const LATENCY_MS = 20;
const STAMPEDE_CONNECTIONS = 50;
const STAMPEDE_BURSTS = 20;
/** Every CPU of the machine, as a taskset list: a child started from the bench would otherwise inherit its CPU 1. */
const ALL_CPUS = `0-${cpus().length - 1}`;

type Proxy = Server & { adminUrl: string; pids: number[] };

/**
 * A proxy with `workers` processes (1: no cluster), no Redis, on `cpu`, put in `started` as soon as
 * it runs (for the caller to stop, whatever fails later); its pids: the process, or the primary and every worker.
 */
async function startWorkers(upstreamUrl: string, workers: number, cpu: number | string, started: Proxy[]): Promise<Proxy> {
  const server = await startProxy({ upstreamUrl, cpu, config: { server: { workers } } });
  const proxy: Proxy = { ...server, pids: [server.pid] };
  started.push(proxy);
  if (workers > 1) {
    // The primary opens its admin port once every worker is ready; its workers are its children.
    await waitFor(() => isAnswering(`${proxy.adminUrl}/health`), { timeoutMs: 30_000, what: `the primary's admin port (${workers} workers)` });
    await waitFor(async () => childPids(proxy.pid).length >= workers, { timeoutMs: 5_000, what: `${workers} workers` });
    proxy.pids.push(...childPids(proxy.pid));
  }
  return proxy;
}

/** One request per new connection (the primary hands connections to the workers in turn): every worker gets to see `path`. */
async function onFreshConnections(url: string, path: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await new Promise<void>((resolve, reject) => get(url + path, { agent: false }, (res) => res.resume().on('end', resolve)).on('error', reject));
  }
}

/** Requests for ids no other request (of any variant or round) uses: a cold miss each (the upstream answers 404, which the proxy stores). */
function distinctTxIds(prefix: string): autocannon.Request[] {
  let n = 0;
  return [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/extended/v1/tx/0x${prefix}${(n++).toString(16).padStart(62, '0')}` }) }];
}

/** `count` concurrent GETs of `url` over `agent`'s connections; the X-Cache of each answer. */
function burst(agent: Agent, url: string, count: number): Promise<string[]> {
  const one = () =>
    new Promise<string>((resolve, reject) =>
      get(url, { agent }, (res) => {
        res.resume().on('end', () => resolve(String(res.headers['x-cache'] ?? res.statusCode)));
      }).on('error', reject),
    );
  return Promise.all(Array.from({ length: count }, one));
}

interface Stampede {
  bursts: number;
  connections: number;
  upstreamPerBurst: number[];
  xCache: Record<string, number>;
  primaryOutcomes: Record<string, number>;
}

/** Bursts of identical misses (one new key per burst) over `connections` keep-alive connections spread over the workers. */
async function stampede({ upstream }: Context, proxy: Proxy, bursts: number, connections: number): Promise<Stampede> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  try {
    await burst(agent, proxy.url + HIT_PATH, connections); // opens every connection (each to a worker in turn)
    const before = byLabel(await scrape(proxy.adminUrl), 'stacks_proxy_primary_singleflight_total', 'outcome');
    const upstreamPerBurst: number[] = [];
    const xCache: Record<string, number> = {};
    for (let i = 0; i < bursts; i++) {
      const path = `/extended/v1/tx/0xc0${i.toString(16).padStart(62, '0')}`;
      for (const answer of await burst(agent, proxy.url + path, connections)) xCache[answer] = (xCache[answer] ?? 0) + 1;
      upstreamPerBurst.push(upstream.count(path));
    }
    const after = byLabel(await scrape(proxy.adminUrl), 'stacks_proxy_primary_singleflight_total', 'outcome');
    const primaryOutcomes = Object.fromEntries(Object.entries(after).map(([outcome, n]) => [outcome, n - (before[outcome] ?? 0)]));
    return { bursts, connections, upstreamPerBurst, xCache, primaryOutcomes };
  } finally {
    agent.destroy();
  }
}

/** Hits: one process on CPU 0, one free, and WORKERS=n for each n, with wrk at threads = the largest n. */
async function throughput({ options, upstream }: Context, counts: number[]) {
  const top = Math.max(...counts);
  const connections = Math.max(options.connections, 25 * top);
  const proxies: Proxy[] = [];
  try {
    // One after another: started at once on a busy 2-core machine, they miss the start-up timeout.
    const pinned = await startWorkers(upstream.url, 1, 0, proxies);
    const free = await startWorkers(upstream.url, 1, ALL_CPUS, proxies);
    const clusters: Proxy[] = [];
    for (const n of counts) clusters.push(await startWorkers(upstream.url, n, ALL_CPUS, proxies));
    for (const proxy of proxies) await onFreshConnections(proxy.url, HIT_PATH, 2 * top);
    const hit = (proxy: Proxy): Target[] => [{ url: proxy.url + HIT_PATH, pids: proxy.pids, preferWrk: true, connections, wrkThreads: top }];
    const variants: Record<string, Target[]> = { one: hit(pinned), oneFree: hit(free) };
    counts.forEach((n, i) => (variants[`workers${n}`] = hit(clusters[i] as Proxy)));
    return { runs: await alternate('workers: hits', variants, options), connections, threads: top };
  } finally {
    for (const proxy of proxies) await stopChild(proxy.child);
  }
}

/** Cold misses at a fixed rate on WORKERS=1 and WORKERS=2 (both free to use every core), then the stampede on WORKERS=2. */
async function singleFlight(context: Context) {
  const { options, upstream } = context;
  const proxies: Proxy[] = [];
  try {
    const one = await startWorkers(upstream.url, 1, ALL_CPUS, proxies);
    const two = await startWorkers(upstream.url, 2, ALL_CPUS, proxies);
    upstream.setDelay(LATENCY_MS);
    const fixed = { rate: UNSATURATED.rate, connections: UNSATURATED.connections, exactLatency: true };
    const runs = await alternate(
      'workers: cold misses',
      {
        direct: [{ url: upstream.url, requests: distinctTxIds('a0'), ...fixed }],
        one: [{ url: one.url, pids: one.pids, requests: distinctTxIds('a1'), ...fixed }],
        two: [{ url: two.url, pids: two.pids, requests: distinctTxIds('a2'), ...fixed }],
      },
      options,
    );
    await sleep(4 * LATENCY_MS); // requests of the last run still in flight
    const herd = await stampede(context, two, options.quick ? 5 : STAMPEDE_BURSTS, STAMPEDE_CONNECTIONS);
    return { runs, herd };
  } finally {
    upstream.setDelay(0);
    for (const proxy of proxies) await stopChild(proxy.child);
  }
}

export async function workers(context: Context): Promise<Section> {
  // What os.availableParallelism() gives a proxy free to use every core (WORKERS=0); the bench's own says 1: it is pinned to CPU 1.
  const cores = cpus().length;
  const n = Math.max(2, cores);
  const counts = n > 2 ? [2, n] : [n];
  const hits = await throughput(context, counts);
  const misses = await singleFlight(context);
  const { runs } = hits;
  const one = runs.one;
  const s = '14 workers';
  const load = `wrk -t${hits.threads} -c${hits.connections}`;
  const rows = [
    { scenario: s, name: `one process (WORKERS=1) on CPU 0, ${load}`, run: one },
    { scenario: s, name: `one process (WORKERS=1), every core, ${load}`, run: runs.oneFree, baseline: one },
    ...counts.map((k) => ({
      scenario: s,
      name: `WORKERS=${k}, every core, ${load}`,
      run: runs[`workers${k}`],
      baseline: one,
      note: `${ratio(runs[`workers${k}`]?.requestsPerSecond, k * (one?.requestsPerSecond ?? NaN))}x ${k} x one process on CPU 0, ${ratio(runs[`workers${k}`]?.requestsPerSecond, runs.oneFree?.requestsPerSecond)}x one process on every core; CPU: primary + ${k} workers`,
    })),
  ];
  const m = misses.runs;
  const atRate = `${UNSATURATED.rate} req/s offered over ${UNSATURATED.connections} connections`;
  const missRows = [
    { scenario: `${s}, cold miss +${LATENCY_MS} ms`, name: `the fake upstream called directly, ${atRate}`, run: m.direct },
    {
      scenario: `${s}, cold miss +${LATENCY_MS} ms`,
      name: `WORKERS=1, every core, ${atRate}`,
      run: m.one,
      baseline: m.direct,
      note: `added p50 ${ms(addedP50(m.one, m.direct))}, p99 ${ms(addedP99(m.one, m.direct))}`,
    },
    {
      scenario: `${s}, cold miss +${LATENCY_MS} ms`,
      name: `WORKERS=2 without Redis (single-flight through the primary), every core, ${atRate}`,
      run: m.two,
      baseline: m.direct,
      note: `vs WORKERS=1: p50 ${ms(addedP50(m.two, m.one))}, p99 ${ms(addedP99(m.two, m.one))}, CPU ${cpuRatio(m.two, m.one)}`,
    },
  ];
  const herd = misses.herd;
  const perBurst = [...new Set(herd.upstreamPerBurst)].sort((a, b) => a - b).join(', ');
  const top = counts[counts.length - 1] as number;
  const workersTop = runs[`workers${top}`];
  return {
    id: 'workers',
    rows: [...rows, ...missRows],
    findings: [
      `Worker mode on ${cores} cores: WORKERS=${top} served ${workersTop?.requestsPerSecond} req/s of the memory hit: ` +
        `${ratio(workersTop?.requestsPerSecond, top * (one?.requestsPerSecond ?? NaN))}x ${top} x one process on CPU 0 (${one?.requestsPerSecond} req/s), ` +
        `${ratio(workersTop?.requestsPerSecond, one?.requestsPerSecond)}x one process on CPU 0 and ${ratio(workersTop?.requestsPerSecond, runs.oneFree?.requestsPerSecond)}x one process ` +
        `free to use every core (${runs.oneFree?.requestsPerSecond} req/s: like for like, the same cores to run on). CPU per request ${one?.cpuMicrosPerRequest} µs ` +
        `(one process on CPU 0), ${runs.oneFree?.cpuMicrosPerRequest} µs (one on every core), ${workersTop?.cpuMicrosPerRequest} µs (primary and workers summed); ` +
        `p99 ${one?.p99Ms}, ${runs.oneFree?.p99Ms}, ${workersTop?.p99Ms} ms. Load generator: ${generatorsOf([one, workersTop])} ` +
        `(${hits.threads} threads, ${hits.connections} connections for every variant) ${HAS_TASKSET ? "on CPU 1, the bench process's core" : 'unpinned (no taskset)'}` +
        `, so ${cores <= top ? `it shares a core with a worker: this is what ${top} workers give on this host with its clients on it, not how worker mode scales on ${top} free cores` : 'it runs beside the workers'}.`,
      `Single-flight through the primary (no Redis), cold misses at ${atRate}, upstream +${LATENCY_MS} ms: WORKERS=2 adds ${ms(addedP50(m.two, m.one))} at p50 and ` +
        `${ms(addedP99(m.two, m.one))} at p99 over WORKERS=1 (the IPC round trip to the primary before each upstream request, and the processes' wake-ups on ${cores} cores), ` +
        `at ${m.two?.cpuMicrosPerRequest} µs of CPU per miss (primary and workers) against ${m.one?.cpuMicrosPerRequest} µs; ` +
        `answered ${m.direct?.requestsPerSecond} (direct), ${m.one?.requestsPerSecond} and ${m.two?.requestsPerSecond} req/s of the ${UNSATURATED.rate} offered. ` +
        `Stampede on WORKERS=2: ${herd.bursts} bursts of ${herd.connections} concurrent identical misses (one new key each, over ${herd.connections} keep-alive connections) ` +
        `cost the upstream ${perBurst} request(s) per burst (must be 1); answers ${JSON.stringify(herd.xCache)}; the workers' misses through the primary: ${JSON.stringify(herd.primaryOutcomes)}.`,
    ],
    data: {
      cores,
      counts,
      hits,
      misses: { runs: m, stampede: herd },
      load: { threads: hits.threads, connections: hits.connections, generatorCpu: HAS_TASKSET ? 1 : 'unpinned' },
    },
  };
}
