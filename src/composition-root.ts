/**
 * The composition root: builds the clock, stores, upstream health and client, chain-tip
 * tracker, readers and the request pipeline from a validated Config, hands the pipeline to the
 * HTTP server (http/server-lifecycle.ts), and stops everything in order. It builds; it does not serve.
 */
import type { RequestListener, Server } from 'node:http';
import { memoryTierBytes, type Config } from './config.js';
import type { Logger } from './logger.js';
import { createTelemetry, type ProxyTelemetry } from './telemetry/prometheus-telemetry.js';
import type { Telemetry } from './telemetry/telemetry.js';
import { MemoryStore } from './cache/memory-store.js';
import { RedisStore } from './cache/redis-store.js';
import { TieredStore } from './cache/tiered-store.js';
import { retentionMs, type TtlSettings } from './cache/policy.js';
import { Decider } from './cache/decider.js';
import { backgroundRefreshCap, ReadPath } from './cache/read-path.js';
import { routeReadSpecs, type RouteReadSpecs } from './cache/route-read-spec.js';
import { SharedFlight, type CrossProcessFlight } from './cache/shared-flight.js';
import { TxListReader } from './cache/tx-list.js';
import { ChainTipTracker } from './chain/tracker.js';
import type { BlockRef, ChainView } from './chain/view.js';
import { systemClock, type Clock } from './clock.js';
import { UpstreamClient } from './upstream/client.js';
import { UpstreamHealth } from './upstream/health.js';
import { upstreamHeadersFor } from './upstream/outgoing-headers.js';
import { createPassthrough } from './http/passthrough.js';
import { CaptureBudget } from './http/broadcast-capture.js';
import { PassthroughClient } from './upstream/passthrough-client.js';
import type { Readiness } from './http/own-endpoints.js';
import { createRequestPipeline, type RequestHandler } from './http/pipeline.js';
import { createSurfaceDispatcher } from './http/surface-dispatch.js';
import type { Passthrough } from './http/passthrough.js';
import { createSurfaceEvidence } from './surface/evidence.js';
import { createEvidenceReads } from './surface/evidence-reads.js';
import type { SurfaceEvidence } from './surface/surface-spec.js';
import { openListeners } from './http/standalone-listeners.js';
import { judgeReadiness } from './http/readiness.js';
import { StopSequence } from './stop-sequence.js';
import { createAdminListener } from './http/admin/admin-listener.js';
import { cacheStats } from './http/admin/cache-stats.js';
import type { StatusReading } from './http/admin/status-endpoints.js';
import { Purger, purgeChannelName } from './cache/purger.js';
import { PurgeCoalescer } from './cache/purge-coalescer.js';
import { RedisPurgeChannel } from './cache/redis-purge-channel.js';
import { ROUTE_BY_ID, ROUTES } from './routes/route-table.js';
import { RedisBudget } from './cache/redis-rate-limit.js';
import { ApiKeyBook } from './limits/api-keys.js';
import { MemoryBudget, type Budget } from './limits/budget.js';
import { TrustedProxies } from './limits/client-identity.js';
import { RateLimiter } from './limits/rate-limiter.js';
import { UPSTREAM_DEPRECATION_WARNING } from './routes/route-spec.js';
import { PrincipalActivity } from './chain/activity.js';
import { BlockLearner, type SharedLearning } from './chain/block-learner.js';
import { MempoolWatcher } from './chain/mempool-watcher.js';
import { ActivityAnnouncements, activityChannelName } from './cache/activity-announcements.js';
import { createBroadcastObserver } from './http/broadcast-observer.js';
import type { BroadcastSink } from './http/passthrough.js';
import { createReadDispatcher } from './http/read-dispatch.js';
import type { SurfaceDispatcher } from './http/surface-dispatch.js';
import type { ServedReadSink } from './http/request-log.js';
import { BlockWarmer } from './live/block-warmer.js';
import { HotUrls } from './live/hot-urls.js';
import { createOwnReads } from './live/own-reads.js';
import type { MempoolPoll, TipRef } from './chain/activity.js';
import { upstreamLinksFor, type UpstreamLinks } from './live/upstream-links.js';
import { PushFeed } from './live/push-feed.js';
import { RedisNotifierFeed } from './live/redis-notifier-feed.js';
import { ClientSlots } from './live/client-bounds.js';
import { createWsRpcFanout, type WsRpcFanout } from './live/ws-rpc-fanout.js';
import { createUpgradeRouter } from './live/upgrade-router.js';
import { createSocketIoFanout, type SocketIoFanout } from './live/socket-io-fanout.js';
import type { UpgradeListener } from './http/server-lifecycle.js';
import type { TipShare } from './cluster/worker-tip-share.js';
import { TipNewsRule } from './chain/tip-news.js';

/** Every part the core builds that the standalone server, the package entry and the tests look at. */
export interface ProxyParts {
  telemetry: ProxyTelemetry;
  tracker: ChainTipTracker;
  /** The push feed (undefined with live.push.enabled off). */
  pushFeed?: PushFeed;
  /** The upstream's Redis change notifier, read (undefined without live.redisNotifier.url). */
  redisNotifier?: RedisNotifierFeed;
  store: TieredStore;
  upstream: UpstreamClient;
  health: UpstreamHealth;
  /** Admin purges: this instance's, and its peers' applied here (purger.counts). */
  purger: Purger;
  /** Settles once this instance hears purges announced by its peers (at once without Redis). */
  purgeChannelSubscribed: Promise<void>;
  /** Principals' activity (broadcasts, learned blocks); undefined with activity.enabled off. */
  activity?: PrincipalActivity;
  /** Broadcast touches shared with the peers over Redis (undefined without Redis or activity). */
  activityAnnouncements?: ActivityAnnouncements;
  /** Bytes held to decode broadcasts, under activity.broadcastCaptureBudgetBytes (undefined with activity off). */
  broadcastCapture?: CaptureBudget;
  /** The mempool watcher (activity.watchMempool with a single upstream), for tests that drive its polls. */
  mempoolWatcher?: MempoolWatcher;
  /** Settles once this instance hears its peers' broadcast touches (at once without Redis). */
  activityChannelSubscribed: Promise<void>;
  /** The JSON-RPC links to the upstreams (issue 16: one per upstream, opened on first use, shared by the push feed and the fan-out). */
  upstreamLinks: UpstreamLinks;
  /** The /extended/v1/ws fan-out; undefined with live.fanout.enabled off (WebSockets are tunnelled). */
  wsFanout?: WsRpcFanout;
  /** The Socket.IO fan-out (live.fanout.enabled), for tests that look at its upstream connection. */
  socketIoFanout?: SocketIoFanout;
}

/**
 * The core: everything built and started (the tip tracker, the feeds), no socket opened. The
 * standalone server (startProxy) listens with it; the package entry (index.ts) mounts it in an app.
 */
export interface ProxyCore extends ProxyParts {
  /**
   * The public request pipeline (http/pipeline.ts). With `next` (a Connect/Express middleware),
   * a request the standalone server would answer with a local 404, or refuse as a target, goes
   * on to `next()` untouched instead, and is neither rate limited nor logged here.
   */
  handle: RequestHandler;
  /** Where WebSocket upgrades go: the fan-out's router, else the passthrough's tunnel; undefined when neither is on. */
  upgrade: UpgradeListener | undefined;
  /** The admin listener's requests: /metrics, /health, /ready with details, the admin API. */
  handleAdmin: RequestListener;
  /** The ordered stop; the standalone server enters its listeners in it. */
  stops: StopSequence;
  /** Stops everything built, in order (stop-sequence.ts); later calls get the same promise. */
  close(): Promise<void>;
}

/** The standalone server: the core and its two listeners (public and admin). */
export interface ProxyServer extends ProxyParts {
  /** A URL clients on this machine can use (a wildcard host becomes 127.0.0.1). */
  url: string;
  /** The public listener's address as configured (http://0.0.0.0:8080 when bound to every interface), for logs. */
  boundUrl: string;
  port: number;
  server: Server;
  /** The admin listener (ADMIN_PORT): /metrics, /health, /ready with details, the admin API. */
  adminUrl: string;
  /** The admin listener's address as configured, for logs. */
  adminBoundUrl: string;
  adminPort: number;
  /** Stops accepting, lets in-flight requests finish (up to server.shutdownGraceMs), closes the rest. */
  close(): Promise<void>;
}

export interface StartOptions {
  logger: Logger;
  /** The one clock every component reads (tests move it); the system clock by default. */
  now?: Clock;
  /** Skip prom-client's process metrics (tests run many proxies in one process). */
  defaultMetrics?: boolean;
  /**
   * Single-flight across processes when there is no Redis to hold it: a worker of worker mode
   * passes the one through its primary (cluster/worker-flight.ts). With Redis, Redis's is used.
   */
  crossProcessFlight?: (telemetry: Telemetry) => CrossProcessFlight;
  /**
   * Worker mode: one tip poll and push feed per host (cluster/worker-tip-share.ts). This process
   * follows the tip leader's news until the primary makes it the leader. Without it (a single
   * process) it polls on the interval and follows the push feed itself.
   */
  tipShare?: TipShare;
  /**
   * Worker mode: one block learner per host (cluster/worker-block-learning.ts): the tip leader
   * learns each block, the other workers take its word. `detach` when the core stops.
   */
  blockLearning?: SharedLearning & { detach(): void };
}

/**
 * A follower's own tip poll, for news the leader could not send (a notice lost, the leader dead
 * before the primary designates another): the cadence a worker with a believed push feed polls
 * at anyway (live.push.crossCheckIntervalMs), never more often than chainTip.pollIntervalMs.
 */
export function followerPollIntervalMs(config: Config): number {
  return Math.max(config.live.push.crossCheckIntervalMs, config.chainTip.pollIntervalMs);
}

/**
 * How long the believed tip may go without an answered tip poll showing it before learned
 * freshness stops vouching (activity.ts `watchMs`): the longest interval a working tracker polls
 * at in any mode (a believed push feed's cross-check, a worker follower's own poll, or
 * chainTip.pollIntervalMs), plus the time one poll may take to answer.
 */
export function tipWatchMs(config: Config): number {
  return followerPollIntervalMs(config) + config.chainTip.pollTimeoutMs;
}

function createStores(config: Config, telemetry: Telemetry, ttl: TtlSettings, clock: Clock) {
  const memory = new MemoryStore({
    maxBytes: memoryTierBytes(config),
    maxEntryBytes: config.cache.memory.maxEntryBytes,
    now: clock,
    telemetry,
  });
  const redis = config.redis.url
    ? new RedisStore({ url: config.redis.url, commandTimeoutMs: config.redis.commandTimeoutMs, autoPipelining: config.redis.autoPipelining, telemetry })
    : undefined;
  const store = new TieredStore(memory, redis, (entry) => retentionMs(entry.cls, ttl), telemetry);
  return { store, redis };
}

function createUpstream(config: Config, telemetry: Telemetry, clock: Clock): { upstream: UpstreamClient; health: UpstreamHealth } {
  const origins = config.upstream.urls.map((url) => new URL(url).origin);
  const health = new UpstreamHealth(origins, config.upstream, clock, telemetry);
  const upstream = new UpstreamClient(config.upstream, health, clock, telemetry);
  return { upstream, health };
}

/**
 * The admin listener's parts (issue 9): the purger (with its channel to the other instances
 * when Redis is shared) and the listener's request handler. Logs once whether the admin API is on.
 */
function createAdmin(
  config: Config,
  parts: {
    logger: Logger;
    telemetry: ProxyTelemetry;
    readiness: () => Readiness;
    store: TieredStore;
    redis: RedisStore | undefined;
    tracker: ChainTipTracker;
    upstream: UpstreamClient;
    clock: Clock;
    pushModes: () => StatusReading['pushModes'];
  },
) {
  const { logger, telemetry, store, redis, tracker } = parts;
  const keyPrefix = config.cache.keyPrefix;
  const purger = new Purger({ memory: store.memory, redis, keyPrefix, telemetry });
  // A storm of admin purges is carried out at most once per window (purge-coalescer.ts).
  const coalescer = new PurgeCoalescer({ apply: (selector) => purger.purge(selector), coalesceMs: config.cache.purge.coalesceMs, telemetry });
  const channel =
    config.redis.url === null
      ? undefined
      : new RedisPurgeChannel({
          url: config.redis.url,
          commandTimeoutMs: config.redis.commandTimeoutMs,
          channel: purgeChannelName(keyPrefix),
          onMessage: (message) => purger.applyAnnouncement(message),
          telemetry,
        });
  if (config.admin.token === null) logger.warn('admin API off: admin.token (ADMIN_TOKEN) is not set (/admin/* answers 404)');
  const handleRequest = createAdminListener({
    logger,
    telemetry,
    readiness: parts.readiness,
    token: config.admin.token,
    keyPrefix,
    purge: (selector) => coalescer.purge(selector),
    lookup: async (key) => (await store.get(key))?.entry,
    stats: async () =>
      cacheStats({
        memory: { entries: store.memory.entryCount, bytes: store.memory.byteCount },
        redis: redis ? ((await redis.stats()) ?? 'unavailable') : undefined,
        lookups: await telemetry.lookupCounts(),
        tip: tracker.tip,
        chain: tracker.view(),
        purges: { ...purger.counts },
      }),
    // The status page (GET / and /status.json, no token): read on each refresh.
    clock: parts.clock,
    readStatus: async () => ({
      tip: tracker.tip,
      chain: tracker.view(),
      upstreams: parts.upstream.status(),
      counts: await telemetry.statusCounts(),
      memory: {
        entries: store.memory.entryCount,
        bytes: store.memory.byteCount,
        maxBytes: memoryTierBytes(config),
        maxEntryBytes: config.cache.memory.maxEntryBytes,
      },
      redis: redis ? ((await redis.stats()) ?? 'unavailable') : undefined,
      purges: { ...purger.counts },
      live: { push: config.live.push.enabled, fanout: config.live.fanout.enabled },
      pushModes: parts.pushModes(),
    }),
  });
  return { purger, channel, handleRequest };
}

/** Push off: every upstream is polled, and says so. */
const PUSH_OFF = { mode: 'poll', reason: 'push feed off (live.push.enabled)' } as const;

/**
 * Each upstream's push mode for the status page: the push feed's word where it follows the tip
 * (not in a worker that is not the tip leader: its feed never starts), or push off.
 */
function pushModesOf(config: Config, origins: readonly string[], pushFeed: PushFeed | undefined): StatusReading['pushModes'] {
  const modes: Record<string, StatusReading['pushModes'][string]> = {};
  for (const origin of origins) {
    const mode = config.live.push.enabled ? pushFeed?.mode(origin) : PUSH_OFF;
    if (mode) modes[origin] = mode;
  }
  return modes;
}

/**
 * Principal activity (issue 15): the registry the policy reads through the chain view, the block
 * learner on the tracker's new tips, the broadcast observer the passthrough tells, and, with
 * Redis, the channel on which the instances share broadcast touches.
 */
function createActivity(
  config: Config,
  parts: {
    tracker: ChainTipTracker;
    upstream: UpstreamClient;
    redis: RedisStore | undefined;
    clock: Clock;
    telemetry: Telemetry;
    /** The warm-up's hook for a block's transaction ids. */
    onTransactions: (tip: TipRef, txIds: unknown[]) => void;
    /** Worker mode: each poll of this worker's mempool watcher (it runs on the tip leader only) goes to the followers too. */
    relayMempoolPoll?: (poll: MempoolPoll) => void;
    /** Worker mode: blocks are learned by the tip leader for the host. */
    sharedLearning?: SharedLearning;
  },
) {
  const settings = config.activity;
  if (!settings.enabled) return undefined;
  const { tracker, upstream, redis, clock, telemetry, onTransactions, relayMempoolPoll, sharedLearning } = parts;
  // With several upstreams a lagging one (within upstream.maxLagBlocks) may answer a read.
  const single = config.upstream.urls.length === 1;
  const activity = new PrincipalActivity({ ...settings, lagBlocks: single ? 0 : config.upstream.maxLagBlocks, watchMs: tipWatchMs(config) });
  tracker.attachActivity(activity);
  // Each answered poll that shows the believed tip: the chain is watched (what learned freshness leans on).
  tracker.onPolled((_origin, tip) => activity.tipPolled(tip.indexBlockHash, clock()));
  if (settings.learnBlocks) {
    const learner = new BlockLearner({
      source: upstream,
      activity,
      settings: { maxTxPages: settings.learnerMaxTxPages, maxEventRequests: settings.learnerMaxEventRequests },
      clock,
      telemetry,
      onTransactions,
      shared: sharedLearning,
    });
    tracker.onNewTip((tip, origin, reorg) => learner.onTip(tip, origin, reorg));
  }
  // The watcher vouches for the mempool of the upstream it polls: only when that one answers every read.
  const watcher =
    settings.watchMempool && single
      ? new MempoolWatcher({
          source: upstream,
          origin: new URL(config.upstream.urls[0] as string).origin,
          activity: relayMempoolPoll
            ? {
                mempoolPolled: (poll) => {
                  activity.mempoolPolled(poll);
                  relayMempoolPoll(poll);
                },
              }
            : activity,
          intervalMs: config.chainTip.pollIntervalMs,
          maxPages: settings.watcherMaxPages,
          clock,
          telemetry,
        })
      : undefined;
  const keyPrefix = config.cache.keyPrefix;
  const announcements = redis
    ? new ActivityAnnouncements({ activity, publish: (channel, message) => redis.publish(channel, message), keyPrefix, clock, telemetry })
    : undefined;
  const channel =
    config.redis.url === null || !announcements
      ? undefined
      : new RedisPurgeChannel({
          url: config.redis.url,
          commandTimeoutMs: config.redis.commandTimeoutMs,
          channel: activityChannelName(keyPrefix),
          onMessage: (message) => announcements.apply(message),
          telemetry,
        });
  const broadcasts: BroadcastSink = createBroadcastObserver({
    activity,
    clock,
    telemetry,
    announce: announcements ? (principals) => announcements.announce(principals) : undefined,
  });
  const captureBudget = new CaptureBudget(settings.broadcastCaptureBudgetBytes);
  return { activity, announcements, channel, broadcasts, captureBudget, watcher };
}

/** Rate limits (issue 9): with Redis one budget shared by every instance, else this process's own. */
function createRateLimiter(config: Config, telemetry: Telemetry, clock: Clock, logger: Logger): { limiter: RateLimiter; budget: Budget } | undefined {
  const settings = config.rateLimit;
  if (!settings.enabled) {
    if (config.apiKeys.length > 0)
      logger.warn({ keys: config.apiKeys.length }, 'API keys loaded but rateLimit.enabled is false: keys are not checked and nothing is limited');
    return undefined;
  }
  logger.info({ keys: config.apiKeys.length, budget: config.redis.url ? 'redis (shared)' : 'memory (per process)' }, 'rate limits on');
  const budget: Budget = config.redis.url
    ? new RedisBudget({
        url: config.redis.url,
        commandTimeoutMs: config.redis.commandTimeoutMs,
        autoPipelining: config.redis.autoPipelining,
        keyPrefix: config.cache.keyPrefix,
        windowMs: settings.windowMs,
      })
    : new MemoryBudget(settings.windowMs, settings.maxTrackedClients);
  const limiter = new RateLimiter({
    settings,
    keys: new ApiKeyBook(config.apiKeys),
    trustedProxies: new TrustedProxies(settings.trustedProxies),
    budget,
    now: clock,
    telemetry,
  });
  return { limiter, budget };
}

/**
 * The wider read surface (issue 15): route families served through the same read path, on the
 * paths the passthrough may forward (it is off with the passthrough: the operator wanted the 13
 * routes only). Evidence for final answers comes from the 13 routes' reads (surface/evidence.ts).
 */
function createSurface(
  config: Config,
  parts: {
    readPath: ReadPath;
    readSpecs: RouteReadSpecs;
    chain: () => ChainView;
    passthrough: Passthrough;
    telemetry: Telemetry;
    logger: Logger;
    now: Clock;
    servedRead: ServedReadSink | undefined;
  },
): SurfaceDispatcher {
  const keyPrefix = config.cache.keyPrefix;
  const evidence: SurfaceEvidence = createSurfaceEvidence(
    createEvidenceReads({ readPath: parts.readPath, readSpecs: parts.readSpecs, keyPrefix, chain: parts.chain, evidence: () => evidence }),
  );
  return createSurfaceDispatcher({
    reader: parts.readPath,
    evidence,
    chain: parts.chain,
    keyPrefix,
    maxPostBodyBytes: config.surface.maxPostBodyBytes,
    allows: (path) => parts.passthrough.allows(path),
    telemetry: parts.telemetry,
    logger: parts.logger,
    now: parts.now,
    servedRead: parts.servedRead,
  });
}

/**
 * The WebSocket fan-out (issue 16): clients' /extended/v1/ws subscriptions held on the shared
 * link to the healthiest upstream, behind the upgrade router (same target decision and
 * admission as a tunnel, and a client slot). Off: upgrades go to the passthrough's tunnel as before.
 */
function createFanout(
  config: Config,
  parts: {
    links: UpstreamLinks;
    preferredOrigin: () => string;
    passthroughUpgrade?: UpgradeListener;
    socketIoUpgrade?: UpgradeListener;
    slots: ClientSlots;
    rateLimiter?: RateLimiter;
    telemetry: Telemetry;
    clock: Clock;
  },
): { rpc: WsRpcFanout; upgrade: UpgradeListener } {
  const settings = config.live.fanout;
  const rpc = createWsRpcFanout({
    links: parts.links,
    preferredOrigin: parts.preferredOrigin,
    maxSubscriptionsPerClient: settings.maxSubscriptionsPerClient,
    maxMessagesPerSecondPerClient: settings.maxMessagesPerSecondPerClient,
    maxBufferedBytesPerClient: settings.maxBufferedBytesPerClient,
    telemetry: parts.telemetry,
    clock: parts.clock,
  });
  const upgrade = createUpgradeRouter({
    rpc: (req, socket, head) => rpc.upgrade(req, socket, head),
    socketIo: parts.socketIoUpgrade,
    fallback: parts.passthroughUpgrade,
    slots: parts.slots,
    rateLimiter: parts.rateLimiter,
    telemetry: parts.telemetry,
  });
  return { rpc, upgrade };
}

/**
 * The warm-up of a new block (issue 16, live.warm): what clients asked under the recent tips
 * (HotUrls, told by the request records), and the warmer on the tracker's new tips, reading
 * through the same dispatchers as clients (own-reads.ts). Undefined with live.warm.enabled off:
 * nothing is recorded or read.
 */
function createWarmUp(config: Config, tracker: ChainTipTracker) {
  const settings = config.live.warm;
  if (!settings.enabled) return undefined;
  const hot = new HotUrls(settings.hotUrls, () => tracker.tip);
  const servedRead: ServedReadSink | undefined = settings.hotUrls > 0 ? (req) => hot.record(req) : undefined;
  let warmer: BlockWarmer | undefined;
  return {
    servedRead,
    /** The block learner's ids of a block's transactions, once the warmer runs. */
    onTransactions: (tip: TipRef, txIds: unknown[]) => warmer?.transactionsOf(tip, txIds),
    start(parts: {
      reads: ReturnType<typeof createReadDispatcher>;
      surface: SurfaceDispatcher | undefined;
      upstream: UpstreamClient;
      telemetry: Telemetry;
    }): BlockWarmer {
      // Room for a read no client waits for: nothing queued, half the slots free.
      const idleBelow = Math.max(1, Math.floor(config.upstream.maxConcurrent / 2));
      warmer = new BlockWarmer({
        settings,
        hot,
        read: createOwnReads({ reads: parts.reads, surface: parts.surface }),
        upstreamIdle: () => parts.upstream.status().some((u) => u.usable && u.queued === 0 && u.inFlight < idleBelow),
        learnsTransactions: config.activity.enabled && config.activity.learnBlocks,
        telemetry: parts.telemetry,
      });
      const started = warmer;
      tracker.onNewTip((tip) => started.onTip(tip));
      return started;
    },
  };
}

/**
 * Builds the core and starts it (a first tip poll, then the tracker and the feeds), opening no
 * socket of its own. Each part is entered in the ordered stop as it is built, so a start-up that
 * fails part-way stops what it had built before the error is thrown.
 */
export async function createProxyCore(config: Config, options: StartOptions): Promise<ProxyCore> {
  const stops = new StopSequence();
  try {
    return await assembleCore(config, options, stops);
  } catch (error) {
    await stops.run().catch(() => undefined);
    throw error;
  }
}

/**
 * Starts the tip poll on the interval and the feeds (push feed, Redis notifier) of a single
 * process, or of worker mode's tip leader. In worker mode every worker starts as a follower: it
 * polls at the fallback interval and on the leader's news, sends its own news once it leads, and
 * starts the feeds only when the primary makes it the leader.
 */
function startFollowingTheTip(parts: {
  config: Config;
  tracker: ChainTipTracker;
  origins: readonly string[];
  feeds: ReadonlyArray<{ start(): void } | undefined>;
  telemetry: Telemetry;
  tipShare: TipShare | undefined;
  stops: StopSequence;
  now: () => number;
  activity?: Pick<PrincipalActivity, 'recordBroadcast' | 'mempoolPolled'>;
  /** The mempool watcher: one per host, polling on the tip leader (or the single process) only. */
  watcher?: { start(): void };
}): void {
  const { config, tracker, origins, feeds, telemetry, tipShare, stops, watcher } = parts;
  const startFeeds = () => {
    feeds.forEach((feed) => feed?.start());
    // With a push feed it reports each upstream's mode itself; without one, each is polled.
    if (!config.live.push.enabled) for (const origin of origins) telemetry.upstreamPushMode(origin, 'poll');
  };
  if (!tipShare) {
    telemetry.tipLeading(true);
    tracker.start();
    startFeeds();
    watcher?.start();
    return;
  }
  telemetry.tipLeading(false);
  tracker.setIntervalFor(() => followerPollIntervalMs(config));
  tracker.start();
  let stopping = false;
  stops.add('stop-accepting', () => {
    stopping = true;
    tipShare.detach();
  });
  const news = new TipNewsRule();
  tracker.onPolled((origin, tip) => {
    if (news.isNews(origin, tip, tracker.tip)) tipShare.tipNews(origin);
  });
  tipShare.attach({
    lead: () => {
      if (stopping) return;
      telemetry.tipLeading(true);
      // The push feed sets its own intervals when it starts; without it, the configured one.
      tracker.setIntervalFor(() => config.chainTip.pollIntervalMs);
      startFeeds();
      watcher?.start();
      // At once: the previous leader may have died with news it had not sent.
      for (const origin of origins) tracker.pollNow(origin);
    },
    pollNow: (origin) => tracker.pollNow(origin),
    mempool: (principals) => parts.activity?.recordBroadcast(principals, parts.now()),
    mempoolPolled: (poll) => parts.activity?.mempoolPolled(poll),
  });
}

async function assembleCore(config: Config, options: StartOptions, stops: StopSequence): Promise<ProxyCore> {
  const { logger } = options;
  // The one clock: created here, handed to every component that reads wall time.
  const now: Clock = options.now ?? systemClock;
  const telemetry = createTelemetry({
    logger,
    redis: Boolean(config.redis.url),
    defaultMetrics: options.defaultMetrics,
    now,
    accessLog: config.accessLog,
  });
  // A tip entry past tipSafetyMs at the believed tip is served while it is revalidated behind the
  // answer for at most the longest one upstream request may take (policy.ts isRevalidatedBehind).
  const ttl: TtlSettings = { ...config.cache.ttl, revalidateBehindMs: config.upstream.requestDeadlineMs };
  const { store, redis } = createStores(config, telemetry, ttl, now);
  stops.add('stores', () => store.close());
  const { upstream, health } = createUpstream(config, telemetry, now);
  stops.add('connections', () => upstream.close());
  // State gauges are read from their owners once per scrape.
  telemetry.watch({
    cache: async () => ({ memory: { entries: store.memory.entryCount, bytes: store.memory.byteCount }, redis: await redis?.stats() }),
    upstreams: () => upstream.status(),
  });

  const tracker = new ChainTipTracker(upstream, health, { ...config.chainTip, burnConfirmations: config.finality.burnConfirmations }, now, telemetry);
  stops.add('pollers', () => tracker.stop());

  const warmUp = createWarmUp(config, tracker);
  const activity = createActivity(config, {
    tracker,
    upstream,
    redis,
    clock: now,
    telemetry,
    onTransactions: (tip, txIds) => warmUp?.onTransactions(tip, txIds),
    relayMempoolPoll: options.tipShare ? (poll) => options.tipShare?.mempoolPolled(poll) : undefined,
    sharedLearning: options.blockLearning,
  });
  const blockLearning = options.blockLearning;
  if (blockLearning) stops.add('stop-accepting', () => blockLearning.detach());
  if (activity?.watcher) stops.add('pollers', () => activity.watcher?.stop());
  if (activity?.channel) stops.add('channels', () => activity.channel?.close());
  const chain = () => tracker.view();
  const sharedFlight = !config.cache.sharedSingleFlight.enabled
    ? undefined
    : redis
      ? new SharedFlight(
          { lock: redis, lockTtlMs: config.cache.sharedSingleFlight.lockTtlMs, waitMs: config.cache.sharedSingleFlight.waitMs },
          redis,
          now,
          telemetry,
        )
      : options.crossProcessFlight?.(telemetry);
  // THE decision, one for every reader: what may be served now (decider.ts).
  const decider = new Decider({
    clock: now,
    chain,
    ttl,
    stale: { staleIfErrorMs: config.cache.staleIfErrorMs, staleIfErrorMaxBlocks: config.cache.staleIfErrorMaxBlocks },
  });
  const verifyCanonical = (block: BlockRef) => tracker.verifyCanonical(block);
  const readPath = new ReadPath({
    store,
    upstream,
    decider,
    chain,
    sharedFlight,
    clock: now,
    telemetry,
    verifyCanonical,
    maxBackgroundRefreshes: backgroundRefreshCap(config.upstream.maxConcurrent),
  });
  const readSpecs = routeReadSpecs({ keyPrefix: config.cache.keyPrefix, freshEntry: (key) => readPath.freshEntry(key) });
  const txList = new TxListReader({
    store,
    upstream,
    chain,
    decider,
    keyPrefix: config.cache.keyPrefix,
    clock: now,
    // A found member is also the /tx/{id} answer, which carries the deprecation Warning when that route is deprecated.
    transactionHeaders: ROUTE_BY_ID.get('tx_by_id')?.deprecated ? { warning: UPSTREAM_DEPRECATION_WARNING } : {},
    readWhole: (route, request, context) => readPath.read(readSpecs(route, request), undefined, context),
    telemetry,
    verifyCanonical,
  });

  let shuttingDown = false;
  stops.add('refuse', () => (shuttingDown = true));
  const readiness = (): Readiness => judgeReadiness({ shuttingDown, tip: tracker.tip, upstreams: upstream.status() });

  const limits = createRateLimiter(config, telemetry, now, logger);
  if (limits) stops.add('stores', () => limits.budget.close());
  const passthroughClient = new PassthroughClient({
    connectTimeoutMs: config.upstream.connectTimeoutMs,
    answerDeadlineMs: config.passthrough.answerDeadlineMs,
  });
  stops.add('connections', () => passthroughClient.close());
  const passthrough = config.passthrough.enabled
    ? createPassthrough({
        rateLimiter: limits?.limiter,
        target: () => health.preferredOrigin(),
        allowedPrefixes: config.passthrough.allowedPrefixes,
        websockets: config.passthrough.websockets,
        websocketPrefixes: config.passthrough.websocketPrefixes,
        websocketHandshakeTimeoutMs: config.passthrough.websocketHandshakeTimeoutMs,
        websocketIdleTimeoutMs: config.passthrough.websocketIdleTimeoutMs,
        timeoutMs: config.server.requestTimeoutMs,
        client: passthroughClient,
        answerDeadlineMs: config.passthrough.answerDeadlineMs,
        telemetry,
        // The operator's headers (x-api-key, configured per upstream): the same ones reads and
        // tip polls send, on passthrough requests and WebSocket upgrades too.
        operatorHeaders: (origin) => upstreamHeadersFor(origin, config.upstream),
        broadcasts: activity?.broadcasts,
        captureBudget: activity?.captureBudget,
      })
    : undefined;

  const servedRead = warmUp?.servedRead;
  const surface =
    passthrough && config.surface.enabled ? createSurface(config, { readPath, readSpecs, chain, passthrough, telemetry, logger, now, servedRead }) : undefined;

  // The live chain (issue 16): one JSON-RPC link per upstream, shared by the push feed and the
  // fan-out; a link opens on first use, when the push feed or a client needs it.
  const upstreamLinks = upstreamLinksFor(config, telemetry, now);
  stops.add('connections', () => upstreamLinks.close());
  // The clients both fan-outs hold share live.fanout.maxClients.
  const clientSlots = new ClientSlots(config.live.fanout.maxClients);
  const socketIoFanout: SocketIoFanout | undefined = config.live.fanout.enabled
    ? createSocketIoFanout({
        fanout: config.live.fanout,
        reconnectMinMs: config.live.push.reconnectMinMs,
        reconnectMaxMs: config.live.push.reconnectMaxMs,
        stayedUpMs: config.live.push.pingIntervalMs,
        slots: clientSlots,
        origin: () => health.preferredOrigin(),
        operatorHeaders: (origin) => upstreamHeadersFor(origin, config.upstream),
        telemetry,
        logger,
        clock: now,
      })
    : undefined;
  // Fanned-out clients get their Socket.IO disconnect or close frame (1001, going away) before sockets end.
  if (socketIoFanout) stops.add('farewell', () => socketIoFanout.close());
  const fanout = config.live.fanout.enabled
    ? createFanout(config, {
        links: upstreamLinks,
        preferredOrigin: () => health.preferredOrigin(),
        passthroughUpgrade: passthrough?.upgrade,
        socketIoUpgrade: socketIoFanout?.upgrade,
        slots: clientSlots,
        rateLimiter: limits?.limiter,
        telemetry,
        clock: now,
      })
    : undefined;
  if (fanout) stops.add('farewell', () => fanout.rpc.close());

  const handleRequest = createRequestPipeline({
    routes: ROUTES,
    readPath,
    readSpecs,
    txList,
    now,
    logger,
    telemetry,
    readiness,
    passthrough,
    metricsOnPublicPort: config.metrics.onPublicPort,
    rateLimiter: limits?.limiter,
    surface,
    socketIo: socketIoFanout,
    servedRead,
  });
  // The warm-up reads through a dispatcher of its own over the same read path (its plan memo apart).
  const warmer = warmUp?.start({ reads: createReadDispatcher(ROUTES, { readPath, readSpecs, txList, now, logger, telemetry }), surface, upstream, telemetry });
  if (warmer) stops.add('refuse', () => warmer.stop());
  // The push feed starts after the first tip poll, since it compares its notifications with the polls.
  const tipShare = options.tipShare;
  const principalActivity = activity?.activity;
  const pushFeed = config.live.push.enabled
    ? new PushFeed({
        origins: upstream.origins,
        links: upstreamLinks,
        tracker,
        // The leader's pending transactions are the followers' too (only a leader's feed runs).
        activity:
          principalActivity && tipShare
            ? {
                recordBroadcast: (principals, at) => {
                  const named = [...principals];
                  principalActivity.recordBroadcast(named, at);
                  tipShare.mempoolNews(named);
                },
              }
            : principalActivity,
        settings: { ...config.live.push, pollIntervalMs: config.chainTip.pollIntervalMs },
        clock: now,
        telemetry,
      })
    : undefined;
  // The feed closes before the tracker stops: a notification arriving now must not start a poll.
  if (pushFeed) stops.add('stop-accepting', () => pushFeed.close());
  const admin = createAdmin(config, {
    logger,
    telemetry,
    readiness,
    store,
    redis,
    tracker,
    upstream,
    clock: now,
    pushModes: () => pushModesOf(config, upstream.origins, pushFeed),
  });
  if (admin.channel) stops.add('channels', () => admin.channel?.close());

  const notifier = config.live.redisNotifier;
  const redisNotifier =
    notifier.url === null
      ? undefined
      : new RedisNotifierFeed({
          settings: {
            url: notifier.url,
            stream: notifier.stream,
            blockMs: notifier.blockMs,
            retryMinMs: config.live.push.reconnectMinMs,
            retryMaxMs: config.live.push.reconnectMaxMs,
          },
          pollAll: () => upstream.origins.forEach((origin) => tracker.pollNow(origin)),
          telemetry,
        });
  if (redisNotifier) stops.add('pollers', () => redisNotifier.close());

  await tracker.pollOnce();
  startFollowingTheTip({
    config,
    tracker,
    origins: upstream.origins,
    feeds: [pushFeed, redisNotifier],
    telemetry,
    tipShare,
    stops,
    now,
    activity: principalActivity,
    watcher: activity?.watcher,
  });

  return {
    handle: handleRequest,
    // The fan-out's router takes its channels' upgrades and hands the rest to the passthrough,
    // which refuses upgrades off its WebSocket paths (or all, with websockets off).
    upgrade: fanout?.upgrade ?? passthrough?.upgrade,
    handleAdmin: admin.handleRequest,
    stops,
    close: () => stops.run(),
    purger: admin.purger,
    purgeChannelSubscribed: admin.channel?.subscribed ?? Promise.resolve(),
    activity: activity?.activity,
    activityAnnouncements: activity?.announcements,
    activityChannelSubscribed: activity?.channel?.subscribed ?? Promise.resolve(),
    mempoolWatcher: activity?.watcher,
    broadcastCapture: activity?.captureBudget,
    telemetry,
    tracker,
    pushFeed,
    redisNotifier,
    store,
    upstream,
    health,
    upstreamLinks,
    wsFanout: fanout?.rpc,
    socketIoFanout,
  };
}

/**
 * The standalone server: the core, and its two listeners (public and admin) entered in the
 * core's ordered stop. A listener that cannot open (a port taken) stops the whole core before
 * the error, which names the setting, is thrown.
 */
export async function startProxy(config: Config, options: StartOptions): Promise<ProxyServer> {
  const core = await createProxyCore(config, options);
  try {
    const { main, admin } = await openListeners(core, config);
    return {
      ...core,
      url: main.url,
      boundUrl: main.boundUrl,
      port: main.port,
      server: main.server,
      adminUrl: admin.url,
      adminBoundUrl: admin.boundUrl,
      adminPort: admin.port,
      close: core.close,
    };
  } catch (error) {
    await core.close().catch(() => undefined);
    throw error;
  }
}
