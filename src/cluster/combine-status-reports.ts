/**
 * One /status.json for the host in worker mode: the primary reads every worker's report (the
 * single-process shape, status-report.ts) and combines them into that same shape, plus a
 * `workers` list, so that the status page (which only renders the JSON) shows the whole host.
 * The rules follow /metrics (src/telemetry/worker-metrics.ts): what each worker counts or holds
 * for itself adds up (requests, rates, in flight, memory tier, purges); a state every worker sees
 * alike takes the max or the min (tip height: max, tip age: min, an upstream is usable only if
 * every worker uses it); the one Redis every worker reads is taken from the first that answered.
 * One exception, for the reader: a reorg is one event of the chain that every worker sees, so the
 * page's reorg count is the max and the recent list is deduplicated (the metric counter adds up).
 * Pure.
 */
import type { BreakerState } from '../upstream/breaker.js';
import { grouped, withRatio, type Results, type StatusReport } from '../http/admin/status-report.js';

/** Which worker a report (or the failure to get one) came from. */
export interface WorkerRef {
  id: number;
  pid: number | undefined;
}

export type WorkerReport = WorkerRef & ({ report: StatusReport } | { error: string });

/** One worker's line in the combined report: enough to see which worker differs, not a second copy of its report. */
export interface WorkerSummary extends WorkerRef {
  /** Why this worker's report is missing from the combination; null when it is in. */
  error: string | null;
  tipHeight: number | null;
  requests: number | null;
  requestsPerSecond: number | null;
  memoryEntries: number | null;
}

export type CombinedStatusReport = StatusReport & { workers: WorkerSummary[] };

type Upstream = StatusReport['upstreams'][number];
type Aged = { ageSeconds: number };

const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0);
/** null only when every value is null (a rate before its second sample): a worker without a rate yet adds nothing. */
const sumOrNull = (values: Array<number | null>): number | null => (values.every((v) => v === null) ? null : sum(values.filter((v) => v !== null)));
const maxOrNull = (values: Array<number | null>): number | null => (values.every((v) => v === null) ? null : Math.max(...values.filter((v) => v !== null)));
const newest = <T extends Aged>(values: Array<T | null>): T | null =>
  values.reduce<T | null>((best, value) => (value !== null && (best === null || value.ageSeconds < best.ageSeconds) ? value : best), null);
const byAge = <T extends Aged>(a: T, b: T): number => a.ageSeconds - b.ageSeconds;

/** Breaker states, best to worst: the host's is the worst any worker is in. */
const BREAKER_ORDER: readonly string[] = ['closed', 'half_open', 'open'] satisfies BreakerState[];
const worseBreaker = (a: string, b: string): string => (BREAKER_ORDER.indexOf(b) > BREAKER_ORDER.indexOf(a) ? b : a);

function combineUpstreams(reports: StatusReport[]): Upstream[] {
  const byOrigin = new Map<string, Upstream[]>();
  for (const report of reports) for (const u of report.upstreams) byOrigin.set(u.origin, [...(byOrigin.get(u.origin) ?? []), u]);
  return [...byOrigin].map(([origin, seen]) => ({
    origin,
    usable: seen.every((u) => u.usable),
    breaker: seen.map((u) => u.breaker).reduce(worseBreaker),
    tipHeight: maxOrNull(seen.map((u) => u.tipHeight)),
    lagBlocks: maxOrNull(seen.map((u) => u.lagBlocks)),
    rateLimitedMs: maxOrNull(seen.map((u) => u.rateLimitedMs)),
    inFlight: sumOrNull(seen.map((u) => u.inFlight)),
    queued: sumOrNull(seen.map((u) => u.queued)),
    // Believed only if every worker's push feed believes it (the metric's min).
    pushFeedBelieved: seen.every((u) => u.pushFeedBelieved === null) ? null : seen.every((u) => u.pushFeedBelieved !== false),
    // One worker follows the tip for the host (the tip leader): its word, the others have none.
    push: seen.map((u) => u.push).find((push) => push !== null) ?? null,
    lastError: newest(seen.map((u) => u.lastError)),
    // Each worker has its own breaker and its own failures: the newest of all, as many as one worker keeps.
    recentFailures: seen
      .flatMap((u) => u.recentFailures)
      .sort(byAge)
      .slice(0, Math.max(...seen.map((u) => u.recentFailures.length))),
  }));
}

function addResults(all: Results[]): Results {
  const total: Results = { hit: 0, stale: 0, revalidated: 0, miss: 0, uncached: 0, total: 0, hitRatio: null };
  for (const r of all) for (const field of ['hit', 'stale', 'revalidated', 'miss', 'uncached', 'total'] as const) total[field] += r[field];
  return withRatio(total);
}

/** Groups added up across workers, busiest first (as status-report.ts orders them). */
function addGroups(groups: Array<Record<string, Results>>): Record<string, Results> {
  const rows = groups.flatMap((group) =>
    Object.entries(group).flatMap(([name, r]) =>
      (['hit', 'stale', 'revalidated', 'miss'] as const)
        .map((field) => ({ group: name, cache: field.toUpperCase(), count: r[field] }))
        .concat([{ group: name, cache: 'NONE', count: r.uncached }]),
    ),
  );
  return grouped(rows);
}

function combineReorgs(reports: StatusReport[]): StatusReport['chain']['reorgs'] {
  const recent = new Map<string, StatusReport['chain']['reorgs']['recent'][number]>();
  for (const reorg of reports.flatMap((r) => r.chain.reorgs.recent)) {
    const key = `${reorg.forkHeight}:${reorg.from.height}:${reorg.to.height}`;
    const seen = recent.get(key);
    if (!seen || reorg.ageSeconds < seen.ageSeconds) recent.set(key, reorg);
  }
  return {
    total: Math.max(...reports.map((r) => r.chain.reorgs.total)),
    purgedEntries: sum(reports.map((r) => r.chain.reorgs.purgedEntries)),
    recent: [...recent.values()].sort(byAge).slice(0, Math.max(...reports.map((r) => r.chain.reorgs.recent.length))),
  };
}

function combineChain(reports: StatusReport[]): StatusReport['chain'] {
  const tips = reports.map((r) => r.chain.tip).filter((tip) => tip !== null);
  const highest = tips.reduce<StatusReport['chain']['tip']>((best, tip) => (best === null || tip.height > best.height ? tip : best), null);
  const finalities = reports.map((r) => r.chain.finality).filter((f) => f !== null);
  return {
    // The highest tip any worker believes (the metric's max), with the youngest age (the metric's min).
    // Its anchor from any worker that has read it for that same block (each reads it for itself).
    tip: highest && {
      ...highest,
      anchorBurnHeight: tips.find((tip) => tip.indexBlockHash === highest.indexBlockHash && tip.anchorBurnHeight !== null)?.anchorBurnHeight ?? null,
      ageSeconds: Math.min(...tips.map((tip) => tip.ageSeconds)),
    },
    finality: finalities.reduce<StatusReport['chain']['finality']>((best, f) => (best === null || f.stacksHeight > best.stacksHeight ? f : best), null),
    lastPollError: newest(reports.map((r) => r.chain.lastPollError)),
    reorgs: combineReorgs(reports),
  };
}

function summary(worker: WorkerReport): WorkerSummary {
  const ref = { id: worker.id, pid: worker.pid };
  if ('error' in worker) return { ...ref, error: worker.error, tipHeight: null, requests: null, requestsPerSecond: null, memoryEntries: null };
  const { report } = worker;
  return {
    ...ref,
    error: null,
    tipHeight: report.chain.tip?.height ?? null,
    requests: report.traffic.requests,
    requestsPerSecond: report.traffic.requestsPerSecond,
    memoryEntries: report.cache.memory.entries,
  };
}

/** The workers' reports as one; undefined when no worker gave one (the caller answers an error). */
export function combineStatusReports(workers: WorkerReport[]): CombinedStatusReport | undefined {
  const reports = workers.flatMap((w) => ('report' in w ? [w.report] : []));
  const first = reports[0];
  if (!first) return undefined;
  const memories = reports.map((r) => r.cache.memory);
  return {
    generatedAt: reports.map((r) => r.generatedAt).reduce((a, b) => (b > a ? b : a)),
    chain: combineChain(reports),
    upstreams: combineUpstreams(reports),
    traffic: {
      requests: sum(reports.map((r) => r.traffic.requests)),
      // The primary reads every worker at once, so their windows cover the same span: their rates add up.
      requestsPerSecond: sumOrNull(reports.map((r) => r.traffic.requestsPerSecond)),
      upstreamRequests: sum(reports.map((r) => r.traffic.upstreamRequests)),
      upstreamRequestsPerSecond: sumOrNull(reports.map((r) => r.traffic.upstreamRequestsPerSecond)),
      rateWindowSeconds: first.traffic.rateWindowSeconds,
    },
    hitRatio: {
      overall: addResults(reports.map((r) => r.hitRatio.overall)),
      byClass: addGroups(reports.map((r) => r.hitRatio.byClass)),
      byRoute: addGroups(reports.map((r) => r.hitRatio.byRoute)),
    },
    cache: {
      // Each worker has its own memory tier with its own budget: sizes and budgets add up; the entry limit is each one's.
      memory: {
        entries: sum(memories.map((m) => m.entries)),
        bytes: sum(memories.map((m) => m.bytes)),
        maxBytes: sum(memories.map((m) => m.maxBytes)),
        maxEntryBytes: Math.max(...memories.map((m) => m.maxEntryBytes)),
      },
      // One Redis for all: the first report that reached it (an error only if none did).
      redis: reports.map((r) => r.cache.redis).find((redis) => redis !== null && !('error' in redis)) ?? first.cache.redis,
    },
    purges: {
      local: sum(reports.map((r) => r.purges.local)),
      fromPeers: sum(reports.map((r) => r.purges.fromPeers)),
      // Each worker's own purges (a purge fanned out to every worker is listed once per worker, each with what it removed).
      recent: reports.flatMap((r) => r.purges.recent).sort(byAge),
    },
    live: {
      pushFeed: first.live.pushFeed,
      fanout: first.live.fanout,
      fanoutClients: first.live.fanoutClients && {
        rpc: sum(reports.map((r) => r.live.fanoutClients?.rpc ?? 0)),
        socketIo: sum(reports.map((r) => r.live.fanoutClients?.socketIo ?? 0)),
      },
    },
    workers: workers.map(summary),
  };
}
