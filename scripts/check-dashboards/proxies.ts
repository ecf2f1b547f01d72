/**
 * The two proxy instances the check scrapes, tuned so that a short traffic mix moves every
 * metric: a tiny mempool TTL, a memory tier that evicts, and a peer whose queue overflows.
 */
import { createLogger } from '../../src/logger.js';
import { startProxy, type ProxyServer } from '../../src/composition-root.js';
import { FlightCoordinator, flightLimitsFor } from '../../src/cluster/flight-coordinator.js';
import { isFlightAsk, isFlightDone, type FlightAsk, type FlightDone } from '../../src/cluster/messages.js';
import { WorkerFlight, workerFlightSettingsFor } from '../../src/cluster/worker-flight.js';
import { testConfig } from '../../testkit/index.js';

/** Small enough that the traffic mix expires mempool entries (revalidations, stale serves) quickly. */
export const MEMPOOL_TTL_MS = 250;
export const STALE_WHILE_REVALIDATE_MS = 500;
/** Every upstream request is tried this often: an injected failure must last as many attempts. */
export const MAX_ATTEMPTS = 2;
/** The main instance's admin token: the traffic mix purges through the admin API. */
export const ADMIN_TOKEN = 'check-dashboards-admin-token';
/** A memory tier this small evicts during the traffic mix; Redis behind it keeps hits hits. */
const MEMORY_TIER_BYTES = 64 * 1024;

const SHARED_SETTINGS = {
  chainTip: { pollIntervalMs: 200 },
  upstream: {
    maxAttempts: MAX_ATTEMPTS,
    retryBackoffMs: 5,
    // There is one upstream: an open breaker would fail every read for the cool-down, while the
    // mix injects a few failures in a row on purpose.
    failureThreshold: 50,
  },
  cache: { ttl: { mempoolMs: MEMPOOL_TTL_MS, staleWhileRevalidateMs: STALE_WHILE_REVALIDATE_MS } },
};

/** The instance most panels are about: process metrics on, a memory tier that evicts. */
export async function startMainProxy(upstreamUrl: string, redisUrl: string): Promise<ProxyServer> {
  const config = testConfig({
    upstreamUrls: [upstreamUrl],
    redisUrl,
    overrides: {
      ...SHARED_SETTINGS,
      cache: { ...SHARED_SETTINGS.cache, memory: { maxBytesWithRedis: MEMORY_TIER_BYTES } },
      admin: { token: ADMIN_TOKEN },
      // The mempool watcher would keep the mix's expired mempool entries fresh (policy rule (d)), and
      // the stale-while-revalidate and stale-if-error panels need them served stale: it runs on the
      // peer, which feeds the principal-activity panels.
      activity: { watchMempool: false },
      // The push feed on the upstream's JSON-RPC channel (the traffic mix drops it and mutes it
      // now and then, for the reconnect and distrust panels).
      // The warm-up of each new block (the warm-up panel), and a fan-out whose message rate the
      // traffic mix's hasty client exceeds (the drops panel).
      live: {
        push: { enabled: true, crossCheckIntervalMs: 1_000, distrustMs: 2_000, reconnectMinMs: 50, reconnectMaxMs: 200 },
        warm: { enabled: true },
        fanout: { maxMessagesPerSecondPerClient: 1 },
      },
    },
  });
  // defaultMetrics: the process and Node.js panels need prom-client's default metrics.
  return startProxy(config, { logger: createLogger(config.logLevel), defaultMetrics: true });
}

/**
 * A second instance on the same Redis: shared single-flight waits only happen between
 * instances. Its upstream queue holds one request and one waiter, so a burst is refused (503).
 * It rate-limits with a budget no traffic here exhausts, so the rate-limit panels have data.
 * Default metrics stay off: one process, so they would only repeat the first instance's.
 */
export async function startPeerProxy(upstreamUrl: string, redisUrl: string): Promise<ProxyServer> {
  const config = testConfig({
    upstreamUrls: [upstreamUrl],
    redisUrl,
    overrides: {
      ...SHARED_SETTINGS,
      upstream: { ...SHARED_SETTINGS.upstream, maxConcurrent: 1, maxQueue: 1 },
      rateLimit: { enabled: true, anonymous: { limit: 1_000_000 } },
    },
  });
  return startProxy(config, { logger: createLogger(config.logLevel), defaultMetrics: false });
}

/**
 * An instance as a worker of worker mode without Redis is (src/cluster/worker.ts): its single-flight
 * asks a primary before every upstream fetch, so the primary single-flight panel has data. The
 * primary's own FlightCoordinator runs here in the same process, every message structured-cloned
 * and delivered on a later tick as the cluster's IPC channel would; one worker, so its misses lead.
 */
export async function startWorkerLikeProxy(upstreamUrl: string): Promise<ProxyServer> {
  const config = testConfig({ upstreamUrls: [upstreamUrl], overrides: SHARED_SETTINGS });
  let flight: WorkerFlight | undefined;
  const primary = new FlightCoordinator(flightLimitsFor(config), (_worker, answer) => {
    const copy = structuredClone(answer);
    setImmediate(() => flight?.received(copy));
  });
  const send = (message: FlightAsk | FlightDone): boolean => {
    const copy: unknown = structuredClone(message);
    setImmediate(() => {
      if (isFlightAsk(copy)) primary.ask(0, copy);
      else if (isFlightDone(copy)) primary.done(0, copy);
    });
    return true;
  };
  return startProxy(config, {
    logger: createLogger(config.logLevel),
    defaultMetrics: false,
    crossProcessFlight: (telemetry) => (flight = new WorkerFlight(workerFlightSettingsFor(config), send, telemetry)),
  });
}
