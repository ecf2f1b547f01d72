/**
 * The Telemetry the proxy runs with: each domain event becomes metric samples in one registry
 * per proxy and, for state changes (breaker, lag, Redis, tip poll, reorg), a log line.
 */
import type { OwnPurpose } from './own-purposes.js';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { systemClock } from '../clock.js';
import type { Logger } from '../logger.js';
import { buildInfo, type BuildInfo } from './build-info.js';
import { METRICS, REDIS_METRICS } from './catalogue.js';
import { foldedCounter } from './folded.js';
import { labelChildren } from './label-children.js';
import { LogLimiter } from './log-limiter.js';
import { registerAll, type Registered } from './register.js';
import { StateReader, type StateSources } from './state-gauges.js';
import { StatusRecord, type ClassCount, type FailureRecord, type PurgeRecord, type ReorgEvent } from './status-record.js';
import type {
  BackgroundRefreshOutcome,
  BreakerFailure,
  LookupResult,
  PrimaryFlightOutcome,
  PushKind,
  PushMode,
  ServedRequest,
  Telemetry,
  Tier,
  TipLike,
  UpstreamWsChannel,
  WsChannel,
} from './telemetry.js';

export interface TelemetryOptions {
  logger: Logger;
  /** A proxy with Redis configured exports stacks_proxy_redis_up; one without does not. */
  redis: boolean;
  /**
   * Node's default process and event-loop metrics, under their standard names. Off for tests
   * that run many proxies in one process (they would all report the same process).
   */
  defaultMetrics?: boolean;
  now?: () => number;
  /** Defaults to package.json's version and the running Node. */
  build?: BuildInfo;
  /** The access log (config accessLog); by default every request logs a line. */
  accessLog?: AccessLogSettings;
}

export interface AccessLogSettings {
  enabled: boolean;
  /** One line per this many HIT answers; 1 logs every hit. */
  hitsEvery: number;
  /** One line per this many refusals (a refused target, 401, 429); 1, the default, logs every one. */
  refusalsEvery?: number;
}

/** What the composition root holds: the events, plus the registry and its state sources. */
export interface ProxyTelemetry extends Telemetry {
  readonly registry: Registry;
  /** Where state gauges are read from at each scrape; the sources may be given after creation. */
  watch(sources: StateSources): void;
  /** The /metrics body, with state gauges read once. */
  scrape(): Promise<string>;
  readonly contentType: string;
  /** Cache lookups since start, per tier, class and result (the admin API's stats; read from the lookup counter). */
  lookupCounts(): Promise<LookupCount[]>;
  /** What the status page reads (src/http/admin/status-report.ts): counter totals, last failures, live-chain gauges. */
  statusCounts(): Promise<StatusCounts>;
}

export interface StatusCounts {
  /** Client requests answered since start, by route id (or surface family) and cache result. */
  requests: Array<{ route: string; cache: string; count: number }>;
  /** Client requests answered since start, by the freshness class answered and cache result. */
  classes: ClassCount[];
  /** Requests sent to the upstreams since start (reads, tip polls, passthrough), failed ones included. */
  upstreamRequests: number;
  /** Each upstream's last failure, by origin. */
  lastFailures: Record<string, FailureRecord>;
  lastTipPollFailure: { message: string; at: number; upstream?: string } | null;
  /** Seconds since the believed tip last changed (or since start, before the first). */
  tipAgeSeconds: number;
  /** The push feed's belief per upstream origin (absent: the push feed is off or has not judged yet). */
  pushFeedBelieved: Record<string, boolean>;
  /** Fan-out clients connected now, by channel (rpc, socket_io). */
  wsClients: Record<string, number>;
  /** The latest purges carried out here and reorgs seen, newest first (bounded: status-record.ts). */
  recentPurges: PurgeRecord[];
  recentReorgs: ReorgEvent[];
  /** Entries purged because a reorg made them suspect, since start. */
  reorgPurgedEntries: number;
  /** Reorgs seen since start. */
  reorgsTotal: number;
}

export interface LookupCount {
  tier: string;
  cls: string;
  result: string;
  count: number;
}

// The access log gives latencies in ms with µs precision.
const toMs = (seconds: number): number => Math.round(seconds * 1e6) / 1e3;
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

export function createTelemetry(options: TelemetryOptions): ProxyTelemetry {
  return new PrometheusTelemetry(options);
}

class PrometheusTelemetry implements ProxyTelemetry {
  readonly registry = new Registry();
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly m: Registered<typeof METRICS>;
  private readonly redisMetrics: Registered<typeof REDIS_METRICS> | undefined;
  private readonly state: StateReader;
  private readonly status: StatusRecord;
  private tipChangedAt: number;
  private redisWasUp: boolean | undefined;
  private tipPollFailing = false;
  /** Which role tip polls are counted under (a single process leads: composition-root.ts says otherwise for a follower). */
  private tipRole: 'leader' | 'follower' = 'leader';
  private rateLimitFailing = false;
  /** Upstream WebSockets (channel and origin) whose attempts fail now: logged when that starts and when it ends. */
  private readonly wsFailing = new Set<string>();
  private readonly accessLog: AccessLogSettings;
  /** Disagreements with the chain model can come with every request: one line a minute per reason. */
  private readonly disagreementLogs = new LogLimiter(60_000);
  private hitsSinceLine = 0;
  private refusalsSinceLine = 0;

  private readonly requests;
  private readonly requestDurations;
  private readonly lookups;
  private readonly evictions;
  private readonly upstreamRequests;
  private readonly upstreamDurations;
  private readonly upstreamErrors;
  private readonly upstreamRetries;
  private readonly redisCommands;
  private readonly routeCounters;
  private readonly rateLimitRequests;
  private readonly surfaceRequests;

  constructor(options: TelemetryOptions) {
    this.logger = options.logger;
    this.now = options.now ?? systemClock;
    this.accessLog = options.accessLog ?? { enabled: true, hitsEvery: 1 };
    this.tipChangedAt = this.now();
    this.status = new StatusRecord(this.now);
    const readState = () => this.state.read();
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    const m = registerAll(METRICS, this.registry, readState);
    this.m = m;
    this.redisMetrics = options.redis ? registerAll(REDIS_METRICS, this.registry, readState) : undefined;
    this.redisMetrics?.redisUp.set(0);
    const build = options.build ?? buildInfo();
    m.buildInfo.set({ version: build.version, node: build.node }, 1);
    this.state = new StateReader(
      m,
      () => (this.now() - this.tipChangedAt) / 1000,
      (error) => this.logger.debug({ err: messageOf(error) }, 'telemetry state source failed'),
    );

    // The per-request ones are folded (folded.ts): a request adds to a cell, a scrape reads them.
    this.requests = foldedCounter(m.httpRequests, ['route', 'method', 'status', 'cache']);
    this.requestDurations = (route: string, cache: string) => m.httpDuration.cell(route, cache);
    this.lookups = foldedCounter(m.cacheLookups, ['tier', 'class', 'result']);
    this.evictions = labelChildren((tier: string) => m.cacheEvictions.labels({ tier }));
    this.upstreamRequests = labelChildren((upstream: string, route: string, status: string) => m.upstreamRequests.labels({ upstream, route, status }));
    this.upstreamDurations = (upstream: string, route: string) => m.upstreamDuration.cell(upstream, route);
    this.upstreamErrors = labelChildren((upstream: string, kind: string) => m.upstreamErrors.labels({ upstream, kind }));
    this.upstreamRetries = labelChildren((route: string, reason: string) => m.upstreamRetries.labels({ route, reason }));
    this.redisCommands = (command: string) => m.redisCommandDuration.cell(command);
    this.routeCounters = {
      overload: labelChildren((route: string) => m.overloadRejections.labels({ route })),
      joined: labelChildren((route: string) => m.singleflightJoined.labels({ route })),
      sharedWaits: labelChildren((route: string, result: string) => m.sharedFlightWaits.labels({ route, result })),
      primaryFlights: labelChildren((route: string, outcome: string) => m.primaryFlights.labels({ route, outcome })),
      stale: labelChildren((route: string, reason: string) => m.staleServed.labels({ route, reason })),
      disagreements: labelChildren((route: string, reason: string) => m.chainDisagreements.labels({ route, reason })),
      revalidations: labelChildren((result: string) => m.revalidations.labels({ result })),
      background: labelChildren((route: string, outcome: string) => m.backgroundRefreshes.labels({ route, outcome })),
      scopeConfirmed: labelChildren((route: string) => m.etagScopeConfirmations.labels({ route })),
    };
    this.rateLimitRequests = foldedCounter(m.rateLimitRequests, ['tier', 'result']);
    this.surfaceRequests = foldedCounter(m.surfaceRequests, ['family', 'change', 'cache', 'class']);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  watch(sources: StateSources): void {
    this.state.watch(sources);
  }

  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  async lookupCounts(): Promise<LookupCount[]> {
    const { values } = await this.m.cacheLookups.get();
    return values.map((v) => ({ tier: String(v.labels.tier), cls: String(v.labels.class), result: String(v.labels.result), count: v.value }));
  }

  async statusCounts(): Promise<StatusCounts> {
    const [requests, upstream, believed, clients, reorgPurged, reorgs] = await Promise.all([
      this.m.httpRequests.get(),
      this.m.upstreamRequests.get(),
      this.m.pushFeedBelieved.get(),
      this.m.wsClients.get(),
      this.m.reorgPurged.get(),
      this.m.reorgs.get(),
    ]);
    // Several samples share a route and cache (methods, statuses): summed here.
    const byRoute = new Map<string, { route: string; cache: string; count: number }>();
    for (const v of requests.values) {
      const route = String(v.labels.route);
      const cache = String(v.labels.cache);
      const key = `${route}\n${cache}`;
      const entry = byRoute.get(key) ?? { route, cache, count: 0 };
      entry.count += v.value;
      byRoute.set(key, entry);
    }
    return {
      requests: [...byRoute.values()],
      classes: this.status.classCounts(),
      upstreamRequests: upstream.values.reduce((sum, v) => sum + v.value, 0),
      lastFailures: this.status.lastFailures(),
      lastTipPollFailure: this.status.lastTipPollFailure() ?? null,
      tipAgeSeconds: (this.now() - this.tipChangedAt) / 1000,
      pushFeedBelieved: Object.fromEntries(believed.values.map((v) => [String(v.labels.origin), v.value === 1])),
      wsClients: Object.fromEntries(clients.values.map((v) => [String(v.labels.channel), v.value])),
      recentPurges: this.status.recentPurges(),
      recentReorgs: this.status.recentReorgs(),
      reorgPurgedEntries: reorgPurged.values.reduce((sum, v) => sum + v.value, 0),
      reorgsTotal: reorgs.values.reduce((sum, v) => sum + v.value, 0),
    };
  }

  requestServed(r: ServedRequest): void {
    this.requests(r.route, r.method, String(r.status), r.cache).value++;
    this.status.requestServed(r.cls, r.cache);
    this.requestDurations(r.route, r.cache).observe(r.seconds);
    if (r.upstreamError === 'overloaded') this.routeCounters.overload(r.route).inc();
    if (!this.accessLog.enabled) return;
    // Hits and refusals are sampled: one line stands for `sampled` of them (the counters above
    // count each). A flood of refusals is what an attacker can send fastest; it must not turn
    // into as many log lines.
    let sampled: number | undefined;
    if (r.cache === 'HIT' && this.accessLog.hitsEvery > 1) {
      if (++this.hitsSinceLine < this.accessLog.hitsEvery) return;
      this.hitsSinceLine = 0;
      sampled = this.accessLog.hitsEvery;
    } else if (r.refused && (this.accessLog.refusalsEvery ?? 1) > 1) {
      const every = this.accessLog.refusalsEvery ?? 1;
      if (++this.refusalsSinceLine < every) return;
      this.refusalsSinceLine = 0;
      sampled = every;
    }
    this.logger.info({
      reqId: r.requestId,
      method: r.method,
      route: r.route,
      status: r.status,
      cache: r.cache,
      class: r.cls,
      ms: toMs(r.seconds),
      upstreamMs: r.upstreamSeconds === undefined ? undefined : toMs(r.upstreamSeconds),
      upstreamError: r.upstreamError,
      sampled,
    });
  }

  cacheLookup(tier: Tier, cls: string, result: LookupResult): void {
    this.lookups(tier, cls, result).value++;
  }

  cacheEvicted(tier: Tier): void {
    this.evictions(tier).inc();
  }

  // The lookup that read it counts a miss (cache/lookup.ts); this only says why.
  decodeFailed(tier: Tier): void {
    this.logger.debug({ tier }, 'cache entry in an unknown format: treated as a miss');
  }

  storeError(tier: Tier, operation: string, error: unknown): void {
    this.logger.debug({ tier, operation, err: messageOf(error) }, 'cache tier error');
  }

  redisCommand(command: string, seconds: number): void {
    this.redisCommands(command).observe(seconds);
  }

  redisStatusChanged(up: boolean): void {
    this.redisMetrics?.redisUp.set(up ? 1 : 0);
    if (up === this.redisWasUp) return;
    this.redisWasUp = up;
    if (up) this.logger.info({ up }, 'redis connected');
    else this.logger.warn({ up }, 'redis unavailable: serving from memory and upstream');
  }

  singleflightJoined(route: string): void {
    this.routeCounters.joined(route).inc();
  }

  sharedFlightWaited(route: string, result: 'filled' | 'timeout'): void {
    this.routeCounters.sharedWaits(route, result).inc();
  }

  primaryFlight(route: string, outcome: PrimaryFlightOutcome): void {
    this.routeCounters.primaryFlights(route, outcome).inc();
  }

  revalidated(result: 'not_modified' | 'modified'): void {
    this.routeCounters.revalidations(result).inc();
  }

  backgroundRefreshed(route: string, outcome: BackgroundRefreshOutcome): void {
    this.routeCounters.background(route, outcome).inc();
  }

  staleServed(route: string, reason: string): void {
    this.routeCounters.stale(route, reason).inc();
  }

  chainDisagreement(route: string, upstream: string, reason: string, why: string): void {
    this.routeCounters.disagreements(route, reason).inc();
    const permit = this.disagreementLogs.permit(reason, this.now());
    if (permit.log) {
      this.logger.warn(
        { route, upstream, reason, why, heldBack: permit.suppressed },
        "upstream answer does not fit the proxy's chain model: served as sent, not stored (at most one such line a minute per reason)",
      );
    }
  }

  reorgPurged(): void {
    this.m.reorgPurged.inc();
  }

  etagScopeConfirmed(route: string): void {
    this.routeCounters.scopeConfirmed(route).inc();
  }

  purged(kind: string, origin: 'admin' | 'peer', removed: { memory: number; redis: number | null }): void {
    this.m.purges.labels({ kind, origin }).inc();
    this.status.purged(kind, origin, removed);
    this.m.purgedEntries.labels({ tier: 'memory' }).inc(removed.memory);
    if (removed.redis !== null) this.m.purgedEntries.labels({ tier: 'redis' }).inc(removed.redis);
  }

  purgeRequested(kind: string): void {
    this.m.purgeRequests.labels({ kind }).inc();
  }

  purgesCoalesced(count: number): void {
    this.m.purgesCoalesced.inc(count);
  }

  broadcastObserved(outcome: 'decoded' | 'undecodable' | 'rejected', note?: string): void {
    this.m.broadcastsObserved.labels({ outcome }).inc();
    if (outcome === 'undecodable') this.logger.debug({ note }, 'broadcast not decoded: every principal and the whole mempool count as changed');
  }

  broadcastCaptureOverBudget(): void {
    this.m.broadcastCapturesOverBudget.inc();
  }

  activityAnnounced(direction: 'sent' | 'received'): void {
    this.m.activityAnnouncements.labels({ direction }).inc();
  }

  blockLearned(outcome: string, why?: string): void {
    this.m.blocksLearned.labels({ outcome }).inc();
    if (why !== undefined) this.logger.debug({ outcome, why }, 'block learning voided');
  }

  activityUpstreamRequest(source: 'learner' | 'watcher'): void {
    this.m.activityUpstreamRequests.labels({ source }).inc();
  }

  ownUpstreamRequest(purpose: OwnPurpose): void {
    this.m.ownUpstreamRequests.labels({ purpose }).inc();
  }

  warmRequest(kind: 'block' | 'transactions' | 'hot', outcome: string): void {
    this.m.warmRequests.labels({ kind, outcome }).inc();
  }

  upstreamAnswered(upstream: string, route: string, status: number, seconds: number, failure?: { kind: string; message: string }): void {
    this.upstreamRequests(upstream, route, String(status)).inc();
    this.upstreamDurations(upstream, route).observe(seconds);
    if (!failure) return;
    // A handler's refusal of one input (a JSON 500 or 4xx) is an answer, not an upstream error.
    this.upstreamErrors(upstream, failure.kind).inc();
    this.status.upstreamFailed(upstream, route, failure);
    this.logger.debug({ upstream, route, status, kind: failure.kind, err: failure.message }, 'upstream request failed');
  }

  upstreamFailed(upstream: string, route: string, error: { kind: string; message: string }): void {
    this.upstreamRequests(upstream, route, 'error').inc();
    this.upstreamErrors(upstream, error.kind).inc();
    this.status.upstreamFailed(upstream, route, error);
    this.logger.debug({ upstream, route, kind: error.kind, err: error.message }, 'upstream request failed');
  }

  upstreamRetried(upstream: string, route: string, reason: string): void {
    this.upstreamRetries(route, reason).inc();
    this.logger.debug({ route, upstream, reason }, 'retrying upstream request');
  }

  breakerChanged(upstream: string, state: 'open' | 'closed', failures?: readonly BreakerFailure[]): void {
    this.m.upstreamBreakerOpen.set({ upstream }, state === 'open' ? 1 : 0);
    if (state === 'closed') {
      this.logger.warn({ upstream, state }, 'upstream circuit breaker closed');
      return;
    }
    // Why it opened, in the line itself: the kinds and routes in the message (for a plain reader),
    // each failure's own words in `failures` (bounded by health.ts: failureThreshold of them, cut).
    const opened = failures && failures.length > 0 ? { upstream, state, failures } : { upstream, state };
    this.logger.warn(opened, breakerOpenedMessage(failures ?? []));
  }

  lagChanged(upstream: string, lagging: boolean, lagBlocks: number): void {
    this.logger.warn({ upstream, lagging, lagBlocks }, lagging ? 'upstream lags the best tip: not read from' : 'upstream caught up');
  }

  tipChanged(tip: TipLike): void {
    this.tipChangedAt = this.now();
    this.m.chainTipHeight.set(tip.height);
    this.tipBurnHeights(tip);
    this.tipPollSucceeded();
  }

  tipBurnHeights(tip: TipLike): void {
    this.m.chainTipBurnHeight.set(tip.burnHeight);
    // A new tip's anchor is not read yet: no sample, rather than the previous block's.
    if (tip.anchorBurnHeight !== undefined) this.m.chainTipAnchorBurnHeight.set(tip.anchorBurnHeight);
    else this.m.chainTipAnchorBurnHeight.reset();
  }

  tipPolled(): void {
    this.m.tipPolls.labels({ role: this.tipRole }).inc();
  }

  tipLeading(leading: boolean): void {
    this.tipRole = leading ? 'leader' : 'follower';
    this.m.tipLeader.set(leading ? 1 : 0);
  }

  tipPollSucceeded(): void {
    if (this.tipPollFailing) this.logger.info('chain tip poll recovered');
    this.tipPollFailing = false;
  }

  // Polls run every second: a warning when failures start, not one per poll while they last.
  tipPollFailed(error: unknown): void {
    this.status.tipPollFailed(error);
    if (this.tipPollFailing) this.logger.debug({ err: messageOf(error) }, 'chain tip poll failed');
    else this.logger.warn({ err: messageOf(error) }, 'chain tip poll failing');
    this.tipPollFailing = true;
  }

  reorgDetected(forkHeight: number, from: TipLike, to: TipLike): void {
    this.m.reorgs.inc();
    this.status.reorgDetected(forkHeight, from, to);
    this.logger.warn({ forkHeight, from, to }, 'chain reorg detected');
  }

  tipJumpHeld(upstream: string, believed: TipLike, reported: TipLike): void {
    this.logger.warn({ upstream, believed, reported }, 'chain tip jump not believed until confirmed');
  }

  passthroughAnswered(upstream: string, status: number, seconds: number): void {
    this.upstreamRequests(upstream, 'passthrough', String(status)).inc();
    this.upstreamDurations(upstream, 'passthrough').observe(seconds);
  }

  passthroughFailed(upstream: string, error: { kind: string; message: string }): void {
    this.upstreamRequests(upstream, 'passthrough', 'error').inc();
    this.upstreamErrors(upstream, error.kind).inc();
    this.status.upstreamFailed(upstream, 'passthrough', error);
    this.logger.warn({ upstream, kind: error.kind, err: error.message }, 'passthrough to upstream failed');
  }

  surfaceServed(family: string, change: string, cache: string, cls: string): void {
    this.surfaceRequests(family, change, cache, cls).value++;
  }

  rateLimitDecided(tier: 'anonymous' | 'keyed', result: 'allowed' | 'refused' | 'unknown_key'): void {
    this.rateLimitRequests(tier, result).value++;
  }

  // Like redis_up: a warning when the outage starts, not one per request while it lasts.
  rateLimitFailedOpen(error: unknown): void {
    this.m.rateLimitFailOpen.inc();
    if (this.rateLimitFailing) return;
    this.rateLimitFailing = true;
    this.logger.warn({ err: messageOf(error) }, 'rate-limit budget (redis) unavailable: requests pass unlimited');
  }

  rateLimitRecovered(): void {
    if (!this.rateLimitFailing) return;
    this.rateLimitFailing = false;
    this.logger.info('rate-limit budget (redis) available again: limits apply');
  }

  upstreamWsConnectionChanged(channel: UpstreamWsChannel, open: boolean): void {
    if (open) this.m.upstreamWsConnections.labels({ channel }).inc();
    else this.m.upstreamWsConnections.labels({ channel }).dec();
  }

  // Debug only: an upstream that refuses WebSockets would otherwise log every few seconds for ever.
  upstreamWsReconnected(channel: UpstreamWsChannel): void {
    this.m.upstreamWsReconnects.labels({ channel }).inc();
    this.logger.debug({ channel }, 'upstream WebSocket opening again');
  }

  // An upstream that serves no WebSocket refuses every attempt for as long as the proxy runs: a
  // warning when that starts, debug lines after (the backoff spaces them out to minutes).
  upstreamWsUnavailable(channel: UpstreamWsChannel, origin: string, reason: string, retryInMs: number): void {
    const key = `${channel} ${origin}`;
    const fields = { channel, origin, reason, retryInMs: Math.round(retryInMs) };
    if (this.wsFailing.has(key)) {
      this.logger.debug(fields, 'upstream WebSocket still unavailable');
      return;
    }
    this.wsFailing.add(key);
    this.logger.warn(fields, 'upstream WebSocket unavailable: tried again with backoff; the chain tip is polled meanwhile');
  }

  upstreamWsAvailable(channel: UpstreamWsChannel, origin: string): void {
    if (!this.wsFailing.delete(`${channel} ${origin}`)) return;
    this.logger.info({ channel, origin }, 'upstream WebSocket available again');
  }

  upstreamPushMode(origin: string, mode: PushMode): void {
    this.m.upstreamPushMode.set({ upstream: origin, mode: 'push' }, mode === 'push' ? 1 : 0);
    this.m.upstreamPushMode.set({ upstream: origin, mode: 'poll' }, mode === 'poll' ? 1 : 0);
  }

  pushNotified(origin: string, kind: PushKind): void {
    this.m.pushNotifications.labels({ origin, kind }).inc();
  }

  pushFeedBelieved(origin: string, believed: boolean): void {
    this.m.pushFeedBelieved.set({ origin }, believed ? 1 : 0);
  }

  pushDistrusted(origin: string, reason: string): void {
    this.m.pushDistrusted.labels({ origin, reason }).inc();
    this.logger.warn({ origin, reason }, 'push feed not believed for a while: the tip is polled at chainTip.pollIntervalMs');
  }

  wsClientConnected(channel: WsChannel): void {
    this.m.wsClients.inc({ channel });
  }

  wsClientClosed(channel: WsChannel): void {
    this.m.wsClients.dec({ channel });
  }

  wsSubscriptionsChanged(channel: WsChannel, event: string, delta: 1 | -1): void {
    this.m.wsSubscriptions.inc({ channel, event }, delta);
  }

  wsMessage(channel: WsChannel, direction: 'in' | 'out' | 'upstream_in'): void {
    this.m.wsMessages.labels({ channel, direction }).inc();
  }

  wsClientDropped(channel: WsChannel, reason: string): void {
    this.m.wsClientDrops.labels({ channel, reason }).inc();
    this.logger.debug({ channel, reason }, 'fan-out client dropped over a bound');
  }
}

/** "upstream circuit breaker opened after 3 failures in a row: timeout on block, 5xx on chain_tip, …". */
export function breakerOpenedMessage(failures: readonly BreakerFailure[]): string {
  if (failures.length === 0) return 'upstream circuit breaker opened';
  const named = failures.map((f) => `${f.kind} on ${f.route}`).join(', ');
  return `upstream circuit breaker opened after ${failures.length} ${failures.length === 1 ? 'failure' : 'failures in a row'}: ${named}`;
}
