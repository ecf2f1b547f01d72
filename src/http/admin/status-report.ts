/**
 * GET /status.json on the admin listener: everything the operator's status page shows, in one
 * document (docs/status-page.md lists the fields). Pure: the sources are read by the caller
 * (status-endpoints.ts), the rates come from status-rates.ts.
 */
import type { ChainTip, ChainView } from '../../chain/view.js';
import type { StatusCounts } from '../../telemetry/prometheus-telemetry.js';

/** One upstream as the health owner and the client report it (upstream.status()). */
export interface UpstreamStatus {
  origin: string;
  usable: boolean;
  breaker: string;
  tipHeight?: number;
  lagBlocks?: number;
  rateLimitedMs?: number;
  inFlight?: number;
  queued?: number;
  /** Its failures since its last success, oldest first (health.ts): while its breaker is open, those that opened it. */
  recentFailures?: ReadonlyArray<{ kind: string; route: string; message: string; ageMs: number }>;
}

/**
 * How an upstream's tip is followed, as the process that follows it reads it (live/push-feed.ts
 * mode()): push, or poll with why and when that may change at the earliest (clock time).
 */
export interface PushModeStatus {
  mode: 'push' | 'poll';
  reason?: string;
  retryAt?: number;
}

export interface StatusSources {
  /** Clock time (ms). */
  now: number;
  tip: ChainTip | undefined;
  chain: ChainView;
  upstreams: readonly UpstreamStatus[];
  counts: StatusCounts;
  /** Per second over the rate window; null until two samples exist. */
  rates: { requests: number | null; upstreamRequests: number | null };
  rateWindowSeconds: number;
  memory: { entries: number; bytes: number; maxBytes: number; maxEntryBytes: number };
  /** undefined without Redis; 'unavailable' when it did not answer. */
  redis: { keys: number; bytes: number; evictedKeys: number; maxBytes: number } | 'unavailable' | undefined;
  purges: { local: number; fromPeers: number };
  /** live.push.enabled and live.fanout.enabled. */
  live: { push: boolean; fanout: boolean };
  /** Each upstream's push mode, by origin; an upstream absent is not followed here (a worker that is not the tip leader). */
  pushModes: Readonly<Record<string, PushModeStatus>>;
}

/** Cache results that count towards a hit ratio; BYPASS and NONE were never cacheable. */
export interface Results {
  hit: number;
  stale: number;
  revalidated: number;
  miss: number;
  /** BYPASS and NONE: not cacheable (passthrough, errors, refusals). */
  uncached: number;
  total: number;
  /** (hit + stale) / (hit + stale + revalidated + miss); null when none of those. */
  hitRatio: number | null;
}

const emptyResults = (): Results => ({ hit: 0, stale: 0, revalidated: 0, miss: 0, uncached: 0, total: 0, hitRatio: null });

function add(results: Results, cache: string, count: number): void {
  if (cache === 'HIT') results.hit += count;
  else if (cache === 'STALE') results.stale += count;
  else if (cache === 'REVALIDATED') results.revalidated += count;
  else if (cache === 'MISS') results.miss += count;
  else results.uncached += count;
  results.total += count;
}

export function withRatio(results: Results): Results {
  const served = results.hit + results.stale;
  const cacheable = served + results.revalidated + results.miss;
  return { ...results, hitRatio: cacheable === 0 ? null : served / cacheable };
}

export function grouped(rows: Array<{ group: string; cache: string; count: number }>): Record<string, Results> {
  const groups = new Map<string, Results>();
  for (const { group, cache, count } of rows) {
    let results = groups.get(group);
    if (!results) {
      results = emptyResults();
      groups.set(group, results);
    }
    add(results, cache, count);
  }
  // Busiest first: the page lists them in this order.
  const ordered = [...groups].sort((a, b) => b[1].total - a[1].total || a[0].localeCompare(b[0]));
  return Object.fromEntries(ordered.map(([group, results]) => [group, withRatio(results)]));
}

const ageSeconds = (now: number, at: number): number => Math.max(0, (now - at) / 1000);

/** A timed event's age in the report, rather than its clock time: the page needs no clock of its own. */
interface Aged {
  ageSeconds: number;
}

/**
 * /status.json as a single process writes it. In worker mode the primary combines the workers'
 * reports into this same shape (src/cluster/combine-status-reports.ts), adding `workers`.
 */
export interface StatusReport {
  generatedAt: string;
  chain: {
    /**
     * `burnHeight` is the burn chain's tip (GET /extended); `anchorBurnHeight` the tip block's own
     * anchor (its burn_block_height), often lower (burn blocks without a Stacks block yet), null
     * until read.
     */
    tip: { height: number; indexBlockHash: string; blockHash: string | null; burnHeight: number; anchorBurnHeight: number | null; ageSeconds: number } | null;
    finality: { stacksHeight: number; burnHeight: number } | null;
    lastPollError: ({ message: string; upstream: string | null } & Aged) | null;
    reorgs: { total: number; purgedEntries: number; recent: Array<{ forkHeight: number; from: ReorgEnd; to: ReorgEnd } & Aged> };
  };
  upstreams: Array<{
    origin: string;
    usable: boolean;
    breaker: string;
    tipHeight: number | null;
    lagBlocks: number | null;
    rateLimitedMs: number | null;
    inFlight: number | null;
    queued: number | null;
    pushFeedBelieved: boolean | null;
    /** push or poll, why polled (null when pushed) and in how long that may change; null where this process does not follow the tip. */
    push: { mode: 'push' | 'poll'; reason: string | null; retryInSeconds: number | null } | null;
    lastError: ({ kind: string; message: string; route: string } & Aged) | null;
    /** Its failures since its last success, newest first, at most upstream.failureThreshold: while the breaker is open, those that opened it. */
    recentFailures: Array<{ kind: string; message: string; route: string } & Aged>;
  }>;
  traffic: {
    requests: number;
    requestsPerSecond: number | null;
    upstreamRequests: number;
    upstreamRequestsPerSecond: number | null;
    rateWindowSeconds: number;
  };
  hitRatio: { overall: Results; byClass: Record<string, Results>; byRoute: Record<string, Results> };
  cache: {
    memory: StatusSources['memory'];
    redis: { keys: number; usedMemoryBytes: number | null; evictedKeys: number | null; maxBytes: number | null } | { error: string } | null;
  };
  purges: {
    local: number;
    fromPeers: number;
    recent: Array<{ kind: string; origin: string; removed: { memory: number; redis: number | null } } & Aged>;
  };
  live: { pushFeed: boolean; fanout: boolean; fanoutClients: { rpc: number; socketIo: number } | null };
}

interface ReorgEnd {
  height: number;
  burnHeight: number;
}

export function statusReport(sources: StatusSources): StatusReport {
  const { now, tip, chain, counts, redis } = sources;
  const overall = emptyResults();
  for (const { cache, count } of counts.requests) add(overall, cache, count);
  const pollFailure = counts.lastTipPollFailure;
  return {
    generatedAt: new Date(now).toISOString(),
    chain: {
      tip: tip
        ? {
            height: tip.height,
            indexBlockHash: tip.indexBlockHash,
            blockHash: tip.blockHash ?? null,
            burnHeight: tip.burnHeight,
            anchorBurnHeight: anchorOf(tip, chain) ?? null,
            ageSeconds: counts.tipAgeSeconds,
          }
        : null,
      finality:
        chain.finalStacksHeight === undefined || chain.finalBurnHeight === undefined
          ? null
          : { stacksHeight: chain.finalStacksHeight, burnHeight: chain.finalBurnHeight },
      lastPollError: pollFailure ? { message: pollFailure.message, upstream: pollFailure.upstream ?? null, ageSeconds: ageSeconds(now, pollFailure.at) } : null,
      reorgs: {
        total: counts.reorgsTotal,
        purgedEntries: counts.reorgPurgedEntries,
        recent: counts.recentReorgs.map((r) => ({ ageSeconds: ageSeconds(now, r.at), forkHeight: r.forkHeight, from: r.from, to: r.to })),
      },
    },
    upstreams: sources.upstreams.map((u) => {
      const failure = counts.lastFailures[u.origin];
      const believed = counts.pushFeedBelieved[u.origin];
      return {
        origin: u.origin,
        usable: u.usable,
        breaker: u.breaker,
        tipHeight: u.tipHeight ?? null,
        lagBlocks: u.lagBlocks ?? null,
        rateLimitedMs: u.rateLimitedMs ?? null,
        inFlight: u.inFlight ?? null,
        queued: u.queued ?? null,
        pushFeedBelieved: believed ?? null,
        push: pushModeOf(sources.pushModes[u.origin], now),
        lastError: failure ? { kind: failure.kind, message: failure.message, route: failure.route, ageSeconds: ageSeconds(now, failure.at) } : null,
        // Newest first, as every other list of the report.
        recentFailures: (u.recentFailures ?? []).map((f) => ({ kind: f.kind, message: f.message, route: f.route, ageSeconds: f.ageMs / 1000 })).reverse(),
      };
    }),
    traffic: {
      requests: overall.total,
      requestsPerSecond: sources.rates.requests,
      upstreamRequests: counts.upstreamRequests,
      upstreamRequestsPerSecond: sources.rates.upstreamRequests,
      rateWindowSeconds: sources.rateWindowSeconds,
    },
    hitRatio: {
      overall: withRatio(overall),
      byClass: grouped(counts.classes.map((c) => ({ group: c.cls, cache: c.cache, count: c.count }))),
      byRoute: grouped(counts.requests.map((r) => ({ group: r.route, cache: r.cache, count: r.count }))),
    },
    cache: {
      memory: sources.memory,
      redis:
        redis === undefined
          ? null
          : redis === 'unavailable'
            ? { error: 'Redis did not answer' }
            : {
                keys: redis.keys,
                usedMemoryBytes: finiteOrNull(redis.bytes),
                evictedKeys: finiteOrNull(redis.evictedKeys),
                maxBytes: finiteOrNull(redis.maxBytes),
              },
    },
    purges: {
      ...sources.purges,
      recent: counts.recentPurges.map((p) => ({ ageSeconds: ageSeconds(now, p.at), kind: p.kind, origin: p.origin, removed: p.removed })),
    },
    live: {
      pushFeed: sources.live.push,
      fanout: sources.live.fanout,
      fanoutClients: sources.live.fanout ? { rpc: counts.wsClients.rpc ?? 0, socketIo: counts.wsClients.socket_io ?? 0 } : null,
    },
  };
}

/** The tip block's anchor: on the tip itself, or the chain view's when the view is of that same tip. */
function anchorOf(tip: ChainTip, chain: ChainView): number | undefined {
  return tip.anchorBurnHeight ?? (chain.tipHash === tip.indexBlockHash ? chain.tipAnchorBurnHeight : undefined);
}

function pushModeOf(mode: PushModeStatus | undefined, now: number): StatusReport['upstreams'][number]['push'] {
  if (!mode) return null;
  return { mode: mode.mode, reason: mode.reason ?? null, retryInSeconds: mode.retryAt === undefined ? null : Math.max(0, (mode.retryAt - now) / 1000) };
}

/** Redis INFO fields a managed Redis hides parse as NaN, which JSON would turn into null anyway: said plainly. */
const finiteOrNull = (value: number): number | null => (Number.isFinite(value) ? value : null);
