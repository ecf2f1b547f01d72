/**
 * The composition root: builds the clock, stores, upstream health and client, chain-tip
 * tracker, readers and the request pipeline from a validated Config, hands the pipeline to the
 * HTTP server (http/server-lifecycle.ts), and stops everything in order. It builds; it does not serve.
 */
import type { Server } from 'node:http';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { createMetrics, type Metrics } from './metrics.js';
import { MemoryStore } from './cache/memory-store.js';
import { RedisStore } from './cache/redis-store.js';
import { TieredStore } from './cache/tiered-store.js';
import { retentionMs, type TtlSettings } from './cache/policy.js';
import { ReadThrough } from './cache/read-through.js';
import { SharedFlight } from './cache/shared-flight.js';
import { TxListReader } from './cache/tx-list.js';
import type { Tier } from './cache/store.js';
import { ChainTipTracker } from './chain/tracker.js';
import { systemClock, type Clock } from './clock.js';
import { UpstreamClient } from './upstream/client.js';
import { UpstreamHealth } from './upstream/health.js';
import { createPassthrough } from './http/passthrough.js';
import type { Readiness } from './http/own-endpoints.js';
import { createRequestPipeline } from './http/pipeline.js';
import { startHttpServer } from './http/server-lifecycle.js';
import { ROUTE_BY_ID, ROUTES } from './routes/route-table.js';
import { UPSTREAM_DEPRECATION_WARNING } from './routes/route-spec.js';

export interface ProxyServer {
  url: string;
  port: number;
  server: Server;
  metrics: Metrics;
  tracker: ChainTipTracker;
  store: TieredStore;
  upstream: UpstreamClient;
  health: UpstreamHealth;
  /** Stops accepting, lets in-flight requests finish (up to server.shutdownGraceMs), closes the rest. */
  close(): Promise<void>;
}

export interface StartOptions {
  logger: Logger;
  /** The one clock every component reads (tests move it); the system clock by default. */
  now?: Clock;
  /** Skip prom-client's process metrics (tests run many proxies in one process). */
  defaultMetrics?: boolean;
}

function createStores(config: Config, metrics: Metrics, logger: Logger, ttl: TtlSettings, clock: Clock) {
  const storeObserver = {
    onEviction: (tier: Tier) => metrics.cacheEvictions.inc({ tier }),
    onCommand: (command: string, seconds: number) => metrics.redisCommandDuration.observe({ command }, seconds),
    onDecodeFailure: (tier: Tier) => metrics.cacheLookups.inc({ tier, class: 'unknown', result: 'error' }),
    onError: (_tier: Tier, operation: string, error: unknown) => logger.debug({ err: (error as Error).message, operation }, 'redis error'),
  };
  const memory = new MemoryStore({
    maxBytes: config.redis.url ? config.cache.memory.maxBytesWithRedis : config.cache.memory.maxBytes,
    maxEntryBytes: config.cache.memory.maxEntryBytes,
    now: clock,
    observer: storeObserver,
  });
  let redis: RedisStore | undefined;
  if (config.redis.url) {
    metrics.redisUp.set(0);
    let wasUp: boolean | undefined;
    redis = new RedisStore({
      url: config.redis.url,
      commandTimeoutMs: config.redis.commandTimeoutMs,
      observer: storeObserver,
      onStatus: (up) => {
        metrics.redisUp.set(up ? 1 : 0);
        if (up !== wasUp) logger[up ? 'info' : 'warn']({ up }, up ? 'redis connected' : 'redis unavailable: serving from memory and upstream');
        wasUp = up;
      },
    });
  }
  const store = new TieredStore(memory, redis, (entry) => retentionMs(entry.cls, ttl), {
    onLookup: (tier, cls, result) => metrics.cacheLookups.inc({ tier, class: cls, result }),
    onError: (tier, operation, error) => logger.debug({ tier, operation, err: (error as Error).message }, 'cache tier error'),
  });
  return { store, redis };
}

function createUpstream(config: Config, metrics: Metrics, logger: Logger, clock: Clock): { upstream: UpstreamClient; health: UpstreamHealth } {
  const origins = config.upstream.urls.map((url) => new URL(url).origin);
  const health = new UpstreamHealth(origins, config.upstream, clock, {
    onBreaker: (upstream, state) => {
      metrics.upstreamBreakerOpen.set({ upstream }, state === 'open' ? 1 : 0);
      logger.warn({ upstream, state }, state === 'open' ? 'upstream circuit breaker opened' : 'upstream circuit breaker closed');
    },
    onLag: (upstream, lagging, lagBlocks) => {
      logger.warn({ upstream, lagging, lagBlocks }, lagging ? 'upstream lags the best tip: not read from' : 'upstream caught up');
    },
  });
  const upstream = new UpstreamClient(config.upstream, health, clock, {
    onResponse: (upstream, route, status, seconds) => {
      metrics.upstreamRequests.inc({ upstream, route, status: String(status) });
      metrics.upstreamDuration.observe({ upstream, route }, seconds);
      if (status >= 500) metrics.upstreamErrors.inc({ upstream, kind: '5xx' });
    },
    onError: (upstream, route, error) => {
      metrics.upstreamRequests.inc({ upstream, route, status: 'error' });
      metrics.upstreamErrors.inc({ upstream, kind: error.kind });
      logger.debug({ upstream, route, kind: error.kind, err: error.message }, 'upstream request failed');
    },
    onRetry: (route, upstream, reason) => {
      metrics.upstreamRetries.inc({ route, reason });
      logger.debug({ route, upstream, reason }, 'retrying upstream request');
    },
  });
  return { upstream, health };
}

/** Logs tip-poll failures once when they start and once when they stop, not every second. */
function pollErrorLogger(logger: Logger) {
  let failing = false;
  return {
    failed: (error: unknown) => {
      if (!failing) logger.warn({ err: (error as Error).message }, 'chain tip poll failing');
      else logger.debug({ err: (error as Error).message }, 'chain tip poll failed');
      failing = true;
    },
    succeeded: () => {
      if (failing) logger.info('chain tip poll recovered');
      failing = false;
    },
  };
}

export async function startProxy(config: Config, options: StartOptions): Promise<ProxyServer> {
  const { logger } = options;
  // The one clock: created here, handed to every component that reads wall time.
  const now: Clock = options.now ?? systemClock;
  // The collectors read components created below; they only run when metrics are read.
  let tipChangedAt = now();
  const metrics: Metrics = createMetrics({
    defaultMetrics: options.defaultMetrics,
    collect: {
      cache: () => collectCacheGauges(),
      chainTip: () => metrics.chainTipAge.set((now() - tipChangedAt) / 1000),
      upstreams: () => collectUpstreamGauges(),
    },
  });
  const ttl: TtlSettings = config.cache.ttl;
  const { store, redis } = createStores(config, metrics, logger, ttl, now);
  const { upstream, health } = createUpstream(config, metrics, logger, now);

  const collectUpstreamGauges = (): void => {
    for (const u of upstream.status()) {
      metrics.upstreamUp.set({ upstream: u.origin }, u.usable ? 1 : 0);
      metrics.upstreamBreakerOpen.set({ upstream: u.origin }, u.breaker === 'open' ? 1 : 0);
      metrics.upstreamLagBlocks.set({ upstream: u.origin }, u.lagBlocks ?? 0);
      metrics.upstreamInFlight.set({ upstream: u.origin, state: 'active' }, u.inFlight);
      metrics.upstreamInFlight.set({ upstream: u.origin, state: 'queued' }, u.queued);
    }
  };
  // Redis counts its own evictions (maxmemory policy); the counter follows its total.
  let redisEvictionsSeen: number | undefined;
  const collectCacheGauges = async (): Promise<void> => {
    metrics.cacheEntries.set({ tier: 'memory' }, store.memory.entryCount);
    metrics.cacheBytes.set({ tier: 'memory' }, store.memory.byteCount);
    const shared = await redis?.stats();
    if (!shared) return;
    metrics.cacheEntries.set({ tier: 'redis' }, shared.keys);
    if (Number.isFinite(shared.bytes)) metrics.cacheBytes.set({ tier: 'redis' }, shared.bytes);
    if (Number.isFinite(shared.evictedKeys)) {
      // The first reading is a baseline; a Redis restart resets its counter (delta < 0: skip).
      const delta = redisEvictionsSeen === undefined ? 0 : shared.evictedKeys - redisEvictionsSeen;
      metrics.cacheEvictions.inc({ tier: 'redis' }, Math.max(0, delta));
      redisEvictionsSeen = shared.evictedKeys;
    }
  };

  const pollLog = pollErrorLogger(logger);
  const tracker = new ChainTipTracker(
    upstream,
    health,
    { ...config.chainTip, burnConfirmations: config.finality.burnConfirmations },
    now,
    {
      onTip: (tip) => {
        tipChangedAt = now();
        pollLog.succeeded();
        metrics.chainTipHeight.set(tip.height);
        metrics.chainTipBurnHeight.set(tip.burnHeight);
      },
      onReorg: (record, from, to) => {
        metrics.reorgs.inc();
        logger.warn({ forkHeight: record.forkHeight, from, to }, 'chain reorg detected');
      },
      onError: (error) => pollLog.failed(error),
    },
  );

  const chain = () => tracker.view();
  const sharedFlight =
    redis && config.cache.sharedSingleFlight.enabled
      ? new SharedFlight(
          { lock: redis, lockTtlMs: config.cache.sharedSingleFlight.lockTtlMs, waitMs: config.cache.sharedSingleFlight.waitMs },
          redis,
          now,
          { onSharedWait: (route, result) => metrics.sharedFlightWaits.inc({ route, result }) },
        )
      : undefined;
  const onJoin = (route: string) => metrics.singleflightJoined.inc({ route });
  const readThrough = new ReadThrough({
    store,
    upstream,
    chain,
    ttl,
    stale: { staleIfErrorMs: config.cache.staleIfErrorMs, staleIfErrorMaxBlocks: config.cache.staleIfErrorMaxBlocks },
    keyPrefix: config.cache.keyPrefix,
    sharedFlight,
    clock: now,
    observer: {
      onJoin,
      onRevalidation: (result) => metrics.revalidations.inc({ result }),
      onStale: (route, reason, cls) => {
        metrics.staleServed.inc({ route, reason });
        // A stale entry is always in the memory tier by then (shared-tier reads are copied there).
        metrics.cacheLookups.inc({ tier: 'memory', class: cls, result: 'stale' });
      },
      onReorgPurge: () => metrics.reorgPurged.inc(),
    },
  });
  const txList = new TxListReader({
    store,
    upstream,
    chain,
    ttl,
    keyPrefix: config.cache.keyPrefix,
    clock: now,
    // A found member is also the /tx/{id} answer, which carries the deprecation Warning when that route is deprecated.
    transactionHeaders: ROUTE_BY_ID.get('tx_by_id')?.deprecated ? { warning: UPSTREAM_DEPRECATION_WARNING } : {},
    readWhole: (route, request) => readThrough.read(route, request),
    observer: { onJoin },
  });

  let shuttingDown = false;
  const readiness = (): Readiness => {
    if (shuttingDown) return { ready: false, reason: 'shutting down' };
    if (!tracker.tip) return { ready: false, reason: 'chain tip not known yet' };
    const upstreams = upstream.status();
    if (!upstreams.some((u) => u.usable)) return { ready: false, reason: 'no healthy upstream', details: { upstreams } };
    return { ready: true, details: { tipHeight: tracker.tip.height, upstreams } };
  };

  const passthrough = config.passthrough.enabled
    ? createPassthrough({
        target: () => health.preferredOrigin(),
        websockets: config.passthrough.websockets,
        timeoutMs: config.server.requestTimeoutMs,
        logger,
        observer: {
          onResponse: (origin, status, seconds) => {
            metrics.upstreamRequests.inc({ upstream: origin, route: 'passthrough', status: String(status) });
            metrics.upstreamDuration.observe({ upstream: origin, route: 'passthrough' }, seconds);
          },
          onError: (origin) => {
            metrics.upstreamRequests.inc({ upstream: origin, route: 'passthrough', status: 'error' });
            metrics.upstreamErrors.inc({ upstream: origin, kind: 'connect' });
          },
        },
      })
    : undefined;

  const handleRequest = createRequestPipeline({ routes: ROUTES, readThrough, txList, now, logger, metrics, readiness, passthrough });

  await tracker.pollOnce();
  tracker.start();
  const http = await startHttpServer(handleRequest, {
    port: config.server.port,
    host: config.server.host,
    requestTimeoutMs: config.server.requestTimeoutMs,
    shutdownGraceMs: config.server.shutdownGraceMs,
    upgrade: config.passthrough.websockets ? passthrough?.upgrade : undefined,
  });

  const close = async (): Promise<void> => {
    shuttingDown = true;
    // Stop accepting first; the tip poll may take a while to give up on a dead upstream.
    const drained = http.close();
    const trackerStopped = tracker.stop();
    await drained;
    await trackerStopped;
    await store.close();
    await upstream.close();
  };

  return { url: http.url, port: http.port, server: http.server, metrics, tracker, store, upstream, health, close };
}
