/**
 * The composition root: builds stores, upstream client, chain-tip tracker, read-through and
 * the app from a validated Config, starts listening, and stops everything in order.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp, type Readiness } from './app.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { createMetrics, type Metrics } from './metrics.js';
import { MemoryStore } from './cache/memory-store.js';
import { RedisStore } from './cache/redis-store.js';
import { TieredStore } from './cache/tiered-store.js';
import { retentionMs, type TtlSettings } from './cache/policy.js';
import { ReadThrough, type ReadThroughDeps } from './cache/read-through.js';
import { TxListReader } from './cache/tx-list.js';
import { UpstreamClient } from './upstream/client.js';
import { ChainTipTracker } from './upstream/chain-tip.js';
import { createPassthrough } from './proxy/passthrough.js';

export interface ProxyServer {
  url: string;
  port: number;
  server: Server;
  metrics: Metrics;
  tracker: ChainTipTracker;
  store: TieredStore;
  close(): Promise<void>;
}

export interface StartOptions {
  logger: Logger;
  now?: () => number;
  /** Skip prom-client's process metrics (tests run many proxies in one process). */
  defaultMetrics?: boolean;
}

function createStores(config: Config, metrics: Metrics, logger: Logger, ttl: TtlSettings): { store: TieredStore; redis?: RedisStore } {
  const storeObserver = {
    onEviction: (tier: 'memory' | 'redis') => metrics.cacheEvictions.inc({ tier }),
    onCommand: (command: string, seconds: number) => metrics.redisCommandDuration.observe({ command }, seconds),
    onDecodeFailure: (tier: 'memory' | 'redis') => metrics.cacheLookups.inc({ tier, class: 'unknown', result: 'error' }),
    onError: (_tier: 'memory' | 'redis', operation: string, error: unknown) =>
      logger.debug({ err: (error as Error).message, operation }, 'redis error'),
  };
  const memory = new MemoryStore({
    maxBytes: config.redis.url ? config.cache.memory.maxBytesWithRedis : config.cache.memory.maxBytes,
    maxEntryBytes: config.cache.memory.maxEntryBytes,
    observer: storeObserver,
  });
  let redis: RedisStore | undefined;
  if (config.redis.url) {
    metrics.redisUp.set(0);
    redis = new RedisStore({
      url: config.redis.url,
      commandTimeoutMs: config.redis.commandTimeoutMs,
      observer: storeObserver,
      onStatus: (up) => {
        metrics.redisUp.set(up ? 1 : 0);
        logger.info({ up }, up ? 'redis connected' : 'redis disconnected');
      },
    });
  }
  const store = new TieredStore(memory, redis, (entry) => retentionMs(entry.cls, ttl), {
    onLookup: (tier, cls, result) => metrics.cacheLookups.inc({ tier, class: cls, result }),
    onError: (tier, operation, error) => logger.warn({ tier, operation, err: (error as Error).message }, 'cache tier error'),
  });
  return { store, redis };
}

function createUpstream(config: Config, metrics: Metrics): UpstreamClient {
  return new UpstreamClient(
    config.upstream,
    {
      onResponse: (upstream, route, status, seconds) => {
        metrics.upstreamRequests.inc({ upstream, route, status: String(status) });
        metrics.upstreamDuration.observe({ upstream, route }, seconds);
        if (status >= 500) metrics.upstreamErrors.inc({ upstream, kind: '5xx' });
      },
      onError: (upstream, route, error) => {
        metrics.upstreamRequests.inc({ upstream, route, status: 'error' });
        metrics.upstreamErrors.inc({ upstream, kind: error.kind });
      },
    },
  );
}

export async function startProxy(config: Config, options: StartOptions): Promise<ProxyServer> {
  const { logger } = options;
  const now = options.now ?? Date.now;
  const metrics = createMetrics({ defaultMetrics: options.defaultMetrics });
  const ttl: TtlSettings = config.cache.ttl;
  const { store, redis } = createStores(config, metrics, logger, ttl);
  const upstream = createUpstream(config, metrics);

  let tipChangedAt = now();
  const tracker = new ChainTipTracker(upstream, { ...config.chainTip, burnConfirmations: config.finality.burnConfirmations }, {
    onTip: (tip) => {
      tipChangedAt = now();
      metrics.chainTipHeight.set(tip.height);
      metrics.chainTipBurnHeight.set(tip.burnHeight);
    },
    onReorg: (record, from, to) => {
      metrics.reorgs.inc();
      logger.warn({ forkHeight: record.forkHeight, from, to }, 'chain reorg detected');
    },
    onError: (error) => logger.warn({ err: (error as Error).message }, 'chain tip poll failed'),
  }, now);

  const readDeps: ReadThroughDeps = {
    store,
    upstream,
    chain: () => tracker.view(),
    ttl,
    keyPrefix: config.cache.keyPrefix,
    staleIfErrorMs: config.cache.staleIfErrorMs,
    now,
    observer: {
      onJoin: (route) => metrics.singleflightJoined.inc({ route }),
      onRevalidation: (result) => metrics.revalidations.inc({ result }),
      onStale: (route, reason, cls) => {
        metrics.staleServed.inc({ route, reason });
        metrics.cacheLookups.inc({ tier: 'memory', class: cls, result: 'stale' });
      },
      onReorgPurge: () => metrics.reorgPurged.inc(),
    },
  };
  const readThrough = new ReadThrough(readDeps);
  const txList = new TxListReader(readDeps, readThrough);

  const readiness = (): Readiness => {
    if (!tracker.tip) return { ready: false, reason: 'chain tip not known yet' };
    const healthy = upstream.candidates().filter((origin) => upstream.isHealthy(origin));
    if (healthy.length === 0) return { ready: false, reason: 'no healthy upstream' };
    return { ready: true, details: { tipHeight: tracker.tip.height, healthyUpstreams: healthy.length } };
  };

  const passthrough = config.passthrough.enabled
    ? createPassthrough({
        target: () => upstream.preferredOrigin(),
        websockets: config.passthrough.websockets,
        timeoutMs: config.server.requestTimeoutMs,
        logger,
      })
    : undefined;

  const app = createApp({
    readThrough,
    txList,
    now,
    logger,
    metrics,
    readiness,
    passthrough,
    beforeScrape: async () => {
      metrics.cacheEntries.set({ tier: 'memory' }, store.memory.entryCount);
      metrics.cacheBytes.set({ tier: 'memory' }, store.memory.byteCount);
      metrics.chainTipAge.set((now() - tipChangedAt) / 1000);
      const shared = await redis?.stats();
      if (shared) {
        metrics.cacheEntries.set({ tier: 'redis' }, shared.keys);
        if (Number.isFinite(shared.bytes)) metrics.cacheBytes.set({ tier: 'redis' }, shared.bytes);
      }
    },
  });

  const server = createServer({ requestTimeout: config.server.requestTimeoutMs }, app);
  if (passthrough && config.passthrough.websockets) server.on('upgrade', passthrough.upgrade);

  await tracker.pollOnce();
  tracker.start();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.server.port, config.server.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.server.host === '0.0.0.0' || config.server.host === '::' ? '127.0.0.1' : config.server.host;

  return {
    url: `http://${host}:${port}`,
    port,
    server,
    metrics,
    tracker,
    store,
    close: async () => {
      await tracker.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await store.close();
      await upstream.close();
    },
  };
}
