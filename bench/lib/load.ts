/**
 * Load runs: autocannon from this process, or wrk (a C load generator, in its own process) for
 * targets that ask for it when it is installed, with the server's CPU time per request read
 * around each run, and alternating rounds of several variants so that drift of a shared machine
 * hits them alike; figures are medians over rounds.
 */
import autocannon from 'autocannon';
import { cpuSeconds, rssMiB } from './proc.js';
import { HAS_WRK, runWrk } from './wrk.js';

export interface BenchOptions {
  quick: boolean;
  rounds: number;
  seconds: number;
  connections: number;
  /** Warm-up before each measured run, instead of the default (0.25 s quick, else 0.5 s). */
  warmUpSeconds?: number;
}

// Each variant's server is warmed by its first round already; this re-opens connections and settles the JIT.
export const warmUpSeconds = (options: BenchOptions): number => options.warmUpSeconds ?? (options.quick ? 0.25 : 0.5);

export interface Run {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
  requests: number;
  cpuMicrosPerRequest?: number;
  rssMiB?: number;
  /** Which load generator ran. */
  generator?: Generator;
  /** The load generator's own CPU per request (µs): what it takes from the core it runs on. */
  generatorCpuMicrosPerRequest?: number;
  /** Each round's req/s, CPU µs per request and p99 (in latest.json), to see how far the rounds scatter. */
  rounds?: Array<{ requestsPerSecond: number; cpuMicrosPerRequest?: number; p99Ms: number }>;
}

export type Generator = 'wrk' | 'autocannon';

export interface Target {
  url: string;
  /** Server pids whose CPU time is charged to the run. */
  pids?: number[];
  /** autocannon request list (paths, or setupRequest for distinct keys). */
  requests?: autocannon.Request[];
  /**
   * An offered rate (requests/s, autocannon's overallRate) instead of a closed loop. autocannon
   * paces each connection per second: a connection sends its share of the second's requests
   * back to back, then waits for the next second. With `connections` chosen so that a
   * connection's share takes most of a second, requests go out steadily, not in bursts.
   */
  rate?: number;
  /** Connections for this target, instead of its share of the run's connections. */
  connections?: number;
  /**
   * Latency percentiles from every response's own duration (autocannon's per-response event,
   * sub-millisecond) instead of autocannon's histogram, which keeps whole milliseconds and, at
   * a fixed rate, adds coordinated-omission samples at 1 ms intervals that drag its p50 down.
   */
  exactLatency?: boolean;
  /**
   * Load it with wrk when /usr/bin/wrk (or wrk on PATH) is there: a closed loop on one URL, no
   * rate, no request list. autocannon otherwise. See wrk.ts for why the hit scenarios want it.
   */
  preferWrk?: boolean;
  /** wrk's threads (default 1): more for a server on several cores (worker mode). */
  wrkThreads?: number;
  /** wrk only: a file of request targets, one a line; each request asks for a random one. */
  pathsFile?: string;
}

/** The load generator a target gets on this machine. */
export const generatorOf = (target: Target): Generator =>
  target.preferWrk && HAS_WRK && !target.requests && !target.rate && !target.exactLatency ? 'wrk' : 'autocannon';

/** The generator that ran a set of runs ('wrk', 'autocannon', or 'wrk and autocannon'). */
export const generatorsOf = (runs: Array<Run | undefined>): string => [...new Set(runs.map((r) => r?.generator).filter(Boolean))].join(' and ') || 'autocannon';

interface Cannonade {
  result: autocannon.Result;
  /** Sorted response durations (ms), when the target asked for exact latency. */
  latencies?: number[];
}

async function cannon(target: Target, connections: number, seconds: number): Promise<Cannonade> {
  const latencies: number[] | undefined = target.exactLatency ? [] : undefined;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: target.url,
        connections: target.connections ?? connections,
        duration: seconds,
        requests: target.requests,
        ...(target.rate ? { overallRate: target.rate } : {}),
      },
      (error, done) => (error ? reject(error as Error) : resolve(done)),
    );
    if (latencies) instance.on('response', (_client, _status, _bytes, ms) => latencies.push(ms));
  });
  return { result, latencies: latencies?.sort((a, b) => a - b) };
}

/** The value below which `share` of the sorted values lie, to 0.01 ms. */
const percentile = (sorted: number[], share: number): number => Math.round((sorted[Math.floor(share * (sorted.length - 1))] ?? 0) * 100) / 100;

/** One measured run (after a short warm-up: connections set up, code optimised) against one or several targets at once. */
export async function runLoad(targets: Target[], options: BenchOptions): Promise<Run> {
  if (targets.length > 0 && targets.every((t) => generatorOf(t) === 'wrk')) return runWrkLoad(targets, options);
  const share = Math.max(1, Math.round(options.connections / targets.length));
  await Promise.all(targets.map((t) => cannon(t, share, warmUpSeconds(options))));
  const pids = targets.flatMap((t) => t.pids ?? []);
  const before = pids.map(cpuSeconds);
  const ownBefore = process.cpuUsage();
  let runs = await Promise.all(targets.map((t) => cannon(t, share, options.seconds)));
  // Seen once in a while: autocannon ends a run without sending anything (no errors either); run it again.
  if (runs.some((r) => r.result.requests.total === 0)) runs = await Promise.all(targets.map((t) => cannon(t, share, options.seconds)));
  const cpu = pids.reduce((sum, pid, i) => sum + cpuSeconds(pid) - (before[i] ?? 0), 0);
  // This process's CPU: autocannon's, and the fake upstream's (idle in the hit scenarios).
  const own = process.cpuUsage(ownBefore);
  const results = runs.map((r) => r.result);
  const requests = results.reduce((sum, r) => sum + r.requests.total, 0);
  const latencyAt = (share: number, histogram: (r: autocannon.Result) => number): number =>
    Math.max(...runs.map((r) => (r.latencies?.length ? percentile(r.latencies, share) : histogram(r.result))));
  return {
    requestsPerSecond: Math.round(results.reduce((sum, r) => sum + r.requests.average, 0)),
    p50Ms: latencyAt(0.5, (r) => r.latency.p50),
    p99Ms: latencyAt(0.99, (r) => r.latency.p99),
    errors: results.reduce((sum, r) => sum + r.errors + r.timeouts, 0),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
    requests,
    cpuMicrosPerRequest: pids.length && requests ? Math.round((cpu / requests) * 1e7) / 10 : undefined,
    rssMiB: pids.length ? pids.reduce((sum, pid) => sum + rssMiB(pid), 0) : undefined,
    generator: 'autocannon',
    generatorCpuMicrosPerRequest: requests ? Math.round(((own.user + own.system) / requests) * 10) / 10 : undefined,
  };
}

/** One measured run with wrk, one wrk process per target (each its share of the connections), after a warm-up. */
async function runWrkLoad(targets: Target[], options: BenchOptions): Promise<Run> {
  const share = Math.max(1, Math.round(options.connections / targets.length));
  await Promise.all(targets.map((t) => runWrk(t.url, t.connections ?? share, warmUpSeconds(options), t.wrkThreads, t.pathsFile)));
  const pids = targets.flatMap((t) => t.pids ?? []);
  const before = pids.map(cpuSeconds);
  const runs = await Promise.all(targets.map((t) => runWrk(t.url, t.connections ?? share, options.seconds, t.wrkThreads, t.pathsFile)));
  const cpu = pids.reduce((sum, pid, i) => sum + cpuSeconds(pid) - (before[i] ?? 0), 0);
  const requests = runs.reduce((sum, r) => sum + r.requests, 0);
  const generatorCpu = runs.reduce((sum, r) => sum + r.cpuSeconds, 0);
  return {
    requestsPerSecond: Math.round(runs.reduce((sum, r) => sum + r.requests / r.seconds, 0)),
    p50Ms: Math.max(...runs.map((r) => r.p50Ms)),
    p99Ms: Math.max(...runs.map((r) => r.p99Ms)),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
    requests,
    cpuMicrosPerRequest: pids.length && requests ? Math.round((cpu / requests) * 1e7) / 10 : undefined,
    rssMiB: pids.length ? pids.reduce((sum, pid) => sum + rssMiB(pid), 0) : undefined,
    generator: 'wrk',
    generatorCpuMicrosPerRequest: requests ? Math.round((generatorCpu / requests) * 1e7) / 10 : undefined,
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The median of each figure over rounds (each figure on its own). */
export function medianRun(runs: Run[]): Run {
  const of = (pick: (r: Run) => number | undefined): number | undefined => {
    const values = runs.map(pick).filter((v): v is number => v !== undefined);
    return values.length ? median(values) : undefined;
  };
  return {
    requestsPerSecond: of((r) => r.requestsPerSecond) ?? 0,
    p50Ms: of((r) => r.p50Ms) ?? 0,
    p99Ms: of((r) => r.p99Ms) ?? 0,
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
    requests: runs.reduce((sum, r) => sum + r.requests, 0),
    cpuMicrosPerRequest: of((r) => r.cpuMicrosPerRequest),
    rssMiB: of((r) => r.rssMiB),
    generator: runs[0]?.generator,
    generatorCpuMicrosPerRequest: of((r) => r.generatorCpuMicrosPerRequest),
    rounds: runs.map(({ requestsPerSecond, cpuMicrosPerRequest, p99Ms }) => ({ requestsPerSecond, cpuMicrosPerRequest, p99Ms })),
  };
}

/** Runs each variant once per round, in turn, and returns the median run of each. */
export async function alternate(label: string, variants: Record<string, Target[]>, options: BenchOptions): Promise<Record<string, Run>> {
  const runs: Record<string, Run[]> = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  for (let round = 1; round <= options.rounds; round++) {
    for (const [name, targets] of Object.entries(variants)) {
      process.stderr.write(`bench: ${label}: ${name} (round ${round}/${options.rounds})`);
      const run = await runLoad(targets, options);
      runs[name]?.push(run);
      process.stderr.write(`: ${run.requestsPerSecond} req/s, ${run.cpuMicrosPerRequest ?? '?'} µs CPU a request, p99 ${run.p99Ms} ms\n`);
    }
  }
  return Object.fromEntries(Object.entries(runs).map(([name, list]) => [name, medianRun(list)]));
}

/** One variant's paired figures: its CPU per request and req/s over the baseline's, from adjacent runs. */
export interface PairedRatio {
  cpu: number;
  requestsPerSecond: number;
  /** Each round's CPU ratio (in latest.json), to see how far they scatter. */
  rounds: number[];
  /** The variant's own median CPU per request (µs), to read the ratio back as microseconds. */
  cpuMicrosPerRequest: number;
  baselineCpuMicrosPerRequest: number;
}

/**
 * Each variant against the baseline in adjacent pairs: every round, each variant (in a new
 * random order) runs right before or right after a run of the baseline (which first, at random),
 * and the pair's ratio is kept. A shared host changes how fast its cores run from one second to
 * the next (other tenants, the hypervisor): runs minutes apart scatter ±20% and more here, two
 * runs a second apart less (though single pairs still ranged 0.7x to 1.7x on issue 29's host),
 * so the median of the pairs' ratios holds stiller than the ratio of two medians. Both servers
 * are pinned to the same core as everywhere else.
 */
export async function pairedRatios(
  label: string,
  baseline: Target,
  variants: Record<string, Target>,
  options: BenchOptions,
): Promise<Record<string, PairedRatio>> {
  const rounds: Record<string, Array<{ variant: Run; base: Run }>> = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  for (let round = 1; round <= options.rounds; round++) {
    for (const [name, target] of shuffled(Object.entries(variants))) {
      const baseFirst = Math.random() < 0.5;
      const first = await runLoad([baseFirst ? baseline : target], options);
      const second = await runLoad([baseFirst ? target : baseline], options);
      const [base, variant] = baseFirst ? [first, second] : [second, first];
      rounds[name]?.push({ base, variant });
      process.stderr.write(
        `bench: ${label}: ${name} (round ${round}/${options.rounds}): ${variant.cpuMicrosPerRequest} µs against ${base.cpuMicrosPerRequest} µs CPU a request\n`,
      );
    }
  }
  const cpuOf = (r: Run): number => r.cpuMicrosPerRequest ?? Number.NaN;
  return Object.fromEntries(
    Object.entries(rounds).map(([name, list]) => {
      const cpuRatios = list.map(({ variant, base }) => cpuOf(variant) / cpuOf(base));
      return [
        name,
        {
          cpu: Math.round(median(cpuRatios) * 1000) / 1000,
          requestsPerSecond: Math.round(median(list.map(({ variant, base }) => variant.requestsPerSecond / base.requestsPerSecond)) * 1000) / 1000,
          rounds: cpuRatios.map((r) => Math.round(r * 1000) / 1000),
          cpuMicrosPerRequest: median(list.map(({ variant }) => cpuOf(variant))),
          baselineCpuMicrosPerRequest: median(list.map(({ base }) => cpuOf(base))),
        },
      ];
    }),
  );
}

/** A copy of `items` in a random order, every order equally likely (Fisher-Yates). */
function shuffled<T>(items: readonly T[]): T[] {
  const order = [...items];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j] as T, order[i] as T];
  }
  return order;
}
