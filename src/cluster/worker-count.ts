/**
 * How many worker processes `server.workers` asks for on this host, and whether the rest of the
 * configuration lets them run side by side. Several workers keep the promise that a stampede on
 * one key costs the upstream one request through cross-process single-flight: Redis's lock
 * (cache/shared-flight.ts) when redis.url is set, else the primary (worker-flight.ts). With
 * cache.sharedSingleFlight.enabled off each worker would fetch for itself, so that is refused.
 */
import { ConfigError, type Config } from '../config.js';

/** `0` is one worker per core (`cores`: os.availableParallelism()). */
export function workerCount(config: Config, cores: number): number {
  const count = config.server.workers === 0 ? Math.max(1, cores) : config.server.workers;
  if (count <= 1) return 1;
  if (!config.cache.sharedSingleFlight.enabled) {
    throw new ConfigError(
      `invalid configuration:\n  server.workers (WORKERS): ${count} workers need the single-flight across processes, so that a stampede on one key costs the upstream one request: cache.sharedSingleFlight.enabled is false`,
    );
  }
  return count;
}
