/**
 * `npm run bench`: load figures for the proxy, each reported next to a baseline measured in
 * the same run on the same machine (these machines are shared and noisy: absolute numbers
 * vary up to 2x between runs, ratios much less).
 *
 * Scenarios (autocannon, 32 connections, from this process):
 * - baseline:   a bare node:http server answering the same bytes from a Map (the ceiling);
 * - upstream:   the fake upstream answered directly (what a miss costs without the proxy);
 * - hit:        the proxy answering a cached transaction (one URL, memory tier);
 * - hit-limited: the same with rate limiting on (memory budget, limits too high to refuse),
 *               in the same run as `hit`: the cost of limiting on the hit path, reported as a ratio;
 * - hit-redis:  the same with Redis configured as the shared tier (hits stay in memory);
 * - hit-redis-limited: hit-redis with rate limiting on: one EVALSHA round trip per request;
 * - mixed:      the 13 routes over ~40 URLs while a new block arrives every 2 s and the
 *               mempool changes, to measure upstream offload (client requests per upstream request).
 *
 * Servers under test run as child processes pinned to CPU 0 when `taskset` exists; this process
 * (load generator and fake upstream) moves to CPU 1. Server CPU time per request comes from
 * /proc/<pid>/stat, memory from /proc/<pid>/status. Results go to bench/results/latest.{json,md}.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { projectRoot } from '../src/paths.js';
import { RECORDED, freePort, isAnswering, startFakeUpstream, startRedis, stopChild, waitFor, type FakeUpstream, type TestRedis } from '../testkit/index.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROOT = projectRoot();
const HAS_TASKSET = spawnSync('taskset', ['-V']).status === 0;
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

const HIT_PATH = `/extended/v1/tx/${RECORDED.confirmedTxId}`;

interface Measured {
  scenario: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  cpuMicrosPerRequest?: number;
  rssMiB?: number;
  upstreamRequests?: number;
  offload?: number;
}

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : Number.NaN;
}

function pinned(args: string[]): [string, string[]] {
  return HAS_TASKSET ? ['taskset', ['-c', '0', ...args]] : [args[0] as string, args.slice(1)];
}

const waitForHttp = (url: string) => waitFor(() => isAnswering(url), { timeoutMs: 10_000, what: url });

function startChild(args: string[], env: Record<string, string>): ChildProcess {
  const [command, rest] = pinned(args);
  const child = spawn(command, rest, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  return child;
}

/** The pid of the node process itself (taskset execs it, so it is the same pid). */
const pidOf = (child: ChildProcess): number => child.pid as number;

async function load(url: string, requests?: Array<{ path: string }>): Promise<autocannon.Result> {
  // A short warm-up so connection set-up and JIT are not measured.
  await autocannon({ url, connections: CONNECTIONS, duration: 1, requests });
  return autocannon({ url, connections: CONNECTIONS, duration: SECONDS, requests });
}

async function measure(scenario: string, url: string, pid?: number, requests?: Array<{ path: string }>): Promise<Measured> {
  process.stderr.write(`bench: ${scenario}\n`);
  const cpuBefore = pid ? cpuSeconds(pid) : 0;
  const result = await load(url, requests);
  const total = result.requests.total;
  return {
    scenario,
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.non2xx,
    cpuMicrosPerRequest: pid ? Math.round(((cpuSeconds(pid) - cpuBefore) / total) * 1e6 * 10) / 10 : undefined,
    rssMiB: pid ? rssMiB(pid) : undefined,
  };
}

/** A config file turning rate limiting on with limits no benchmark run can reach. */
function rateLimitedConfigFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'scp-bench-')), 'config.json');
  const limit = 1_000_000_000;
  writeFileSync(file, JSON.stringify({ rateLimit: { enabled: true, windowMs: 60_000, anonymous: { limit }, keyed: { limit } } }));
  return file;
}

async function startProxyProcess(upstream: FakeUpstream, redis?: TestRedis, configFile?: string): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = startChild(['node', join(ROOT, 'dist/src/main.js')], {
    ...(configFile ? { CONFIG_FILE: configFile } : {}),
    PORT: String(port),
    HOST: '127.0.0.1',
    UPSTREAM_URLS: upstream.url,
    REDIS_URL: redis?.url ?? '',
    LOG_LEVEL: 'info', // the default: one log line per request is part of the cost
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/health`);
  return { child, url };
}

/** ~40 URLs over the 13 routes, as a wallet or explorer would mix them. */
function mixedPaths(): Array<{ path: string }> {
  const P = RECORDED.principal;
  const paths = [
    `/extended/v1/address/${P}/stx`,
    `/extended/v1/address/${P}/balances`,
    `/extended/v1/address/${P}/transactions`,
    `/extended/v1/address/${P}/transactions?limit=5`,
    `/extended/v2/addresses/${P}/transactions`,
    `/extended/v1/tx/events?address=${P}`,
    '/extended/v2/mempool/fees',
    '/extended/v1/tx/mempool/stats',
    '/extended/v2/blocks/latest',
    `/extended/v1/tx/${RECORDED.confirmedTxId}`,
    `/extended/v1/tx/${RECORDED.pendingTxId}`,
    `/extended/v1/tx/multiple?tx_id=${RECORDED.confirmedTxId},${RECORDED.pendingTxId}`,
    `/extended/v1/contract/${RECORDED.contractId}/events`,
    `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`,
    `/extended/v1/tx/events?tx_id=${RECORDED.confirmedTxId}`,
  ];
  for (let height = 1; height <= 25; height++) paths.push(`/extended/v2/blocks/${height}`);
  return paths.map((path) => ({ path }));
}

function ratio(value: number | undefined, base: number | undefined): string {
  if (value === undefined || base === undefined || !base) return '';
  return `${(value / base).toFixed(2)}x`;
}

function report(results: Measured[]): string {
  const baseline = results.find((r) => r.scenario === 'baseline');
  const rows = results.map((r) =>
    [
      r.scenario,
      r.requestsPerSecond,
      ratio(r.requestsPerSecond, baseline?.requestsPerSecond),
      r.p50Ms,
      r.p99Ms,
      r.cpuMicrosPerRequest ?? '',
      ratio(r.cpuMicrosPerRequest, baseline?.cpuMicrosPerRequest),
      r.rssMiB ?? '',
      r.errors,
      r.offload === undefined ? '' : `${r.offload} (${r.upstreamRequests} upstream requests)`,
    ].join(' | '),
  );
  const costOf = (name: string, base: string): string[] => {
    const on = results.find((r) => r.scenario === name);
    const off = results.find((r) => r.scenario === base);
    if (!on || !off) return [];
    return [
      '',
      `Rate limiting on the hit path (${name} vs ${base}, same run): ${ratio(on.requestsPerSecond, off.requestsPerSecond)} the requests per second, ${ratio(on.cpuMicrosPerRequest, off.cpuMicrosPerRequest)} the server CPU per request, p99 ${off.p99Ms} -> ${on.p99Ms} ms.`,
    ];
  };
  const limitingCost = [...costOf('hit-limited', 'hit'), ...costOf('hit-redis-limited', 'hit-redis')];
  return [
    `Load: autocannon, ${CONNECTIONS} connections, ${SECONDS} s per scenario after 1 s of warm-up; servers ${HAS_TASKSET ? 'pinned to CPU 0, load generator on CPU 1' : 'unpinned (no taskset)'}; node ${process.version}.`,
    '',
    '| scenario | req/s | vs baseline | p50 ms | p99 ms | server CPU µs/req | vs baseline | RSS MiB | errors | offload |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((row) => `| ${row} |`),
    ...limitingCost,
  ].join('\n');
}

async function main(): Promise<void> {
  if (HAS_TASKSET) spawnSync('taskset', ['-p', '-c', '1', String(process.pid)]);
  const results: Measured[] = [];
  const upstream = await startFakeUpstream();
  const body = Buffer.from(await (await fetch(upstream.url + HIT_PATH)).arrayBuffer());
  let redis: TestRedis | undefined;
  const children: ChildProcess[] = [];
  try {
    const basePort = await freePort();
    const baselineScript = `const b=Buffer.from(process.env.BODY,'base64');const m=new Map([['/x',b]]);require('node:http').createServer((q,s)=>{const v=m.get('/x');s.writeHead(200,{'content-type':'application/json; charset=utf-8','content-length':v.length});s.end(v)}).listen(${basePort},'127.0.0.1')`;
    const baseline = startChild(['node', '-e', baselineScript], { BODY: body.toString('base64') });
    children.push(baseline);
    await waitForHttp(`http://127.0.0.1:${basePort}/x`);
    results.push(await measure('baseline', `http://127.0.0.1:${basePort}/x`, pidOf(baseline)));
    await stopChild(baseline);

    results.push(await measure('upstream', upstream.url + HIT_PATH));

    const memory = await startProxyProcess(upstream);
    children.push(memory.child);
    await fetch(memory.url + HIT_PATH);
    results.push(await measure('hit', memory.url + HIT_PATH, pidOf(memory.child)));

    upstream.resetCounts();
    const ticker = setInterval(() => {
      upstream.advanceTip();
      upstream.setMempoolChanged();
    }, 2_000);
    const mixed = await measure('mixed', memory.url, pidOf(memory.child), mixedPaths());
    clearInterval(ticker);
    const upstreamRequests = upstream.count((r) => r.path !== '/extended');
    const clientRequests = Math.round(mixed.requestsPerSecond * SECONDS);
    results.push({ ...mixed, upstreamRequests, offload: Math.round(clientRequests / Math.max(1, upstreamRequests)) });
    await stopChild(memory.child);

    const limited = await startProxyProcess(upstream, undefined, rateLimitedConfigFile());
    children.push(limited.child);
    await fetch(limited.url + HIT_PATH);
    results.push(await measure('hit-limited', limited.url + HIT_PATH, pidOf(limited.child)));
    await stopChild(limited.child);

    redis = await startRedis();
    const shared = await startProxyProcess(upstream, redis);
    children.push(shared.child);
    await fetch(shared.url + HIT_PATH);
    results.push(await measure('hit-redis', shared.url + HIT_PATH, pidOf(shared.child)));
    await stopChild(shared.child);

    const sharedLimited = await startProxyProcess(upstream, redis, rateLimitedConfigFile());
    children.push(sharedLimited.child);
    await fetch(sharedLimited.url + HIT_PATH);
    results.push(await measure('hit-redis-limited', sharedLimited.url + HIT_PATH, pidOf(sharedLimited.child)));
    await stopChild(sharedLimited.child);
  } finally {
    for (const child of children) await stopChild(child);
    await redis?.stop();
    await upstream.close();
  }

  const table = report(results);
  const dir = join(ROOT, 'bench', 'results');
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'latest.json'), `${JSON.stringify({ at: new Date().toISOString(), seconds: SECONDS, connections: CONNECTIONS, results }, null, 2)}\n`);
  writeFileSync(join(dir, 'latest.md'), `${table}\n`);
  process.stdout.write(`${table}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
