/**
 * How many worker processes `server.workers` asks for on this host, and whether the rest of the
 * configuration lets them run side by side. Several workers keep the promise that a stampede on
 * one key costs the upstream one request only through the shared single-flight in Redis
 * (cache/shared-flight.ts): without it each worker would fetch for itself, so that is refused.
 */
import { ConfigError, type Config } from '../config.js';

/** `0` is one worker per core (`cores`: os.availableParallelism()). */
export function workerCount(config: Config, cores: number): number {
  const count = config.server.workers === 0 ? Math.max(1, cores) : config.server.workers;
  if (count <= 1) return 1;
  const missing: string[] = [];
  if (config.redis.url === null) missing.push('redis.url (REDIS_URL) is not set');
  else if (!config.cache.sharedSingleFlight.enabled) missing.push('cache.sharedSingleFlight.enabled is false');
  if (missing.length > 0) {
    throw new ConfigError(
      `invalid configuration:\n  server.workers (WORKERS): ${count} workers need the shared single-flight in Redis, so that a stampede on one key costs the upstream one request: ${missing.join(', ')}`,
    );
  }
  return count;
}
